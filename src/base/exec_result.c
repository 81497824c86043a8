/*
 * exec_result.c - head collectors and exec results (see exec_result.h).
 */
#include "base/exec_result.h"

#include <stdlib.h>

static void head_collector_init(head_collector_t *c, size_t max) {
  buf_init(&c->bytes, 0);
  c->max = max;
  c->truncated = 0;
}

int head_collector_accept(head_collector_t *c, const uint8_t *data, size_t len) {
  if (len == 0) return 0;
  if (c->bytes.len >= c->max) {
    c->truncated = 1;
    return 0;
  }
  size_t remaining = c->max - c->bytes.len;
  size_t take = len > remaining ? remaining : len;
  if (take < len) c->truncated = 1;
  return buf_append(&c->bytes, data, take);
}

exec_result_t *exec_result_new(size_t max_output_bytes) {
  exec_result_t *r = calloc(1, sizeof(*r));
  if (r == NULL) return NULL;
  head_collector_init(&r->out, max_output_bytes);
  head_collector_init(&r->err, max_output_bytes);
  return r;
}

void exec_result_free(exec_result_t *r) {
  if (r == NULL) return;
  buf_free(&r->out.bytes);
  buf_free(&r->err.bytes);
  free(r);
}
