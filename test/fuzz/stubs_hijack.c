/*
 * stubs_hijack.c - what src/hijack.c needs from libuv and engine.c, for fuzz_hijack.
 *
 * The harness builds a hijack_t by hand in the state it has once the request was written
 * and hands the response to its read callback, so no connection, write or engine call is
 * ever made: all of these abort, except engine_unref, which the harness's cleanup reaches
 * with the NULL engine it set. libuv lives inside Node and is not linked.
 */
#include <stdio.h>
#include <stdlib.h>

#include "addon.h"
#include "engine.h"
#include "trace.h"

#define UNREACHABLE(name)                                                         \
  do {                                                                            \
    fprintf(stderr, "stubs_hijack.c: %s called from a fuzz harness\n", name);     \
    abort();                                                                      \
  } while (0)

void engine_unref(engine_t *e) {
  if (e != NULL) UNREACHABLE("engine_unref");
}
void engine_ref(engine_t *e) { UNREACHABLE("engine_ref"); }
void engine_reset(engine_t *e) { UNREACHABLE("engine_reset"); }
const char *engine_api_version(engine_t *e) { UNREACHABLE("engine_api_version"); }
void engine_cancel_wait(engine_t *e, engine_waiter_t *w) { UNREACHABLE("engine_cancel_wait"); }
const char *engine_display(engine_t *e) { UNREACHABLE("engine_display"); }
const endpoint_t *engine_endpoint(engine_t *e) { UNREACHABLE("engine_endpoint"); }
tls_ctx_t *engine_tls_ctx(engine_t *e, err_t *err) { UNREACHABLE("engine_tls_ctx"); }
uv_loop_t *engine_uv(engine_t *e) { UNREACHABLE("engine_uv"); }
addon_t *engine_addon(engine_t *e) { UNREACHABLE("engine_addon"); }
int engine_when_ready(engine_t *e, engine_waiter_t *w, err_t *err) { UNREACHABLE("engine_when_ready"); }
char *url_escape(const char *s) { UNREACHABLE("url_escape"); }
void trace_event(const char *fmt, ...) { (void)fmt; }
void addon_handle_opened(addon_t *a) { UNREACHABLE("addon_handle_opened"); }
void addon_handle_closed(addon_t *a) { UNREACHABLE("addon_handle_closed"); }

uv_buf_t uv_buf_init(char *base, unsigned int len) { UNREACHABLE("uv_buf_init"); }
int uv_cancel(uv_req_t *req) { UNREACHABLE("uv_cancel"); }
void uv_close(uv_handle_t *handle, uv_close_cb close_cb) { UNREACHABLE("uv_close"); }
void uv_freeaddrinfo(struct addrinfo *ai) { UNREACHABLE("uv_freeaddrinfo"); }
int uv_getaddrinfo(uv_loop_t *loop, uv_getaddrinfo_t *req, uv_getaddrinfo_cb cb, const char *node,
                   const char *service, const struct addrinfo *hints) {
  UNREACHABLE("uv_getaddrinfo");
}
void uv_pipe_connect(uv_connect_t *req, uv_pipe_t *handle, const char *name, uv_connect_cb cb) {
  UNREACHABLE("uv_pipe_connect");
}
int uv_pipe_init(uv_loop_t *loop, uv_pipe_t *handle, int ipc) { UNREACHABLE("uv_pipe_init"); }
int uv_read_start(uv_stream_t *s, uv_alloc_cb alloc_cb, uv_read_cb read_cb) { UNREACHABLE("uv_read_start"); }
int uv_read_stop(uv_stream_t *s) { UNREACHABLE("uv_read_stop"); }
int uv_shutdown(uv_shutdown_t *req, uv_stream_t *handle, uv_shutdown_cb cb) { UNREACHABLE("uv_shutdown"); }
const char *uv_strerror(int err) { UNREACHABLE("uv_strerror"); }
int uv_tcp_connect(uv_connect_t *req, uv_tcp_t *handle, const struct sockaddr *addr, uv_connect_cb cb) {
  UNREACHABLE("uv_tcp_connect");
}
int uv_tcp_init(uv_loop_t *loop, uv_tcp_t *handle) { UNREACHABLE("uv_tcp_init"); }
int uv_tcp_nodelay(uv_tcp_t *handle, int enable) { UNREACHABLE("uv_tcp_nodelay"); }
int uv_write(uv_write_t *req, uv_stream_t *handle, const uv_buf_t bufs[], unsigned int nbufs, uv_write_cb cb) {
  UNREACHABLE("uv_write");
}
