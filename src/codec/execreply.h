/*
 * execreply.h - the engine's reply to an upgraded exec start, read from the bytes of the
 * connection as they arrive, whatever the pieces: the response head (bounded), then
 * either the multiplexed output stream (101, or 200 from older engines that still hijack)
 * or the engine's error body (plain or chunked, bounded), which ends the exec with
 * "Docker engine refused to start the exec (<status>): <message>".
 *
 * Owns: the head and error body buffers and the frame demultiplexer's partial frame.
 *
 * Pure: no I/O. engine/hijack.c feeds it what it reads off the connection (after TLS, when
 * there is TLS); the fuzz harness feeds it directly.
 */
#ifndef SBX_EXECREPLY_H
#define SBX_EXECREPLY_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/err.h"
#include "codec/frames.h"

#define EXEC_REPLY_MAX_HEAD (16 * 1024)
#define EXEC_REPLY_MAX_ERROR_BODY (64 * 1024)

typedef enum { XR_HEAD = 0, XR_STREAM, XR_ERROR_BODY, XR_DONE } exec_reply_state_t;

typedef struct exec_reply_callbacks {
  /* The head said the stream starts: stdin may be written from now on. */
  void (*on_stream)(void *ud);
  /* A piece of output: stream 1 (stdout) or 2 (stderr). Return nonzero to stop reading
   * (the connection is being closed). */
  int (*on_output)(void *ud, int stream, const uint8_t *data, size_t len);
} exec_reply_callbacks_t;

typedef struct exec_reply {
  exec_reply_state_t state;
  long status;
  int chunked;
  long long content_length;
  buf_t head;
  buf_t error_body;
  frame_demux_t demux;
  int raw; /* a Tty exec: the stream is the terminal's bytes, not frames (exec_reply_set_raw) */
} exec_reply_t;

void exec_reply_init(exec_reply_t *r);
void exec_reply_free(exec_reply_t *r);
/* A Tty exec's reply: once the head is read, every byte is output of stream 1 as it
 * arrives (the engine sends no frame headers for a Tty exec); nothing is buffered. */
void exec_reply_set_raw(exec_reply_t *r);

/*
 * Feeds bytes read from the connection. Returns 0 to go on reading, 1 when the reply is
 * over (err set when it failed: a malformed or oversized head, a broken stream, or the
 * engine's refusal), or 2 when a callback asked to stop. Nothing more may be fed after
 * 1 or 2.
 */
int exec_reply_feed(exec_reply_t *r, const uint8_t *data, size_t len, const exec_reply_callbacks_t *cbs, void *ud,
                    err_t *err);
/* The connection ended cleanly (end of file). Sets err when that is not a good end (a
 * cut frame, no head yet); an error body is reported as the engine's refusal. */
void exec_reply_eof(exec_reply_t *r, err_t *err);

#endif
