/*
 * fuzz_hijack.c - the reply to an exec start as src/engine/hijack.c reads it off the
 * upgraded connection, through src/codec/execreply.c: the HTTP response head (status,
 * Content-Type, Content-Length, Transfer-Encoding), then either the multiplexed output
 * stream (101, or 200 from older engines) or the engine's error body (plain or chunked).
 *
 * Input: a chunking plan (fuzz_common.h), then the bytes the engine sends (head and
 * stream). They are read in one piece (the reference) and in the planned pieces, each an
 * exactly-sized heap block, then end of file. Both must give the same output, on the same
 * streams, and the same end (exactly one, nothing after it). The chunked body decoder also
 * runs on its own over the bytes after the head. Each input runs twice: as a multiplexed
 * stream, and raw (a Tty exec, exec_reply_set_raw), where the output must be exactly the
 * bytes after the head, all on stream 1, whatever the pieces.
 */
#include "codec/execreply.h"
#include "codec/httphead.h"
#include "fuzz_common.h"

typedef struct sink {
  buf_t bytes;
  buf_t streams;
  int streaming;
  int ends;
  int failed;
  char *message;
} sink_t;

static void on_stream_cb(void *ud) {
  sink_t *s = ud;
  FUZZ_CHECK(s->streaming == 0 && s->ends == 0, "stream started twice or after the end");
  s->streaming = 1;
}

static int on_output_cb(void *ud, int stream, const uint8_t *data, size_t len) {
  sink_t *s = ud;
  FUZZ_CHECK(s->ends == 0, "output after the end");
  FUZZ_CHECK(s->streaming, "output before the stream started");
  FUZZ_CHECK(stream == 1 || stream == 2, "stream %d", stream);
  FUZZ_CHECK(len > 0, "empty piece");
  if (buf_append(&s->bytes, data, len) != 0) abort();
  for (size_t i = 0; i < len; i++) {
    uint8_t b = (uint8_t)stream;
    if (buf_append(&s->streams, &b, 1) != 0) abort();
  }
  return 0;
}

static const exec_reply_callbacks_t cbs = {on_stream_cb, on_output_cb};

static void end_with(sink_t *s, err_t *err) {
  s->ends++;
  FUZZ_CHECK(s->ends == 1, "end reported %d times", s->ends);
  if (err_is_set(err)) {
    FUZZ_CHECK(err->message != NULL && err->code != NULL, "end with an empty error");
    s->failed = 1;
    s->message = strdup(err->message);
  }
}

/* Feeds the pieces (plan NULL: one piece), then end of file unless the reply ended. */
static void run(sink_t *s, const uint8_t *data, size_t len, const fuzz_chunks_t *plan, int raw) {
  exec_reply_t r;
  exec_reply_init(&r);
  if (raw) exec_reply_set_raw(&r);
  err_t err;
  err_init(&err);
  size_t off = 0;
  int rc = 0;
  for (int index = 0; off < len && rc == 0; index++) {
    size_t n = plan ? fuzz_chunk_len(plan, index, len - off) : len - off;
    if (plan && plan->empty_feeds) {
      rc = exec_reply_feed(&r, (const uint8_t *)"", 0, &cbs, s, &err);
      if (rc != 0) break;
    }
    uint8_t *block = fuzz_dup(data + off, n);
    rc = exec_reply_feed(&r, block, n, &cbs, s, &err);
    free(block);
    off += n;
  }
  FUZZ_CHECK(rc == 0 || rc == 1, "feed returned %d", rc);
  if (rc == 0) exec_reply_eof(&r, &err);
  FUZZ_CHECK(r.state == XR_DONE, "not done after the end (state %d)", (int)r.state);
  end_with(s, &err);
  err_clear(&err);
  exec_reply_free(&r);
}

/* http_dechunk on its own, over a buffer exactly as long as its bytes. */
static void check_dechunk(const uint8_t *data, size_t len) {
  uint8_t *copy = fuzz_dup(data, len);
  buf_t out;
  buf_init(&out, EXEC_REPLY_MAX_ERROR_BODY);
  int rc = http_dechunk(copy, len, EXEC_REPLY_MAX_ERROR_BODY, &out);
  FUZZ_CHECK(rc >= -1 && rc <= 1, "dechunk returned %d", rc);
  FUZZ_CHECK(out.len <= len, "dechunk made %zu bytes from %zu", out.len, len);
  buf_free(&out);
  free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_reader_t r = {data, size};
  fuzz_chunks_t plan;
  fuzz_chunks_read(&r, &plan);
  /* The bytes after the head, when there is one, as a chunked error body. */
  const uint8_t *blank = r.len >= 4 ? memmem(r.data, r.len, "\r\n\r\n", 4) : NULL;
  if (blank != NULL) check_dechunk(blank + 4, r.len - (size_t)(blank + 4 - r.data));
  else check_dechunk(r.data, r.len);

  for (int raw = 0; raw <= 1; raw++) {
    sink_t ref = {0}, got = {0};
    buf_init(&ref.bytes, 0);
    buf_init(&ref.streams, 0);
    buf_init(&got.bytes, 0);
    buf_init(&got.streams, 0);
    run(&ref, r.data, r.len, NULL, raw);
    run(&got, r.data, r.len, &plan, raw);

    FUZZ_CHECK(got.failed == ref.failed, "pieces %s (%s), one read %s (%s)", got.failed ? "failed" : "ended",
               got.message ? got.message : "", ref.failed ? "failed" : "ended", ref.message ? ref.message : "");
    if (ref.failed)
      FUZZ_CHECK(strcmp(got.message, ref.message) == 0, "pieces \"%s\", one read \"%s\"", got.message, ref.message);
    FUZZ_CHECK(got.bytes.len == ref.bytes.len &&
                   (got.bytes.len == 0 || memcmp(got.bytes.data, ref.bytes.data, got.bytes.len) == 0),
               "pieces gave %zu output bytes, one read %zu (or they differ)", got.bytes.len, ref.bytes.len);
    FUZZ_CHECK(got.streams.len == 0 || memcmp(got.streams.data, ref.streams.data, got.streams.len) == 0,
               "streams differ");
    if (raw && ref.streaming && !ref.failed && blank != NULL) {
      /* The head ends at the first blank line: every byte after it is output. */
      size_t after = r.len - (size_t)(blank + 4 - r.data);
      FUZZ_CHECK(ref.bytes.len == after && (after == 0 || memcmp(ref.bytes.data, blank + 4, after) == 0),
                 "raw: %zu output bytes of the %zu after the head", ref.bytes.len, after);
      for (size_t i = 0; i < ref.streams.len; i++)
        FUZZ_CHECK(ref.streams.data[i] == 1, "raw: stream %d", (int)ref.streams.data[i]);
    }
    buf_free(&ref.bytes);
    buf_free(&ref.streams);
    buf_free(&got.bytes);
    buf_free(&got.streams);
    free(ref.message);
    free(got.message);
  }
  return 0;
}
