/*
 * fuzz_buildmsg.c - the image build's message stream (src/codec/buildmsg.c), what
 * POST /build streams back.
 *
 * Input: a chunking plan (fuzz_common.h), then the reply body. The stream is rendered in
 * one feed (the reference) and in the planned chunks: both must render the same bytes,
 * find the same error (or refusal) and the same image id; the rendered output stays
 * within 4 times the input plus BUILD_RENDER_EXTRA; nothing is rendered after the stream
 * stopped; the partial line never exceeds BUILD_MAX_LINE. The extra bits of the count
 * byte, when set, also build a context archive from the body's first lines as file names
 * and contents (its names are refused or accepted the same way every time).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "codec/buildmsg.h"

typedef struct outcome {
  buf_t out;
  char *error;   /* build_stream_failure's message, or NULL */
  char *image;   /* the image id, or NULL */
} outcome_t;

static void finish(build_stream_t *s, outcome_t *o) {
  FUZZ_CHECK(build_stream_finish(s, &o->out) == 0, "finish ran out of memory");
  FUZZ_CHECK(s->line.len == 0, "a line is left after finish");
  err_t err;
  err_init(&err);
  if (build_stream_failure(s, &err) != 0) o->error = strdup(err.message ? err.message : "");
  err_clear(&err);
  o->image = s->image_id ? strdup(s->image_id) : NULL;
  FUZZ_CHECK(o->image == NULL || strlen(o->image) <= BUILD_MAX_IMAGE_ID, "image id of %zu bytes", strlen(o->image));
  build_stream_free(s);
}

static void check_archive(const uint8_t *data, size_t len) {
  build_file_t files[BUILD_CONTEXT_MAX_FILES + 1];
  char *names[BUILD_CONTEXT_MAX_FILES + 1];
  size_t n = 0, off = 0;
  while (off < len && n < BUILD_CONTEXT_MAX_FILES + 1) {
    const uint8_t *nl = memchr(data + off, '\n', len - off);
    size_t l = nl ? (size_t)(nl - (data + off)) : len - off;
    names[n] = fuzz_strndup(data + off, l);
    files[n] = (build_file_t){.name = names[n], .data = data + off, .len = l, .mode = 0644, .mtime = 1700000000};
    n++;
    off += l + 1;
  }
  int ok = n <= BUILD_CONTEXT_MAX_FILES;
  for (size_t i = 0; i < n && ok; i++) {
    if (!build_context_name_ok(names[i]) || strlen(names[i]) != files[i].len) ok = 0;
    for (size_t k = 0; k < i; k++)
      if (strcmp(names[k], names[i]) == 0) ok = 0;
  }
  buf_t out;
  buf_init(&out, 0);
  err_t err;
  err_init(&err);
  int rc = build_context_archive(files, n, &out, &err);
  /* A name holding a NUL reads as its part before the NUL: still a plain name. */
  if (ok) FUZZ_CHECK(rc == 0, "refused a good context: %s", err.message ? err.message : "");
  if (rc == 0) FUZZ_CHECK(out.len >= 1024 && out.len % 512 == 0, "archive of %zu bytes", out.len);
  else FUZZ_CHECK(out.len == 0 && err_is_set(&err), "a refusal left %zu bytes or no error", out.len);
  err_clear(&err);
  buf_free(&out);
  for (size_t i = 0; i < n; i++) free(names[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_reader_t r = {data, size};
  fuzz_chunks_t plan;
  fuzz_chunks_read(&r, &plan);

  build_stream_t whole;
  outcome_t a = {0};
  build_stream_init(&whole);
  buf_init(&a.out, 0);
  uint8_t *block = fuzz_dup(r.data, r.len);
  FUZZ_CHECK(build_stream_feed(&whole, block, r.len, &a.out) == 0, "feed ran out of memory");
  free(block);
  FUZZ_CHECK(whole.line.len <= BUILD_MAX_LINE, "held a line of %zu bytes", whole.line.len);
  finish(&whole, &a);

  build_stream_t chunked;
  outcome_t b = {0};
  build_stream_init(&chunked);
  buf_init(&b.out, 0);
  size_t off = 0;
  for (int index = 0; off < r.len; index++) {
    size_t n = fuzz_chunk_len(&plan, index, r.len - off);
    if (plan.empty_feeds) FUZZ_CHECK(build_stream_feed(&chunked, (const uint8_t *)"", 0, &b.out) == 0, "empty feed");
    size_t before = b.out.len;
    int stopped = chunked.stopped;
    block = fuzz_dup(r.data + off, n);
    FUZZ_CHECK(build_stream_feed(&chunked, block, n, &b.out) == 0, "feed ran out of memory");
    free(block);
    FUZZ_CHECK(!stopped || b.out.len == before, "rendered after the stream stopped");
    FUZZ_CHECK(chunked.line.len <= BUILD_MAX_LINE, "held a line of %zu bytes", chunked.line.len);
    off += n;
  }
  finish(&chunked, &b);

  FUZZ_CHECK(a.out.len == b.out.len && (a.out.len == 0 || memcmp(a.out.data, b.out.data, a.out.len) == 0),
             "one feed rendered %zu bytes, chunks %zu", a.out.len, b.out.len);
  FUZZ_CHECK((a.error == NULL) == (b.error == NULL), "one feed: %s, chunks: %s", a.error ? a.error : "(none)",
             b.error ? b.error : "(none)");
  if (a.error) FUZZ_CHECK(strcmp(a.error, b.error) == 0, "one feed \"%s\", chunks \"%s\"", a.error, b.error);
  FUZZ_CHECK((a.image == NULL) == (b.image == NULL) && (a.image == NULL || strcmp(a.image, b.image) == 0),
             "image ids differ");
  FUZZ_CHECK(a.out.len <= 4 * r.len + BUILD_RENDER_EXTRA, "rendered %zu bytes from %zu", a.out.len, r.len);

  buf_free(&a.out);
  buf_free(&b.out);
  free(a.error);
  free(b.error);
  free(a.image);
  free(b.image);

  if (plan.extra & 1) check_archive(r.data, r.len);
  return 0;
}
