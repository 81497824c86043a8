/*
 * fuzz_common.h - small helpers shared by the libFuzzer harnesses in this folder.
 *
 * Inputs that need parameters besides the bytes under test take them from a short
 * prefix (see each harness's header comment), so corpus files stay mostly the real bytes
 * captured from the engine or a container. Every slice handed to the code under test is
 * copied into its own exactly-sized heap block first, so AddressSanitizer sees a read
 * one byte past a slice (it would not if the slice stayed inside the fuzzer's buffer).
 */
#ifndef FUZZ_COMMON_H
#define FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A property of the code under test does not hold: print why and crash, so libFuzzer
 * records the input as a crash like any sanitizer report. */
#define FUZZ_CHECK(cond, ...)                                                   \
  do {                                                                          \
    if (!(cond)) {                                                              \
      fprintf(stderr, "FUZZ_CHECK failed at %s:%d: %s\n  ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                             \
      fprintf(stderr, "\n");                                                    \
      abort();                                                                  \
    }                                                                           \
  } while (0)

/* An exactly-sized copy (malloc(0) is avoided: one byte is allocated, none is usable). */
static inline uint8_t *fuzz_dup(const uint8_t *data, size_t len) {
  uint8_t *p = malloc(len ? len : 1);
  if (p == NULL) abort();
  if (len) memcpy(p, data, len);
  return p;
}

/* A NUL-terminated copy of data[0..len) (the copy may hold earlier NULs). */
static inline char *fuzz_strndup(const uint8_t *data, size_t len) {
  char *p = malloc(len + 1);
  if (p == NULL) abort();
  if (len) memcpy(p, data, len);
  p[len] = 0;
  return p;
}

/* Reads from the front of the input; past the end it yields zeros. */
typedef struct fuzz_reader {
  const uint8_t *data;
  size_t len;
} fuzz_reader_t;

static inline uint8_t fuzz_u8(fuzz_reader_t *r) {
  if (r->len == 0) return 0;
  uint8_t v = r->data[0];
  r->data++;
  r->len--;
  return v;
}

/* Splits data[0..len) at the first NUL: the part before it and what follows it. Returns 0
 * when there is no NUL (then *head_len is len and *rest is NULL). */
static inline int fuzz_split_nul(const uint8_t *data, size_t len, size_t *head_len, const uint8_t **rest,
                                 size_t *rest_len) {
  const uint8_t *nul = memchr(data, 0, len);
  if (nul == NULL) {
    *head_len = len;
    *rest = NULL;
    *rest_len = 0;
    return 0;
  }
  *head_len = (size_t)(nul - data);
  *rest = nul + 1;
  *rest_len = len - *head_len - 1;
  return 1;
}

/*
 * Chunking plan for incremental parsers: a count byte (low 3 bits: up to 7 chunk sizes)
 * then that many size bytes (a chunk of 1..256 bytes each); after them the rest of the
 * input goes in one piece. A zero-length feed is inserted before every chunk when bit 3
 * of the count byte is set, since callers may hand over empty reads.
 */
typedef struct fuzz_chunks {
  uint8_t sizes[7];
  int count;
  int empty_feeds;
  uint8_t extra; /* the count byte's top four bits, for the harness's own use */
} fuzz_chunks_t;

static inline void fuzz_chunks_read(fuzz_reader_t *r, fuzz_chunks_t *c) {
  uint8_t b = fuzz_u8(r);
  c->count = b & 7;
  c->empty_feeds = (b >> 3) & 1;
  c->extra = b >> 4;
  for (int i = 0; i < c->count; i++) c->sizes[i] = fuzz_u8(r);
}

/* Length of the next chunk to feed, given how much is left. */
static inline size_t fuzz_chunk_len(const fuzz_chunks_t *c, int index, size_t left) {
  if (index < c->count) {
    size_t n = (size_t)c->sizes[index] + 1;
    return n < left ? n : left;
  }
  return left;
}

#endif
