/*
 * stubs_pull.c - the event-loop side of src/pull.c, never reached by fuzz_pull.
 *
 * pull.c holds the progress parser and image_ref_split next to the pullImage operation,
 * which calls into op.c (N-API promises) and engine.c (libcurl). Linking those would pull
 * in Node's symbols, so the few functions the operation calls are defined here and abort:
 * the harness only calls the pure functions, and a call to any of these is a bug in it.
 */
#include <stdio.h>
#include <stdlib.h>

#include "engine.h"
#include "op.h"

#define UNREACHABLE(name)                                                         \
  do {                                                                            \
    fprintf(stderr, "stubs_pull.c: %s called from a fuzz harness\n", name);       \
    abort();                                                                      \
  } while (0)

void engine_ref(engine_t *e) { UNREACHABLE("engine_ref"); }
void engine_unref(engine_t *e) { UNREACHABLE("engine_unref"); }
http_req_t *http_req_new(engine_t *e, const char *method, const char *path_fmt, ...) {
  UNREACHABLE("http_req_new");
}
void http_req_set_limit(http_req_t *r, size_t max_bytes) { UNREACHABLE("http_req_set_limit"); }
int http_req_start(http_req_t *r, http_done_fn done, void *ud, err_t *err) { UNREACHABLE("http_req_start"); }
void http_req_free(http_req_t *r) { UNREACHABLE("http_req_free"); }
int http_req_ok(const http_req_t *r) { UNREACHABLE("http_req_ok"); }
int http_req_error(const http_req_t *r, err_t *err) { UNREACHABLE("http_req_error"); }
char *url_escape(const char *s) { UNREACHABLE("url_escape"); }
op_t *op_alloc(addon_t *a, const op_vtable_t *vt, size_t size) { UNREACHABLE("op_alloc"); }
void op_discard(op_t *op) { UNREACHABLE("op_discard"); }
void op_resolve(op_t *op) { UNREACHABLE("op_resolve"); }
void op_reject(op_t *op, err_t *err) { UNREACHABLE("op_reject"); }
void op_reject_cancelled(op_t *op) { UNREACHABLE("op_reject_cancelled"); }
void op_release(op_t *op) { UNREACHABLE("op_release"); }
