/*
 * fuzz_engine_reply.c - the engine's HTTP replies as src/engine/engine.c reads them,
 * through the codec it uses (src/codec/httphead.c): each header line as libcurl hands it
 * over (API-Version, X-Docker-Container-Path-Stat), the API version check of GET /_ping,
 * the engine's error text in an error body (the "message" of a JSON body, or the body's
 * text), and the path stat header's decoding (src/codec/pathstat.c).
 *
 * The input is a reply as `curl -i` prints it: a status line, header lines, a blank line,
 * the body. Every header line (with its CRLF) and the body go to the functions in
 * exactly-sized blocks, as libcurl's callbacks receive them.
 */
#include <ctype.h>

#include "codec/httphead.h"
#include "codec/pathstat.h"
#include "fuzz_common.h"

/* What a header value may be: no blank at either end, never longer than its line. */
static void check_value(const char *v, size_t line_len) {
  size_t n = strlen(v);
  FUZZ_CHECK(n <= line_len, "value of %zu bytes from a line of %zu", n, line_len);
  if (n > 0) {
    FUZZ_CHECK(!isspace((unsigned char)v[0]) && !isspace((unsigned char)v[n - 1]), "value \"%s\" not trimmed", v);
  }
}

static void check_version(const char *v) {
  int major = -1, minor = -1;
  if (http_api_version_parse(v, &major, &minor) != 0) return;
  int m2 = -1, n2 = -1;
  char extra = 0;
  FUZZ_CHECK(sscanf(v, "%d.%d%c", &m2, &n2, &extra) >= 2 && m2 == major && n2 == minor, "version \"%s\" read as %d.%d",
             v, major, minor);
  FUZZ_CHECK(major >= 0 && major <= 99 && minor >= 0 && minor <= 999, "version %d.%d out of range", major, minor);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const uint8_t *end = data + size;
  const uint8_t *p = data;
  /* The head, line by line (the status line is a header line for libcurl too). */
  while (p < end) {
    const uint8_t *nl = memchr(p, '\n', (size_t)(end - p));
    size_t n = nl ? (size_t)(nl - p) + 1 : (size_t)(end - p);
    uint8_t *line = fuzz_dup(p, n);
    char *v = http_header_line_value(line, n, "API-Version");
    if (v != NULL) {
      check_value(v, n);
      check_version(v);
      free(v);
    }
    v = http_header_line_value(line, n, "X-Docker-Container-Path-Stat");
    if (v != NULL) {
      check_value(v, n);
      path_stat_t st;
      if (path_stat_decode(v, &st) == 0) path_stat_free(&st);
      free(v);
    }
    free(line);
    int blank = (n == 2 && p[0] == '\r') || (n == 1 && p[0] == '\n');
    p += n;
    if (blank) break;
  }
  /* The body, as an error reply's. */
  uint8_t *body = fuzz_dup(p, (size_t)(end - p));
  char *msg = http_error_message(body, (size_t)(end - p));
  FUZZ_CHECK(msg != NULL, "no message");
  free(msg);
  free(body);
  /* The version parser on the whole input as one string. */
  char *text = fuzz_strndup(data, size);
  check_version(text);
  free(text);
  return 0;
}
