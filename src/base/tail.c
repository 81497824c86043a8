/*
 * tail.c - ring buffer tails (see tail.h).
 */
#include "base/tail.h"

#include <stdlib.h>
#include <string.h>

void tail_init(tail_t *t, size_t cap) {
  memset(t, 0, sizeof(*t));
  t->cap = cap;
}

void tail_free(tail_t *t) {
  free(t->ring);
  t->ring = NULL;
  t->len = t->start = 0;
}

int tail_accept(tail_t *t, const uint8_t *data, size_t len) {
  if (len == 0) return 0;
  if (t->cap == 0) {
    t->truncated = 1;
    return 0;
  }
  if (t->ring == NULL) {
    t->ring = malloc(t->cap);
    if (t->ring == NULL) return -1;
  }
  if (len >= t->cap) {
    if (len > t->cap || t->len > 0) t->truncated = 1;
    memcpy(t->ring, data + (len - t->cap), t->cap);
    t->start = 0;
    t->len = t->cap;
    return 0;
  }
  size_t overflow = t->len + len > t->cap ? t->len + len - t->cap : 0;
  if (overflow > 0) {
    t->start = (t->start + overflow) % t->cap;
    t->len -= overflow;
    t->truncated = 1;
  }
  size_t end = (t->start + t->len) % t->cap;
  size_t first = t->cap - end < len ? t->cap - end : len;
  memcpy(t->ring + end, data, first);
  memcpy(t->ring, data + first, len - first);
  t->len += len;
  return 0;
}

uint8_t *tail_copy(const tail_t *t, size_t want, size_t *out_len) {
  size_t n = want < t->len ? want : t->len;
  uint8_t *out = malloc(n ? n : 1);
  if (out == NULL) return NULL;
  size_t from = (t->start + (t->len - n)) % (t->cap ? t->cap : 1);
  size_t first = t->cap - from < n ? t->cap - from : n;
  if (n) {
    memcpy(out, t->ring + from, first);
    memcpy(out + first, t->ring, n - first);
  }
  *out_len = n;
  return out;
}
