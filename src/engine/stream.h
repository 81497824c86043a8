/*
 * stream.h - streamed engine requests: a request body produced as it is sent (an archive
 * upload built while its source is read) and a response body consumed as it arrives (an
 * archive download handed on while it is read), each direction paused when the other end
 * cannot keep up and resumed when it can, so neither side holds the whole body.
 *
 * Owns: a stream_req_t owns its libcurl easy handle, its header list, the error body of a
 * failed reply (bounded) and the path stat header.
 *
 * Same engine, endpoint, API version negotiation and connection pool as engine.h's
 * requests (the same libcurl multi handle on the same loop); the difference is only the
 * body: engine.h's requests hold theirs in memory.
 */
#ifndef SBX_STREAM_H
#define SBX_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "engine/engine.h"

/* What on_body returns when no byte is ready yet (call stream_req_resume once one is). */
#define STREAM_BODY_PAUSE ((size_t)-1)
/* What on_body returns to abandon the request (the connection is dropped). */
#define STREAM_BODY_ABORT ((size_t)-2)

typedef struct stream_req stream_req_t;

typedef struct stream_req_cbs {
  /*
   * Request body (when stream_req_set_body was called): copies at most `max` bytes to
   * `buf` and returns how many; 0 ends the body. Runs inside libcurl: no libcurl call,
   * no JavaScript.
   */
  size_t (*on_body)(void *ud, uint8_t *buf, size_t max);
  /*
   * A piece of a 2xx reply's body: 0 taken, 1 not taken (pause: the same bytes come
   * again after stream_req_resume), -1 abandon the request. Runs inside libcurl. Replies
   * of other statuses are kept (bounded) for the error message instead.
   */
  int (*on_data)(void *ud, const uint8_t *data, size_t len);
  /* Once, from the loop, never from inside libcurl or inside a call to this file. */
  void (*on_done)(void *ud, stream_req_t *r);
} stream_req_cbs_t;

/* `path` is printf-style; every dynamic part must already be URL-escaped. */
stream_req_t *stream_req_new(engine_t *e, const char *method, const char *path_fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The request has a body, produced by on_body, sent chunked. */
int stream_req_set_body(stream_req_t *r, const char *content_type);
/* 0, or -1 with err set (nothing will be called). */
int stream_req_start(stream_req_t *r, const stream_req_cbs_t *cbs, void *ud, err_t *err);
/* Un-pauses whatever direction is paused. Not from inside a libcurl callback. */
void stream_req_resume(stream_req_t *r);
/* Stops (no callback afterwards) and frees. NULL is fine. */
void stream_req_free(stream_req_t *r);

int stream_req_ok(const stream_req_t *r);
int stream_req_not_found(const stream_req_t *r);
/* Fills err for a failed request as engine.h's http_req_error does. -1 (0 when it succeeded). */
int stream_req_error(const stream_req_t *r, err_t *err);
/* X-Docker-Container-Path-Stat, or NULL. */
const char *stream_req_path_stat(const stream_req_t *r);

#endif
