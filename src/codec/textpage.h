/*
 * textpage.h - strict UTF-8 validation and the text file page of readTextFilePage.
 *
 * Owns: nothing; a page's content buffer is malloc'd and the caller's (text_page_free).
 *
 * The original decodes the whole file with TextDecoder("utf-8", { fatal: true }) (which
 * rejects every ill-formed sequence and drops one leading BOM) and then pages the text:
 * lines are the pieces ending in "\n" (the last may lack it); the page takes lineCount
 * lines from startLine; if their UTF-8 size exceeds maxBytes the content is cut at
 * maxBytes, a character cut in half is dropped, and endLine/nextStartLine follow the
 * line breaks that survived. Working on bytes here gives the same page without
 * decoding the file into a JavaScript string first.
 */
#ifndef SBX_TEXTPAGE_H
#define SBX_TEXTPAGE_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

/* 1 when `data` is well-formed UTF-8 by the WHATWG decoder's fatal rules. */
int utf8_valid(const uint8_t *data, size_t len);
/* Appends `s` to `out` as the WHATWG UTF-8 decoder without fatal reads it: every
 * ill-formed sequence (its maximal subpart) becomes U+FFFD, a BOM is kept. 0, or -1 when
 * out of memory. */
int utf8_decode_lossy(const uint8_t *s, size_t n, buf_t *out);
/* Length of a leading UTF-8 BOM (3) or 0. */
size_t utf8_bom_len(const uint8_t *data, size_t len);

typedef enum { PAGE_TRUNC_NONE = 0, PAGE_TRUNC_LINES, PAGE_TRUNC_BYTES } page_trunc_t;

typedef struct text_page {
  const uint8_t *content; /* points into the input text (no copy) */
  size_t content_len;
  uint64_t start_line;
  int has_end_line;
  uint64_t end_line;
  int has_next_start_line;
  uint64_t next_start_line;
  int truncated;
  page_trunc_t truncated_by;
} text_page_t;

/*
 * Pages `text` (valid UTF-8 with any BOM already removed). start_line, line_count and
 * max_bytes are positive (validated by the caller).
 */
void text_page(const uint8_t *text, size_t len, uint64_t start_line, uint64_t line_count,
               uint64_t max_bytes, text_page_t *out);

#endif
