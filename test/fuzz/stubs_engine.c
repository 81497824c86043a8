/*
 * stubs_engine.c - what src/engine.c needs from the event loop, for fuzz_engine_reply.
 *
 * engine.c hands transfers to loop.c (libcurl's multi interface on Node's libuv loop) and
 * prints through trace.c; neither is linked. The harness builds requests and completes
 * them by hand, so nothing is ever added to a loop: those stubs abort. Tracing is off.
 */
#include <stdio.h>
#include <stdlib.h>

#include "loop.h"
#include "trace.h"

int curl_loop_add(curl_loop_t *l, curl_job_t *job) {
  fprintf(stderr, "stubs_engine.c: curl_loop_add called from a fuzz harness\n");
  abort();
}
void curl_loop_remove(curl_loop_t *l, curl_job_t *job) {
  fprintf(stderr, "stubs_engine.c: curl_loop_remove called from a fuzz harness\n");
  abort();
}
void curl_loop_unpause(curl_loop_t *l, curl_job_t *job) {
  fprintf(stderr, "stubs_engine.c: curl_loop_unpause called from a fuzz harness\n");
  abort();
}
int trace_enabled(void) { return 0; }
void trace_event(const char *fmt, ...) { (void)fmt; }
