/*
 * hijack.h - the upgraded connection of an exec: POST /exec/{id}/start with
 * "Connection: Upgrade, Upgrade: tcp", then the raw multiplexed stream both ways.
 *
 * Owns: the connection (a libuv pipe or TCP handle we open ourselves, not libcurl's:
 * libcurl has no half-close), the stdin bytes being written, and the read buffer. On a
 * tcp endpoint with TLS, every byte both ways goes through a TLS session (tlsconn.c);
 * the end of stdin is then close_notify followed by the half-close.
 * The response head is parsed here; 101 and 200 (older engines answer 200 and still
 * hijack) start the stream, any other status is an engine error with its message.
 * Output is demultiplexed (frames.c) and handed on; reading can be paused and resumed,
 * which is how a slow consumer slows the command down. stdin is written and then
 * half-closed (shutdown), so the command sees end of file.
 *
 * Lifetime: hijack_close() may be called at any time, also from inside a callback; the
 * memory is released once libuv has closed the handle. No callback runs after it.
 */
#ifndef SBX_HIJACK_H
#define SBX_HIJACK_H

#include <stddef.h>
#include <stdint.h>

#include "engine/engine.h"
#include "base/err.h"

typedef struct hijack hijack_t;

typedef struct hijack_callbacks {
  /* A demultiplexed piece of output: stream 1 (stdout) or 2 (stderr). */
  void (*on_data)(void *ud, int stream, const uint8_t *data, size_t len);
  /* The stream ended: err NULL at a clean end of stream, else why it failed. */
  void (*on_end)(void *ud, err_t *err);
  /* Optional: queued stdin bytes were written to the socket (hijack_queued() fell); called
   * from the loop, never from inside a call to this file. */
  void (*on_written)(void *ud);
} hijack_callbacks_t;

/* Connects and starts the exec. Returns NULL with err set when it cannot even start.
 * `tty`: the exec was created with "Tty": true; the start says so too and the stream is
 * raw (every byte is output of stream 1, codec/execreply.h exec_reply_set_raw). */
hijack_t *hijack_start(engine_t *eng, const char *exec_id, int tty, const hijack_callbacks_t *cbs, void *ud,
                       err_t *err);
void hijack_pause(hijack_t *h);
void hijack_resume(hijack_t *h);
/* Queues stdin bytes (copied); they are written once the stream is open, in order. */
int hijack_write(hijack_t *h, const uint8_t *data, size_t len);
/* stdin bytes queued here and not yet written to the socket (taken by hijack_write, not
 * yet completed by libuv): what a peer that does not read makes grow. Writers bound it
 * (engine/agent_conn.c pauses its data at AGENT_TX_HIGH). */
size_t hijack_queued(const hijack_t *h);
/* Half-closes the connection after the queued stdin, so the command sees end of file. */
void hijack_end_stdin(hijack_t *h);
/* Whether the connection keeps Node's event loop alive (it does by default). A long-lived
 * connection that waits for nothing (an idle agent) lets the process exit. */
void hijack_set_ref(hijack_t *h, int ref);
/* After on_end without error: 1 when the engine ended the stream with a reset (or the
 * write side broke) instead of an end of file. The output read is complete only if the
 * command had exited by then, which the caller checks (exec_task.c: the exec's inspection). */
int hijack_was_reset(const hijack_t *h);
/* Closes the connection; no callback runs afterwards. */
void hijack_close(hijack_t *h);

#endif
