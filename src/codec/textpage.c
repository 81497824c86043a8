/*
 * textpage.c - strict UTF-8 validation (the WHATWG decoder's fatal mode) and the page of
 * readTextFilePage, computed on the UTF-8 bytes (see textpage.h).
 *
 * Owns: nothing; a page points into the caller's text.
 *
 * The original's createTextFilePage, for reference:
 *   lines = text.match(/[^\n]*\n|[^\n]+$/g) ?? []     (pieces ending in "\n", last may not)
 *   selected = lines[startLine-1 .. startLine-1+lineCount), hasMore = lines exist after
 *   if UTF-8 size of selected > maxBytes:
 *     content = new TextDecoder().decode(bytes[0..maxBytes), { stream: true })
 *       (a trailing incomplete character is held back, and a leading BOM is dropped)
 *     endLine = content empty ? null : startLine + breaks - (ends with "\n" ? 1 : 0)
 *     nextStartLine = ends with "\n" ? startLine + breaks : null; truncatedBy "bytes"
 *   else content = selected, endLine/nextStartLine from the line count; truncatedBy
 *   "lines" when hasMore.
 * One pass over the bytes with memchr, no allocation, all counts in 64 bits: a line number
 * the page reports is at most the number of lines plus one, far below 2^53.
 */
#include "codec/textpage.h"

#include <string.h>

int utf8_valid(const uint8_t *s, size_t n) {
  size_t i = 0;
  while (i < n) {
    /* ASCII runs, eight bytes at a time. */
    while (i + 8 <= n) {
      uint64_t w;
      memcpy(&w, s + i, 8);
      if (w & 0x8080808080808080ULL) break;
      i += 8;
    }
    if (i >= n) break;
    uint8_t c = s[i];
    if (c < 0x80) {
      i++;
      continue;
    }
    if (c < 0xC2) return 0; /* continuation byte, or the overlong leads C0 and C1 */
    if (c < 0xE0) {
      if (n - i < 2 || (s[i + 1] & 0xC0) != 0x80) return 0;
      i += 2;
      continue;
    }
    if (c < 0xF0) {
      uint8_t lo = c == 0xE0 ? 0xA0 : 0x80; /* no overlongs */
      uint8_t hi = c == 0xED ? 0x9F : 0xBF; /* no surrogates */
      if (n - i < 2 || s[i + 1] < lo || s[i + 1] > hi) return 0;
      if (n - i < 3 || (s[i + 2] & 0xC0) != 0x80) return 0;
      i += 3;
      continue;
    }
    if (c < 0xF5) {
      uint8_t lo = c == 0xF0 ? 0x90 : 0x80; /* no overlongs */
      uint8_t hi = c == 0xF4 ? 0x8F : 0xBF; /* nothing above U+10FFFF */
      if (n - i < 2 || s[i + 1] < lo || s[i + 1] > hi) return 0;
      if (n - i < 3 || (s[i + 2] & 0xC0) != 0x80) return 0;
      if (n - i < 4 || (s[i + 3] & 0xC0) != 0x80) return 0;
      i += 4;
      continue;
    }
    return 0;
  }
  return 1;
}

size_t utf8_bom_len(const uint8_t *data, size_t len) {
  return len >= 3 && data[0] == 0xEF && data[1] == 0xBB && data[2] == 0xBF ? 3 : 0;
}

/*
 * Length of the longest prefix of s[0..n) that ends on a character boundary: what a
 * streaming decoder emits before holding back an incomplete last character. `s` is valid
 * UTF-8 cut at n, so only the last character can be incomplete.
 */
static size_t complete_prefix(const uint8_t *s, size_t n) {
  size_t p = n, k = 0;
  while (p > 0 && k < 3 && (s[p - 1] & 0xC0) == 0x80) {
    p--;
    k++;
  }
  if (p == 0) return n;
  uint8_t lead = s[p - 1];
  size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
  return (p - 1) + need > n ? p - 1 : n;
}

