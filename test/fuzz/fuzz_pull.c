/*
 * fuzz_pull.c - the pull progress stream parser and image reference split (src/pull.c).
 *
 * Input: a chunking plan (fuzz_common.h), then the body of POST /images/create as the
 * engine streams it (one JSON object per line). The stream is parsed in one feed (the
 * reference) and in the planned chunks; both must find the same first error. Then
 * image_ref_split runs on the body's first line: repository and tag are set, and
 * joined back ("repo:tag", or "repo@digest") they give the reference again, except that
 * a reference without a tag gains ":latest".
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "codec/progress.h"

static void check_ref(const char *ref) {
  char *repo = (char *)1, *tag = (char *)1;
  int rc = image_ref_split(ref, &repo, &tag);
  FUZZ_CHECK(rc == 0, "image_ref_split failed on \"%s\"", ref);
  FUZZ_CHECK(repo != NULL && tag != NULL, "image_ref_split left NULLs");
  size_t rl = strlen(repo), tl = strlen(tag), n = strlen(ref);
  const char *at = strchr(ref, '@');
  if (at != NULL) {
    FUZZ_CHECK(rl == (size_t)(at - ref) || (rl < (size_t)(at - ref) && ref[rl] == ':'),
               "\"%s\" split into \"%s\" and \"%s\"", ref, repo, tag);
    FUZZ_CHECK(strcmp(tag, at + 1) == 0, "\"%s\": digest \"%s\"", ref, tag);
  } else if (rl == n) {
    FUZZ_CHECK(strcmp(tag, "latest") == 0, "\"%s\" without a tag got \"%s\"", ref, tag);
  } else {
    FUZZ_CHECK(rl + 1 + tl == n && ref[rl] == ':' && memcmp(ref, repo, rl) == 0 && strcmp(ref + rl + 1, tag) == 0,
               "\"%s\" split into \"%s\" and \"%s\"", ref, repo, tag);
    FUZZ_CHECK(strchr(tag, '/') == NULL, "\"%s\": tag \"%s\" holds a slash", ref, tag);
  }
  free(repo);
  free(tag);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_reader_t r = {data, size};
  fuzz_chunks_t plan;
  fuzz_chunks_read(&r, &plan);

  progress_parser_t whole;
  progress_parser_init(&whole);
  uint8_t *block = fuzz_dup(r.data, r.len);
  progress_parser_feed(&whole, block, r.len);
  free(block);
  progress_parser_finish(&whole);

  progress_parser_t chunked;
  progress_parser_init(&chunked);
  size_t off = 0;
  for (int index = 0; off < r.len; index++) {
    size_t n = fuzz_chunk_len(&plan, index, r.len - off);
    if (plan.empty_feeds) progress_parser_feed(&chunked, (const uint8_t *)"", 0);
    block = fuzz_dup(r.data + off, n);
    progress_parser_feed(&chunked, block, n);
    free(block);
    off += n;
  }
  progress_parser_finish(&chunked);

  FUZZ_CHECK((whole.error == NULL) == (chunked.error == NULL), "one feed found error %s, chunks %s",
             whole.error ? whole.error : "(none)", chunked.error ? chunked.error : "(none)");
  if (whole.error) FUZZ_CHECK(strcmp(whole.error, chunked.error) == 0, "one feed \"%s\", chunks \"%s\"",
                              whole.error, chunked.error);
  FUZZ_CHECK(whole.overlong == chunked.overlong, "overlong %d vs %d", whole.overlong, chunked.overlong);
  FUZZ_CHECK(whole.line.len == 0 && chunked.line.len == 0, "line left after finish");
  progress_parser_free(&whole);
  progress_parser_free(&chunked);

  const uint8_t *nl = memchr(r.data, '\n', r.len);
  char *ref = fuzz_strndup(r.data, nl ? (size_t)(nl - r.data) : r.len);
  check_ref(ref);
  free(ref);
  return 0;
}
