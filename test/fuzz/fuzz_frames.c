/*
 * fuzz_frames.c - the exec stream demultiplexer (src/frames.c).
 *
 * Input: a chunking plan (fuzz_common.h; the count byte's top four bits N make the
 * callback ask to stop on every Nth call, 0 never), then the raw stream as the engine
 * sends it after the HTTP head.
 * The stream is demultiplexed twice: in one feed without stops (the reference), and in
 * the planned chunks, each copied to its own heap block, resuming after every stop from
 * where `consumed` says. Both must hand over the same bytes on the same streams in the
 * same order and end with the same verdict and message; `consumed` must cover the whole
 * feed unless the callback stopped it.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "codec/frames.h"
#include "fuzz_common.h"

typedef struct sink {
  buf_t bytes;   /* every payload byte, in order */
  buf_t streams; /* the stream of each byte */
  unsigned calls;
  unsigned stop_every;
  const uint8_t *lo, *hi; /* the block being fed: pieces must lie inside it */
} sink_t;

static int on_piece(void *ud, int stream, const uint8_t *data, size_t len) {
  sink_t *s = ud;
  FUZZ_CHECK(stream == FRAME_STDOUT || stream == FRAME_STDERR, "callback got stream %d", stream);
  FUZZ_CHECK(len > 0, "callback got an empty piece");
  FUZZ_CHECK(data >= s->lo && data + len <= s->hi, "piece [%p,+%zu) outside the fed block [%p,%p)", (void *)data,
             len, (void *)s->lo, (void *)s->hi);
  if (buf_append(&s->bytes, data, len) != 0) abort();
  for (size_t i = 0; i < len; i++) {
    uint8_t b = (uint8_t)stream;
    if (buf_append(&s->streams, &b, 1) != 0) abort();
  }
  s->calls++;
  return s->stop_every && s->calls % s->stop_every == 0 ? 1 : 0;
}

static void sink_init(sink_t *s, unsigned stop_every) {
  memset(s, 0, sizeof(*s));
  buf_init(&s->bytes, 0);
  buf_init(&s->streams, 0);
  s->stop_every = stop_every;
}

static void sink_free(sink_t *s) {
  buf_free(&s->bytes);
  buf_free(&s->streams);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_reader_t r = {data, size};
  fuzz_chunks_t plan;
  fuzz_chunks_read(&r, &plan);
  const uint8_t *stream = r.data;
  size_t len = r.len;

  /* Reference: everything in one feed, no stops. */
  sink_t ref;
  sink_init(&ref, 0);
  frame_demux_t d;
  frame_demux_init(&d);
  err_t ref_err;
  err_init(&ref_err);
  uint8_t *whole = fuzz_dup(stream, len);
  ref.lo = whole;
  ref.hi = whole + len;
  size_t consumed = (size_t)-1;
  int ref_rc = frame_demux_feed(&d, whole, len, &consumed, on_piece, &ref, &ref_err);
  FUZZ_CHECK(ref_rc == 0 || ref_rc == -1, "feed without stops returned %d", ref_rc);
  FUZZ_CHECK(consumed <= len, "consumed %zu of %zu", consumed, len);
  if (ref_rc == 0) {
    FUZZ_CHECK(consumed == len, "returned 0 after consuming %zu of %zu", consumed, len);
    FUZZ_CHECK(!err_is_set(&ref_err), "returned 0 with an error set");
    ref_rc = frame_demux_finish(&d, &ref_err);
    FUZZ_CHECK(ref_rc == 0 || ref_rc == -1, "finish returned %d", ref_rc);
  }
  FUZZ_CHECK((ref_rc == -1) == err_is_set(&ref_err), "rc %d but error set %d", ref_rc, err_is_set(&ref_err));
  if (ref_rc == -1) FUZZ_CHECK(ref_err.message != NULL && ref_err.code != NULL, "error without message or code");
  free(whole);

  /* The planned chunks, with stops. */
  sink_t got;
  sink_init(&got, plan.extra);
  frame_demux_init(&d);
  err_t got_err;
  err_init(&got_err);
  int got_rc = 0;
  size_t off = 0;
  for (int index = 0; off < len && got_rc == 0; index++) {
    size_t n = fuzz_chunk_len(&plan, index, len - off);
    if (plan.empty_feeds) {
      uint8_t dummy = 0;
      got.lo = &dummy;
      got.hi = &dummy;
      consumed = (size_t)-1;
      int rc = frame_demux_feed(&d, &dummy, 0, &consumed, on_piece, &got, &got_err);
      if (rc == -1) {
        got_rc = -1;
        break;
      }
      FUZZ_CHECK(consumed == 0, "empty feed consumed %zu (rc %d)", consumed, rc);
    }
    uint8_t *block = fuzz_dup(stream + off, n);
    size_t pos = 0;
    while (pos < n) {
      got.lo = block + pos;
      got.hi = block + n;
      consumed = (size_t)-1;
      int rc = frame_demux_feed(&d, block + pos, n - pos, &consumed, on_piece, &got, &got_err);
      FUZZ_CHECK(consumed <= n - pos, "consumed %zu of %zu", consumed, n - pos);
      if (rc == -1) {
        got_rc = -1;
        break;
      }
      FUZZ_CHECK(!err_is_set(&got_err), "returned %d with an error set", rc);
      if (rc == 0) {
        FUZZ_CHECK(consumed == n - pos, "returned 0 after consuming %zu of %zu", consumed, n - pos);
      } else {
        FUZZ_CHECK(rc == 1, "feed returned %d", rc);
        FUZZ_CHECK(consumed > 0, "stopped without consuming the piece it passed");
      }
      pos += consumed;
    }
    free(block);
    off += n;
  }
  if (got_rc == 0) got_rc = frame_demux_finish(&d, &got_err);

  FUZZ_CHECK(got_rc == ref_rc, "chunked verdict %d, one-feed verdict %d", got_rc, ref_rc);
  if (ref_rc == -1)
    FUZZ_CHECK(strcmp(got_err.message, ref_err.message) == 0 && got_err.code == ref_err.code,
               "chunked error \"%s\", one-feed error \"%s\"", got_err.message, ref_err.message);
  FUZZ_CHECK(got.bytes.len == ref.bytes.len, "chunked passed %zu bytes, one feed %zu", got.bytes.len,
             ref.bytes.len);
  FUZZ_CHECK(got.bytes.len == 0 || memcmp(got.bytes.data, ref.bytes.data, got.bytes.len) == 0,
             "chunked and one-feed payloads differ");
  FUZZ_CHECK(got.streams.len == 0 || memcmp(got.streams.data, ref.streams.data, got.streams.len) == 0,
             "chunked and one-feed streams differ");
  FUZZ_CHECK(ref.bytes.len <= len, "more payload (%zu) than input (%zu)", ref.bytes.len, len);

  err_clear(&ref_err);
  err_clear(&got_err);
  sink_free(&ref);
  sink_free(&got);
  return 0;
}
