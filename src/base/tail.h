/*
 * tail.h - the last N bytes of a stream, in a ring buffer: a managed process's output
 * is kept as a tail of at most maxOutputBytes, whatever it prints.
 *
 * Owns: the ring's allocation (made at the first byte, never larger than the bound).
 */
#ifndef SBX_TAIL_H
#define SBX_TAIL_H

#include <stddef.h>
#include <stdint.h>

typedef struct tail {
  uint8_t *ring;
  size_t cap;   /* the bound */
  size_t start; /* oldest byte */
  size_t len;
  int truncated; /* some byte was dropped */
} tail_t;

void tail_init(tail_t *t, size_t cap);
void tail_free(tail_t *t);
/* Keeps the newest bytes; -1 only when memory runs out. */
int tail_accept(tail_t *t, const uint8_t *data, size_t len);
/* Copies the last min(want, len) bytes (want == SIZE_MAX: all) into a new allocation. */
uint8_t *tail_copy(const tail_t *t, size_t want, size_t *out_len);

#endif
