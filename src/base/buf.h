/*
 * buf.h - a growable byte buffer with an optional hard limit.
 *
 * Owns: nothing global. A buf_t owns its `data` allocation; buf_free releases it.
 * Every append checks the limit before it allocates, so a length announced by the
 * engine or the container can never make us allocate more than the caller allowed.
 */
#ifndef SBX_BUF_H
#define SBX_BUF_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

typedef struct buf {
  uint8_t *data;
  size_t len;
  size_t cap;
  size_t limit; /* 0 = no limit beyond SIZE_MAX */
} buf_t;

void buf_init(buf_t *b, size_t limit);
void buf_free(buf_t *b);
void buf_reset(buf_t *b);
/* Returns 0, or -1 when the limit would be exceeded or memory is exhausted. */
int buf_append(buf_t *b, const void *data, size_t len);
int buf_append_str(buf_t *b, const char *s);
int buf_printf(buf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Makes sure data[len] is a NUL byte (not counted in len). */
int buf_terminate(buf_t *b);
/* Removes the first n bytes. */
void buf_consume(buf_t *b, size_t n);
/* Appends `s` (`len` bytes of UTF-8, NULs allowed) quoted as JavaScript's JSON.stringify
 * quotes a string, for messages that name a caller's value the way the original did:
 * `"`, `\` and the control characters escaped (\b \f \n \r \t, else \u00xx in
 * lower case), everything else as is. */
int buf_append_js_string(buf_t *b, const char *s, size_t len);
/* Appends `s` (`len` bytes) with every control character written as an escape, for
 * messages built from text the sandbox or the engine chose (a file name with a newline,
 * a terminal escape sequence in an engine's error): \n, \r, \t, else \u00xx for the
 * other C0 controls, DEL and the C1 controls (U+0080 to U+009F, two bytes in UTF-8).
 * Everything else, backslashes included, as is: text without control characters is
 * unchanged. */
int buf_append_escaped(buf_t *b, const char *s, size_t len);
/* Whether buf_append_escaped would change `len` bytes of `s`. */
int text_has_controls(const char *s, size_t len);
/* Hands the allocation to the caller (NUL-terminated) and leaves b empty. */
char *buf_steal(buf_t *b, size_t *len_out);

/* A new string made by vsnprintf from `fmt` and `ap` (which it leaves unread: the
 * caller's va_end still applies). Caller frees; NULL when out of memory. */
char *str_vformat(const char *fmt, va_list ap);

#endif
