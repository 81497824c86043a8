/*
 * fuzz_textpage.c - strict UTF-8 validation and text pages (src/textpage.c).
 *
 * Input: three parameter bytes (startLine, lineCount, maxBytes: each maps to a small
 * positive number, or with its top bit set to a large one), then a file's bytes.
 * utf8_valid is compared with a plain reimplementation of the WHATWG UTF-8 decoder's
 * fatal mode. When the text is valid, the page (after any BOM) is compared with a plain
 * reimplementation of the original createTextFilePage (lines = text.match(/[^\n]*\n|
 * [^\n]+$/g), byte cut with a streaming decoder), and the page's content must lie inside
 * the text, fit maxBytes, and be valid UTF-8 itself.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "codec/textpage.h"

/* The WHATWG "UTF-8 decoder" with error mode fatal: 1 when no error is produced. */
static int whatwg_valid(const uint8_t *s, size_t n) {
  unsigned needed = 0, seen = 0;
  uint8_t lower = 0x80, upper = 0xBF;
  for (size_t i = 0; i < n; i++) {
    uint8_t b = s[i];
    if (needed == 0) {
      if (b <= 0x7F) continue;
      if (b >= 0xC2 && b <= 0xDF) needed = 1;
      else if (b >= 0xE0 && b <= 0xEF) {
        if (b == 0xE0) lower = 0xA0;
        if (b == 0xED) upper = 0x9F;
        needed = 2;
      } else if (b >= 0xF0 && b <= 0xF4) {
        if (b == 0xF0) lower = 0x90;
        if (b == 0xF4) upper = 0x8F;
        needed = 3;
      } else {
        return 0;
      }
      continue;
    }
    if (b < lower || b > upper) return 0;
    lower = 0x80;
    upper = 0xBF;
    if (++seen == needed) needed = seen = 0;
  }
  return needed == 0; /* end of stream inside a sequence is an error */
}

typedef struct ref_page {
  size_t content_off, content_len;
  int has_end;
  uint64_t end;
  int has_next;
  uint64_t next;
  int truncated;
  page_trunc_t by;
} ref_page_t;

static void reference_page(const uint8_t *t, size_t len, uint64_t start, uint64_t count, uint64_t max,
                           ref_page_t *out) {
  memset(out, 0, sizeof(*out));
  /* lines: pieces ending in "\n", then a non-empty rest. */
  size_t nlines = 0;
  size_t *starts = malloc((len + 2) * sizeof(size_t));
  if (starts == NULL) abort();
  size_t pos = 0;
  while (pos < len) {
    starts[nlines++] = pos;
    const uint8_t *nl = memchr(t + pos, '\n', len - pos);
    pos = nl ? (size_t)(nl - t) + 1 : len;
  }
  starts[nlines] = len;
  uint64_t first = start - 1;
  uint64_t last = first + count; /* exclusive */
  if (first > nlines) first = nlines;
  if (last > nlines || last < first) last = nlines;
  size_t sel_start = starts[first], sel_end = starts[last];
  uint64_t selected = last - first;
  int has_more = last < nlines;
  size_t sel_len = sel_end - sel_start;
  free(starts);
  if (sel_len > max) {
    /* TextDecoder().decode(bytes[0..max), {stream: true}): hold back an incomplete last
     * character, drop a leading BOM. */
    const uint8_t *c = t + sel_start;
    size_t cut = (size_t)max;
    size_t i = 0, complete = 0;
    while (i < cut) {
      uint8_t b = c[i];
      size_t w = b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
      if (i + w > cut) break;
      i += w;
      complete = i;
    }
    size_t off = 0;
    if (complete >= 3 && c[0] == 0xEF && c[1] == 0xBB && c[2] == 0xBF) off = 3;
    out->content_off = sel_start + off;
    out->content_len = complete - off;
    uint64_t breaks = 0;
    for (size_t k = off; k < complete; k++) breaks += c[k] == '\n';
    int ended = out->content_len > 0 && c[complete - 1] == '\n';
    if (out->content_len > 0) {
      out->has_end = 1;
      out->end = start + breaks - (ended ? 1 : 0);
    }
    if (ended) {
      out->has_next = 1;
      out->next = start + breaks;
    }
    out->truncated = 1;
    out->by = PAGE_TRUNC_BYTES;
    return;
  }
  out->content_off = sel_start;
  out->content_len = sel_len;
  if (selected > 0) {
    out->has_end = 1;
    out->end = start + selected - 1;
  }
  if (has_more) {
    out->has_next = 1;
    out->next = start + selected;
  }
  out->truncated = has_more;
  out->by = has_more ? PAGE_TRUNC_LINES : PAGE_TRUNC_NONE;
}

/* A parameter byte: 1..128 from its low bits, or a large value (up to 2^53) with bit 7. */
static uint64_t param(uint8_t b) {
  if (b & 0x80) return (uint64_t)1 << (21 + (b & 31)); /* 2^21 .. 2^52 */
  return (uint64_t)(b & 0x7F) + 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_reader_t r = {data, size};
  uint64_t start = param(fuzz_u8(&r)), count = param(fuzz_u8(&r)), max = param(fuzz_u8(&r));
  uint8_t *text = fuzz_dup(r.data, r.len);
  size_t len = r.len;

  int valid = utf8_valid(text, len);
  FUZZ_CHECK(valid == whatwg_valid(text, len), "utf8_valid says %d, the WHATWG decoder %d", valid, !valid);
  if (valid) {
    size_t bom = utf8_bom_len(text, len);
    const uint8_t *t = text + bom;
    size_t tl = len - bom;
    text_page_t page;
    text_page(t, tl, start, count, max, &page);
    ref_page_t ref;
    reference_page(t, tl, start, count, max, &ref);
    FUZZ_CHECK(page.content >= t && page.content + page.content_len <= t + tl, "content outside the text");
    FUZZ_CHECK(page.content_len <= max, "content %zu bytes over maxBytes %llu", page.content_len,
               (unsigned long long)max);
    FUZZ_CHECK(utf8_valid(page.content, page.content_len), "content is not valid UTF-8");
    FUZZ_CHECK(page.start_line == start, "startLine");
    FUZZ_CHECK((size_t)(page.content - t) == ref.content_off && page.content_len == ref.content_len,
               "content [%zu,+%zu), expected [%zu,+%zu) (start %llu count %llu max %llu)", (size_t)(page.content - t),
               page.content_len, ref.content_off, ref.content_len, (unsigned long long)start,
               (unsigned long long)count, (unsigned long long)max);
    FUZZ_CHECK(page.has_end_line == ref.has_end && (!ref.has_end || page.end_line == ref.end),
               "endLine %d/%llu, expected %d/%llu", page.has_end_line, (unsigned long long)page.end_line, ref.has_end,
               (unsigned long long)ref.end);
    FUZZ_CHECK(page.has_next_start_line == ref.has_next && (!ref.has_next || page.next_start_line == ref.next),
               "nextStartLine %d/%llu, expected %d/%llu", page.has_next_start_line,
               (unsigned long long)page.next_start_line, ref.has_next, (unsigned long long)ref.next);
    FUZZ_CHECK(page.truncated == ref.truncated && page.truncated_by == ref.by, "truncated %d/%d, expected %d/%d",
               page.truncated, (int)page.truncated_by, ref.truncated, (int)ref.by);
  }
  free(text);
  return 0;
}
