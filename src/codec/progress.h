/*
 * progress.h - what pullImage reads: an image reference split as the docker CLI splits
 * it, and the engine's progress stream (one JSON object per line), scanned for the
 * first error it reports.
 *
 * Owns: a progress_parser_t owns its partial line (bounded) and the error text it found.
 */
#ifndef SBX_PROGRESS_H
#define SBX_PROGRESS_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

/* Longest progress line kept; a longer one is reported (overlong), not parsed. */
#define MAX_PROGRESS_LINE (1024 * 1024)

/* Splits an image reference into repository and tag (or digest), as the docker CLI does:
 * "img" -> ("img", "latest"), "host:5000/img:1" -> ("host:5000/img", "1"),
 * "img@sha256:..." -> ("img", "sha256:..."). Caller frees both. 0, or -1 (out of memory). */
int image_ref_split(const char *ref, char **repo, char **tag);

/* Feeds pull progress bytes; collects the first error message. */
typedef struct progress_parser {
  buf_t line;
  char *error; /* first error reported by the stream */
  int overlong;
} progress_parser_t;

void progress_parser_init(progress_parser_t *p);
void progress_parser_feed(progress_parser_t *p, const uint8_t *data, size_t len);
void progress_parser_finish(progress_parser_t *p);
void progress_parser_free(progress_parser_t *p);

#endif
