/*
 * agent_conn.h - the connection to one sandbox's in-container agent (src/agent/): the
 * agent placed in the container if it is not there yet, started as one long-lived exec
 * (no TTY) whose stdin and stdout carry the framed protocol of codec/agent_wire.h, the
 * handshake, many requests multiplexed on it with per-stream flow control, a heartbeat,
 * and a typed failure of every request in flight when the agent dies or lies.
 *
 * Owns: the placement and start requests while connecting, the hijacked connection, the
 * receive buffer (bounded by the largest frame), and every request in flight (agent_req_t)
 * with its input not sent yet: a request is freed after its terminal event (result, error,
 * or failure), or once the agent has answered a cancel.
 *
 * Placement (the binary comes from engine/agent_image.c, named by content hash):
 *  - writable rootfs: an archive upload of /.anvia/agent-<hash> (after a HEAD showed it
 *    absent: a resumed sandbox keeps it);
 *  - read-only rootfs: the binary written by an exec (`cat`, as uid 0) into the /.anvia
 *    tmpfs the container was created with (runspec.c adds it), which the archive
 *    endpoints cannot see.
 * A placement that fails for a reason of the container (read-only without the tmpfs, no
 * shell for the exec, a noexec mount, an architecture without a binary) makes the
 * connection unusable for good: callers then use the engine path. An engine or agent
 * failure does not: the next call connects again (a new agent), after at most
 * AGENT_MAX_RETRIES consecutive failures the connection gives up as well.
 *
 * No N-API here. Callbacks run from the loop, never from inside a call made to this file
 * (except agent_req_start's failure, reported through its return value).
 */
#ifndef SBX_AGENT_CONN_H
#define SBX_AGENT_CONN_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "codec/agent_wire.h"
#include "engine/engine.h"

#define AGENT_HEARTBEAT_MS 5000u   /* the host pings this often when idle */
#define AGENT_SILENCE_MS 20000u    /* the agent exits after this long without a frame */
#define AGENT_HELLO_TIMEOUT_MS 15000u
#define AGENT_MAX_RETRIES 3
/* Bytes queued toward the agent and not yet written to its connection: request data
 * (stdin, writeFile, importTree) is pumped only below AGENT_TX_HIGH and again once the
 * queue falls under AGENT_TX_LOW, whatever credit the agent granted; anything past
 * AGENT_TX_LIMIT (requests, WINDOW, PING, CANCEL toward an agent that does not read) fails
 * the connection. The agent's initial credit per request is at most AGENT_MAX_IN_WINDOW,
 * and the credit it returns is at most what it was sent. */
#define AGENT_TX_HIGH (256u * 1024u)
#define AGENT_TX_LOW (128u * 1024u)
#define AGENT_TX_LIMIT (8u * 1024u * 1024u)
#define AGENT_MAX_IN_WINDOW (1024u * 1024u)

typedef struct agent_conn agent_conn_t;
typedef struct agent_req agent_req_t;

typedef struct agent_waiter agent_waiter_t;
struct agent_waiter {
  /* err NULL: ready. Else why not (err->code says: the agent cannot run here, or failed). */
  void (*fn)(agent_waiter_t *w, const err_t *err);
  /* The list it waits in (the connection's, or one being woken), NULL when in none: a
   * waiter can be cancelled at any time, also while others of its list are woken. */
  agent_waiter_t *next, *prev;
};

typedef enum {
  AE_STARTED = 1, /* EXEC, TERM_OPEN, TERM_ATTACH: the program runs (pid, pgid) */
  AE_DATA,        /* stream bytes (AW_S_OUT or AW_S_ERR); `end` on the last */
  AE_EXITED,      /* EXEC: the command ended (its output may still come) */
  AE_RESULT,      /* terminal: the request's result */
  AE_ERROR,       /* terminal: the agent's typed error */
  AE_FAILED,      /* terminal: the connection failed (err) */
} agent_event_type_t;

typedef struct agent_event {
  agent_event_type_t type;
  uint8_t stream;
  int end;
  const uint8_t *data;
  size_t len;
  aw_started_t started;
  aw_exit_t exit; /* AE_EXITED, and AE_RESULT of an EXEC */
  union {
    aw_read_res_t read;
    aw_write_res_t write;
    aw_mkdir_res_t mkdir;
    aw_list_res_t list;
    aw_port_res_t port;
    aw_signal_res_t signal;
    aw_alive_res_t alive;
    aw_watch_res_t watch;
    aw_term_res_t term;           /* TERM_OPEN, TERM_ATTACH, TERM_RESIZE */
    aw_term_list_res_t term_list; /* ids point into the frame */
  } res;
  aw_error_t error;  /* AE_ERROR; error.detail points into the frame */
  const err_t *fail; /* AE_FAILED */
} agent_event_t;

