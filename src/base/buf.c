/*
 * buf.c - growable byte buffer with a hard limit (see buf.h).
 */
#include "base/buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void buf_init(buf_t *b, size_t limit) {
  b->data = NULL;
  b->len = 0;
  b->cap = 0;
  b->limit = limit;
}

void buf_free(buf_t *b) {
  free(b->data);
  b->data = NULL;
  b->len = 0;
  b->cap = 0;
}

void buf_reset(buf_t *b) { b->len = 0; }

static int buf_reserve(buf_t *b, size_t extra) {
  if (extra > SIZE_MAX - b->len - 1) return -1;
  size_t need = b->len + extra + 1; /* room for a terminator */
  if (b->limit != 0 && b->len + extra > b->limit) return -1;
  if (need <= b->cap) return 0;
  size_t cap = b->cap < 256 ? 256 : b->cap;
  while (cap < need) {
    if (cap > SIZE_MAX / 2) {
      cap = need;
      break;
    }
    cap *= 2;
  }
  uint8_t *p = realloc(b->data, cap);
  if (p == NULL) return -1;
  b->data = p;
  b->cap = cap;
  return 0;
}

int buf_append(buf_t *b, const void *data, size_t len) {
  if (len == 0) return buf_reserve(b, 0);
  if (buf_reserve(b, len) != 0) return -1;
  memcpy(b->data + b->len, data, len);
  b->len += len;
  return 0;
}

int buf_append_str(buf_t *b, const char *s) { return buf_append(b, s, strlen(s)); }

int buf_printf(buf_t *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) return -1;
  if (buf_reserve(b, (size_t)n) != 0) return -1;
  va_start(ap, fmt);
  vsnprintf((char *)b->data + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
  return 0;
}

int buf_terminate(buf_t *b) {
  if (buf_reserve(b, 0) != 0) return -1;
  b->data[b->len] = 0;
  return 0;
}

void buf_consume(buf_t *b, size_t n) {
  if (n >= b->len) {
    b->len = 0;
    return;
  }
  memmove(b->data, b->data + n, b->len - n);
  b->len -= n;
}

char *buf_steal(buf_t *b, size_t *len_out) {
  if (buf_terminate(b) != 0) return NULL;
  char *p = (char *)b->data;
  if (len_out) *len_out = b->len;
  b->data = NULL;
  b->len = 0;
  b->cap = 0;
  return p;
}

char *str_vformat(const char *fmt, va_list ap) {
  va_list probe;
  va_copy(probe, ap);
  int n = vsnprintf(NULL, 0, fmt, probe);
  va_end(probe);
  if (n < 0) return NULL;
  char *out = malloc((size_t)n + 1);
  if (out == NULL) return NULL;
  va_list fill;
  va_copy(fill, ap);
  vsnprintf(out, (size_t)n + 1, fmt, fill);
  va_end(fill);
  return out;
}

/* The length of the control character at s[i] (1, or 2 for a C1 control in UTF-8), or 0. */
static size_t control_at(const unsigned char *s, size_t i, size_t len) {
  if (s[i] < 0x20 || s[i] == 0x7f) return 1;
  if (s[i] == 0xc2 && i + 1 < len && s[i + 1] >= 0x80 && s[i + 1] <= 0x9f) return 2;
  return 0;
}

int text_has_controls(const char *s, size_t len) {
  for (size_t i = 0; i < len; i++)
    if (control_at((const unsigned char *)s, i, len) != 0) return 1;
  return 0;
}

int buf_append_escaped(buf_t *b, const char *s, size_t len) {
  const unsigned char *u = (const unsigned char *)s;
  size_t i = 0;
  while (i < len) {
    size_t start = i;
    while (i < len && control_at(u, i, len) == 0) i++;
    if (i > start && buf_append(b, s + start, i - start) != 0) return -1;
    if (i >= len) break;
    size_t n = control_at(u, i, len);
    unsigned cp = n == 2 ? u[i + 1] : u[i];
    int rc = cp == '\n' ? buf_append_str(b, "\\n")
             : cp == '\r' ? buf_append_str(b, "\\r")
             : cp == '\t' ? buf_append_str(b, "\\t")
                          : buf_printf(b, "\\u%04x", cp);
    if (rc != 0) return -1;
    i += n;
  }
  return 0;
}

int buf_append_js_string(buf_t *b, const char *s, size_t len) {
  if (buf_append(b, "\"", 1) != 0) return -1;
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)s[i];
    const char *esc = NULL;
    switch (c) {
      case '"': esc = "\\\""; break;
      case '\\': esc = "\\\\"; break;
      case '\b': esc = "\\b"; break;
      case '\f': esc = "\\f"; break;
      case '\n': esc = "\\n"; break;
      case '\r': esc = "\\r"; break;
      case '\t': esc = "\\t"; break;
      default: break;
    }
    int rc;
    if (esc) rc = buf_append_str(b, esc);
    else if (c < 0x20) rc = buf_printf(b, "\\u%04x", c);
    else rc = buf_append(b, &s[i], 1);
    if (rc != 0) return -1;
  }
  return buf_append(b, "\"", 1);
}
