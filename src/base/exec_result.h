/*
 * exec_result.h - the result of one command run in the sandbox, and the bounded
 * head collectors that fill it.
 *
 * Owns: an exec_result_t owns both output buffers.
 * The collectors keep the first `max` bytes of a stream and raise a truncation flag
 * as soon as a byte beyond them arrives, exactly as the original's CLI collector did.
 */
#ifndef SBX_EXEC_RESULT_H
#define SBX_EXEC_RESULT_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

typedef struct head_collector {
  buf_t bytes;
  size_t max;
  int truncated;
} head_collector_t;

typedef struct exec_result {
  int timed_out;
  int exit_code;
  double duration_ms;
  head_collector_t out;
  head_collector_t err;
} exec_result_t;

/* Keeps what fits; never fails for lack of room (it truncates), -1 only on ENOMEM. */
int head_collector_accept(head_collector_t *c, const uint8_t *data, size_t len);

exec_result_t *exec_result_new(size_t max_output_bytes);
void exec_result_free(exec_result_t *r);

#endif