typedef void (*agent_req_fn)(agent_req_t *req, const agent_event_t *ev, void *ud);
/* The agent's credit let queued host -> agent bytes of `req` go: `unsent` are still
 * queued (agent_req_on_sent). */
typedef void (*agent_sent_fn)(agent_req_t *req, size_t unsent, void *ud);

/* A request as the host sends it (codec/agent_wire.h), by type. */
typedef struct agent_msg {
  uint8_t type; /* AW_T_EXEC, AW_T_READ, ... */
  union {
    aw_exec_enc_t exec;
    aw_read_req_t read;
    aw_write_req_t write;
    aw_mkdir_req_t mkdir;
    aw_list_req_t list;
    aw_port_req_t port;
    aw_signal_req_t signal;
    aw_alive_req_t alive;
    aw_watch_req_t watch;
    aw_term_open_enc_t term_open;
    aw_term_attach_req_t term_attach;
    aw_term_resize_req_t term_resize;
    aw_term_signal_req_t term_signal;
    aw_term_list_req_t term_list;
  } u;
} agent_msg_t;

/* NULL when out of memory. Nothing happens until someone waits for it. */
agent_conn_t *agent_conn_new(engine_t *eng, const char *container, const char *workdir, int readonly_rootfs);
/* Ends the agent (end of its input), fails what is in flight, frees. NULL is fine. */
void agent_conn_free(agent_conn_t *c);
/*
 * Connects if needed. 1: ready now; 0: `w` is called once it is ready or failed; -1 with
 * err set: the agent cannot be used here (placement failed for good, or retries spent).
 */
int agent_conn_when_ready(agent_conn_t *c, agent_waiter_t *w, err_t *err);
void agent_conn_cancel_wait(agent_conn_t *c, agent_waiter_t *w);
/* 1 once the agent is known not to run in this container (callers use the engine path). */
int agent_conn_unusable(const agent_conn_t *c);
/* 1 while connected: agent_req_start would send now. */
int agent_conn_is_ready(const agent_conn_t *c);
/* Ends the agent now (its input ends: commands it started end with it, detached ones do
 * not); requests in flight fail. The next wait connects again. */
void agent_conn_shutdown(agent_conn_t *c);

/* Sends a request on a ready connection. NULL with err set when it cannot be sent. */
agent_req_t *agent_req_start(agent_conn_t *c, const agent_msg_t *msg, agent_req_fn fn, void *ud, err_t *err);
/* Host -> agent stream bytes (copied), in order; `end` after the last. They leave as the
 * agent grants credit; what waits for it is queued here (what was sent is not kept). 0, or
 * -1 when out of memory (or after `end`, or after a cancel). */
int agent_req_write(agent_req_t *r, const uint8_t *data, size_t len, int end);
/* Host -> agent bytes queued and not sent yet (waiting for the agent's credit). */
size_t agent_req_unsent(const agent_req_t *r);
/* `fn` (with the request's `ud`) is called, from the loop, each time credit from the
 * agent let queued bytes (or the end) go: a producer can keep agent_req_unsent bounded
 * and go on when it is low again. NULL: no call. */
void agent_req_on_sent(agent_req_t *r, agent_sent_fn fn);
/* Grants the agent credit for `bytes` more of an agent -> host stream. */
void agent_req_grant(agent_req_t *r, uint8_t stream, uint32_t bytes);

/*
 * The credit a consumer gives back as it takes an agent -> host stream, held back while it
 * is paused (or, `behind`, says it is behind), so that the agent stops within the credit
 * it has; resuming grants what was held. What is held never exceeds what the agent was
 * granted (AW_MAX_WINDOW per stream). A zeroed agent_credit_t is a consumer not paused.
 */
typedef struct agent_credit {
  int paused;
  uint32_t held[AW_S_ERR + 1]; /* per stream: bytes taken and not credited again */
} agent_credit_t;
/* `bytes` of `stream` were taken: credit for as many more now, or held. */
void agent_credit_taken(agent_credit_t *k, agent_req_t *r, uint8_t stream, uint32_t bytes, int behind);
void agent_credit_pause(agent_credit_t *k);
/* Grants what was held (dropped when `r` is NULL: the request is gone). */
void agent_credit_resume(agent_credit_t *k, agent_req_t *r);
/* The agent broke the protocol in what it sent for `r` (as the caller judged it: more
 * listing records than asked for, a result that does not match): the connection fails as
 * for a malformed frame (every other request in flight gets the connection's error, the
 * next call starts a new agent); `r` gets no event after this (its owner reports its own
 * error). May be called from r's event callback. */
void agent_req_violation(agent_req_t *r, const char *what);
/* The caller is gone: no event after this. The agent is told (CANCEL); input not sent yet
 * is dropped. NULL is fine. */
void agent_req_cancel(agent_req_t *r);

#endif
