/*
 * fuzz_engine_reply.c - the engine's HTTP replies as src/engine.c reads them: response
 * headers (API-Version, X-Docker-Container-Path-Stat), the API version check of GET
 * /_ping, error replies (the "message" of a JSON body, or the body's text) and JSON
 * bodies, plus the path stat header's decoding (src/pathstat.c).
 *
 * engine.c is #included so its static functions (the libcurl header and write callbacks,
 * the version parser, the ping completion) run as they do behind libcurl; no transfer is
 * made (stubs_engine.c). The input is a reply as `curl -i` prints it: a status line,
 * header lines, a blank line, the body. A missing or unreadable status line means 500.
 * Each header line (with its CRLF) and the body go to the callbacks in exactly-sized
 * blocks. The reply is then completed twice: as the answer to the ping, and as the
 * answer to an ordinary request.
 */
#include "../../src/engine.c"

#include "fuzz_common.h"
#include "pathstat.h"

static void waiter_fn(engine_waiter_t *w, const err_t *err) {
  int *called = (int *)((char *)w + sizeof(*w));
  (void)err;
  *called += 1;
}

typedef struct waiter_box {
  engine_waiter_t w;
  int called;
} waiter_box_t;

static long parse_status(const uint8_t *data, size_t size) {
  if (size < 12 || memcmp(data, "HTTP/", 5) != 0) return 500;
  const uint8_t *sp = memchr(data, ' ', size < 16 ? size : 16);
  if (sp == NULL || (size_t)(sp - data) + 4 > size) return 500;
  long v = 0;
  for (int i = 1; i <= 3; i++) {
    if (sp[i] < '0' || sp[i] > '9') return 500;
    v = v * 10 + (sp[i] - '0');
  }
  return v;
}

/* Hands the head's lines and the body to the request's libcurl callbacks. */
static void deliver(http_req_t *r, const uint8_t *data, size_t size, long status) {
  const uint8_t *end = data + size;
  const uint8_t *p = data;
  /* The status line, when present, is a header line too for libcurl. */
  while (p < end) {
    const uint8_t *nl = memchr(p, '\n', (size_t)(end - p));
    size_t n = nl ? (size_t)(nl - p) + 1 : (size_t)(end - p);
    uint8_t *line = fuzz_dup(p, n);
    size_t got = on_header((char *)line, 1, n, r);
    free(line);
    FUZZ_CHECK(got == n, "header callback took %zu of %zu", got, n);
    int blank = (n == 2 && p[0] == '\r') || (n == 1 && p[0] == '\n');
    p += n;
    if (blank) break;
  }
  if (p < end) {
    size_t n = (size_t)(end - p);
    uint8_t *body = fuzz_dup(p, n);
    size_t half = n / 2;
    size_t got = on_write((char *)body, 1, half, r);
    if (got == half) got += on_write((char *)body + half, 1, n - half, r);
    free(body);
    FUZZ_CHECK(got == n || r->resp_too_large, "write callback took %zu of %zu", got, n);
  }
  r->status = status;
  r->curl_result = r->resp_too_large ? CURLE_WRITE_ERROR : CURLE_OK;
  r->state = HTTP_DONE;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  long status = parse_status(data, size);
  /* An engine as engine_new leaves it, without a loop (built here: no constructor
   * argument of engine_new is needed for what runs below). */
  engine_t *e = calloc(1, sizeof(*e));
  if (e == NULL) abort();
  e->refs = 1;

  /* As the reply to GET /_ping. */
  http_req_t *ping = http_req_new(e, "GET", "/_ping");
  if (ping == NULL) abort();
  ping->versioned = 0;
  e->ping = ping;
  e->state = ENG_PINGING;
  waiter_box_t box = {{waiter_fn, NULL, 1}, 0};
  e->waiters = &box.w;
  deliver(ping, data, size, status);
  on_ping_done(ping, e); /* frees the request */
  FUZZ_CHECK(box.called == 1, "waiter called %d times", box.called);
  FUZZ_CHECK(e->ping == NULL && e->waiters == NULL, "ping or waiters left");
  if (e->state == ENG_READY) {
    int major = -1, minor = -1;
    char extra = 0;
    FUZZ_CHECK(sscanf(e->api_version, "%d.%d%c", &major, &minor, &extra) == 2, "api version \"%s\"",
               e->api_version);
    FUZZ_CHECK(major > ENGINE_MIN_API_MAJOR || (major == ENGINE_MIN_API_MAJOR && minor >= ENGINE_MIN_API_MINOR),
               "api version %s accepted", e->api_version);
    FUZZ_CHECK(status >= 200 && status < 300, "ready after status %ld", status);
  } else {
    FUZZ_CHECK(e->state == ENG_UNKNOWN, "engine state %d", e->state);
  }

  /* As the reply to an ordinary request (limited to 4 KiB to reach the overflow path). */
  http_req_t *r = http_req_new(e, "GET", "/containers/%s/json", "abc");
  if (r == NULL) abort();
  http_req_set_limit(r, 4096);
  deliver(r, data, size, status);
  err_t err;
  err_init(&err);
  if (http_req_ok(r)) {
    FUZZ_CHECK(http_req_error(r, &err) == 0 && !err_is_set(&err), "error for a good reply");
    json_t *j = http_req_json(r, &err);
    FUZZ_CHECK((j == NULL) == err_is_set(&err), "json %p, error set %d", (void *)j, err_is_set(&err));
    json_decref(j);
  } else {
    FUZZ_CHECK(http_req_error(r, &err) == -1 && err_is_set(&err), "no error for a failed reply");
    FUZZ_CHECK(err.message != NULL && err.code != NULL, "error without message or code");
    char *msg = http_req_engine_message(r);
    free(msg);
  }
  err_clear(&err);
  if (r->path_stat) {
    path_stat_t st;
    if (path_stat_decode(r->path_stat, &st) == 0) path_stat_free(&st);
  }
  http_req_free(r);
  engine_unref(e);
  return 0;
}
