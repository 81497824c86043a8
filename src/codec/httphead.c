/*
 * httphead.c - HTTP reply pieces read from the engine (see httphead.h).
 */
#include "codec/httphead.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#define MAX_STATUS_LINE 256
#define MAX_HEADER_VALUE (64 * 1024)
#define MAX_MESSAGE_TEXT 1024

static int lower(int c) { return c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c; }
static int is_digit(uint8_t c) { return c >= '0' && c <= '9'; }
static int is_blank(uint8_t c) { return c == ' ' || c == '\t'; }
static int is_space(uint8_t c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f'; }

/* Case-insensitive comparison of n bytes with a NUL-terminated ASCII name. */
static int name_is(const uint8_t *p, size_t n, const char *name) {
  if (strlen(name) != n) return 0;
  for (size_t i = 0; i < n; i++)
    if (lower(p[i]) != lower((unsigned char)name[i])) return 0;
  return 1;
}

size_t http_head_end(const uint8_t *data, size_t len) {
  const uint8_t *end = len >= 4 ? memmem(data, len, "\r\n\r\n", 4) : NULL;
  return end ? (size_t)(end - data) + 4 : 0;
}

long http_head_status(const uint8_t *head, size_t len) {
  const uint8_t *eol = memmem(head, len, "\r\n", 2);
  size_t n = eol ? (size_t)(eol - head) : len;
  if (n > MAX_STATUS_LINE || n < 5 || memcmp(head, "HTTP/", 5) != 0) return -1;
  size_t i = 5, digits = 0;
  while (i < n && is_digit(head[i])) i++, digits++;
  if (digits == 0 || i >= n || head[i] != '.') return -1;
  i++;
  digits = 0;
  while (i < n && is_digit(head[i])) i++, digits++;
  if (digits == 0 || i >= n || head[i] != ' ') return -1;
  i++;
  if (n - i < 3 || !is_digit(head[i]) || !is_digit(head[i + 1]) || !is_digit(head[i + 2])) return -1;
  long status = (head[i] - '0') * 100 + (head[i + 1] - '0') * 10 + (head[i + 2] - '0');
  if (n - i > 3 && head[i + 3] != ' ') return -1;
  return status >= 100 && status <= 599 ? status : -1;
}

/* The value of header `name` (ASCII case-insensitive) in a head, leading blanks skipped,
 * up to the end of its line (*vlen bytes); NULL when absent. Only lines of the head count
 * (the status line is not a header). */
static const uint8_t *http_head_header(const uint8_t *head, size_t len, const char *name, size_t *vlen) {
  const uint8_t *end = head + len;
  const uint8_t *line = memmem(head, len, "\r\n", 2);
  while (line != NULL) {
    line += 2; /* past the previous line's CRLF */
    const uint8_t *eol = memmem(line, (size_t)(end - line), "\r\n", 2);
    const uint8_t *stop = eol ? eol : end;
    const uint8_t *colon = memchr(line, ':', (size_t)(stop - line));
    if (colon != NULL && name_is(line, (size_t)(colon - line), name)) {
      const uint8_t *v = colon + 1;
      while (v < stop && is_blank(*v)) v++;
      *vlen = (size_t)(stop - v);
      return v;
    }
    line = eol;
  }
  return NULL;
}

int http_head_header_is(const uint8_t *head, size_t len, const char *name, const char *prefix) {
  size_t vlen = 0, n = strlen(prefix);
  const uint8_t *v = http_head_header(head, len, name, &vlen);
  if (v == NULL || vlen < n) return 0;
  for (size_t i = 0; i < n; i++)
    if (lower(v[i]) != lower((unsigned char)prefix[i])) return 0;
  return 1;
}

long long http_head_content_length(const uint8_t *head, size_t len) {
  size_t vlen = 0;
  const uint8_t *v = http_head_header(head, len, "Content-Length", &vlen);
  if (v == NULL || vlen == 0) return -1;
  long long n = 0;
  size_t i = 0;
  for (; i < vlen && is_digit(v[i]); i++) {
    if (i >= 18) return -1;
    n = n * 10 + (v[i] - '0');
  }
  if (i == 0) return -1;
  while (i < vlen && is_blank(v[i])) i++;
  return i == vlen ? n : -1;
}

char *http_header_line_value(const uint8_t *line, size_t len, const char *name) {
  const uint8_t *colon = memchr(line, ':', len);
  if (colon == NULL || !name_is(line, (size_t)(colon - line), name)) return NULL;
  const uint8_t *v = colon + 1, *end = line + len;
  while (v < end && is_space(*v)) v++;
  while (end > v && is_space(end[-1])) end--;
  /* Too long, or holding a NUL (not a header value a C string can carry): ignored. */
  if ((size_t)(end - v) > MAX_HEADER_VALUE || memchr(v, 0, (size_t)(end - v)) != NULL) return NULL;
  return strndup((const char *)v, (size_t)(end - v));
}

int http_api_version_parse(const char *text, int *major, int *minor) {
  const char *p = text;
  long a = 0, b = 0;
  int digits = 0;
  for (; is_digit((uint8_t)*p); p++) {
    if (++digits > 2) return -1;
    a = a * 10 + (*p - '0');
  }
  if (digits == 0 || *p != '.') return -1;
  p++;
  digits = 0;
  for (; is_digit((uint8_t)*p); p++) {
    if (++digits > 3) return -1;
    b = b * 10 + (*p - '0');
  }
  if (digits == 0) return -1;
  while (*p != 0 && is_space((uint8_t)*p)) p++;
  if (*p != 0) return -1;
  *major = (int)a;
  *minor = (int)b;
  return 0;
}

static int hex_value(uint8_t c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

int http_dechunk(const uint8_t *in, size_t len, size_t max_chunk, buf_t *out) {
  size_t i = 0;
  buf_reset(out);
  for (;;) {
    /* The size line: hex digits, then an optional extension, then CRLF. */
    size_t size = 0, digits = 0;
    while (i < len && hex_value(in[i]) >= 0) {
      size = size * 16 + (size_t)hex_value(in[i]);
      if (size > max_chunk) return -1;
      i++;
      digits++;
    }
    if (i >= len) return 0;
    if (digits == 0) return -1;
    while (i < len && in[i] != '\r' && in[i] != '\n') i++; /* extension */
    if (i + 1 >= len) return 0;
    if (in[i] != '\r' || in[i + 1] != '\n') return -1;
    i += 2;
    if (size == 0) return 1;
    if (len - i < size + 2) return 0;
    if (in[i + size] != '\r' || in[i + size + 1] != '\n') return -1;
    if (buf_append(out, in + i, size) != 0) return -1;
    i += size + 2;
  }
}

char *http_error_message(const uint8_t *body, size_t len) {
  if (len == 0) return strdup("");
  json_t *j = json_loadb((const char *)body, len, 0, NULL);
  json_t *m = json_object_get(j, "message");
  char *out;
  if (json_is_string(m)) {
    out = strdup(json_string_value(m));
  } else {
    const uint8_t *p = body, *end = body + (len > MAX_MESSAGE_TEXT ? MAX_MESSAGE_TEXT : len);
    while (p < end && is_space(*p)) p++;
    while (end > p && is_space(end[-1])) end--;
    out = strndup((const char *)p, (size_t)(end - p));
  }
  json_decref(j);
  return out;
}