static uint64_t count_newlines(const uint8_t *s, size_t n) {
  uint64_t count = 0;
  const uint8_t *end = s + n;
  while (s < end) {
    const uint8_t *nl = memchr(s, '\n', (size_t)(end - s));
    if (nl == NULL) break;
    count++;
    s = nl + 1;
  }
  return count;
}

/* Moves *off past up to `want` lines; returns how many lines it passed. */
static uint64_t skip_lines(const uint8_t *text, size_t len, size_t *off, uint64_t want) {
  uint64_t passed = 0;
  while (passed < want && *off < len) {
    const uint8_t *nl = memchr(text + *off, '\n', len - *off);
    *off = nl ? (size_t)(nl - text) + 1 : len;
    passed++;
  }
  return passed;
}

void text_page(const uint8_t *text, size_t len, uint64_t start_line, uint64_t line_count,
               uint64_t max_bytes, text_page_t *out) {
  memset(out, 0, sizeof(*out));
  out->start_line = start_line;
  out->content = text;
  uint64_t relative_start = start_line > 0 ? start_line - 1 : 0;
  size_t off = 0;
  skip_lines(text, len, &off, relative_start);
  size_t sel_start = off;
  uint64_t selected = skip_lines(text, len, &off, line_count);
  size_t sel_end = off;
  /* Bytes left after the selection always make at least one more line. */
  int has_more = sel_end < len;
  size_t sel_len = sel_end - sel_start;

  if ((uint64_t)sel_len > max_bytes) {
    const uint8_t *c = text + sel_start;
    size_t clen = complete_prefix(c, (size_t)max_bytes);
    size_t bom = utf8_bom_len(c, clen);
    c += bom;
    clen -= bom;
    uint64_t breaks = count_newlines(c, clen);
    int ended = clen > 0 && c[clen - 1] == '\n';
    out->content = c;
    out->content_len = clen;
    if (clen > 0) {
      out->has_end_line = 1;
      out->end_line = start_line + breaks - (ended ? 1 : 0);
    }
    if (ended) {
      out->has_next_start_line = 1;
      out->next_start_line = start_line + breaks;
    }
    out->truncated = 1;
    out->truncated_by = PAGE_TRUNC_BYTES;
    return;
  }
  out->content = text + sel_start;
  out->content_len = sel_len;
  if (selected > 0) {
    out->has_end_line = 1;
    out->end_line = start_line + selected - 1;
  }
  if (has_more) {
    out->has_next_start_line = 1;
    out->next_start_line = start_line + selected;
  }
  out->truncated = has_more;
  out->truncated_by = has_more ? PAGE_TRUNC_LINES : PAGE_TRUNC_NONE;
}

/* The length of the well-formed sequence starting at s[0..n), or 0 when s[0] starts an
 * ill-formed one; *bad is then the length of its maximal subpart (at least 1), which the
 * WHATWG decoder replaces with one U+FFFD. */
static size_t utf8_seq(const uint8_t *s, size_t n, size_t *bad) {
  uint8_t c = s[0];
  *bad = 1;
  if (c < 0x80) return 1;
  size_t need;
  uint8_t lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) need = 1;
  else if (c >= 0xE0 && c <= 0xEF) {
    need = 2;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    need = 3;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  for (size_t k = 1; k <= need; k++) {
    if (k >= n || s[k] < lo || s[k] > hi) {
      *bad = k; /* the lead and the continuations seen so far */
      return 0;
    }
    lo = 0x80;
    hi = 0xBF;
  }
  return need + 1;
}

int utf8_decode_lossy(const uint8_t *s, size_t n, buf_t *out) {
  static const uint8_t replacement[3] = {0xEF, 0xBF, 0xBD};
  size_t i = 0;
  while (i < n) {
    size_t bad = 0, good = utf8_seq(s + i, n - i, &bad);
    int rc = good ? buf_append(out, s + i, good) : buf_append(out, replacement, sizeof(replacement));
    if (rc != 0) return -1;
    i += good ? good : bad;
  }
  return 0;
}
