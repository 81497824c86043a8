/*
 * pull.h - pullImage: POST /images/create, with the engine's progress stream read to the
 * end and any error reported inside it turned into a rejection.
 */
#ifndef SBX_PULL_H
#define SBX_PULL_H

#include "addon.h"
#include "engine.h"
#include "op.h"

/* Splits an image reference into repository and tag (or digest), as the docker CLI does:
 * "img" -> ("img", "latest"), "host:5000/img:1" -> ("host:5000/img", "1"),
 * "img@sha256:..." -> ("img", "sha256:..."). Caller frees both. */
int image_ref_split(const char *ref, char **repo, char **tag);

op_t *pull_op_new(addon_t *a, engine_t *eng, const char *ref, err_t *err);

/* Feeds pull progress bytes; collects the first error message. For the fuzzer too. */
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
