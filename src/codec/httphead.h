/*
 * httphead.h - the pieces of HTTP/1.1 replies the addon reads itself: a response head
 * (status line and header lookup, bounded and without relying on a terminating NUL), a
 * single header line as libcurl hands it over, the API version the engine reports,
 * chunked bodies, and the engine's error message in an error body.
 *
 * Owns: nothing; strings returned are malloc'd and the caller's.
 *
 * Everything here reads bytes from the engine: every length is checked, nothing is read
 * past `len`, numbers are parsed by hand (no strtol, which skips white space and could
 * read on past a line).
 */
#ifndef SBX_HTTPHEAD_H
#define SBX_HTTPHEAD_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

/* Length of the head in data[0..len) including its blank line ("\r\n\r\n"), or 0 when
 * the blank line has not arrived yet. */
size_t http_head_end(const uint8_t *data, size_t len);
/* The status of a head's first line, "HTTP/<digits>.<digits> <3 digits>[ reason]", from
 * 100 to 599; -1 when the line is not that (or longer than 256 bytes). */
long http_head_status(const uint8_t *head, size_t len);
/* 1 when header `name`'s value starts with `prefix` (ASCII case-insensitive). */
int http_head_header_is(const uint8_t *head, size_t len, const char *name, const char *prefix);
/* Content-Length as a number (decimal digits after optional blanks, at most 18 of them);
 * -1 when absent or not such a number. */
long long http_head_content_length(const uint8_t *head, size_t len);

/* A header line as libcurl gives it ("Name: value\r\n"): when its name is `name` (ASCII
 * case-insensitive), the value with blanks trimmed at both ends, malloc'd; else NULL. A
 * value longer than 64 KiB, or holding a NUL byte, is ignored (NULL). */
char *http_header_line_value(const uint8_t *line, size_t len, const char *name);

/* "<major>.<minor>" (what API-Version carries), major 0-99, minor 0-999, nothing after
 * but white space. 0, or -1 when it is not that. */
int http_api_version_parse(const char *text, int *major, int *minor);

/*
 * Decodes a chunked body held whole in in[0..len) into `out` (reset first). Returns 1
 * when the last chunk was seen, 0 when more bytes are needed, -1 when the framing is
 * broken or a chunk is larger than `max_chunk`.
 */
int http_dechunk(const uint8_t *in, size_t len, size_t max_chunk, buf_t *out);

/* The engine's error text in an error body: the "message" of a JSON object, else the
 * body's first 1024 bytes with blanks trimmed. Malloc'd; NULL only when out of memory. */
char *http_error_message(const uint8_t *body, size_t len);

#endif
