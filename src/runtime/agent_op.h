/*
 * agent_op.h - runtime operations carried out by the sandbox's in-container agent
 * (engine/agent_conn.h), and what they share: the sandbox's agent connection (attached to
 * the sandbox, made at first use), when a call falls back on the engine, and the base every
 * agent operation is built on.
 *
 * An agent operation is prepared from the same validated request as the engine's (the
 * parse functions of exec_op.c, engine_files.c, ...). When it starts it waits for the agent;
 * then it runs there. When the agent cannot be used for this call (it cannot run in this
 * container, or it failed to start), the operation hands its request to the engine's
 * implementation (op_delegate) in transport "auto", or fails with a clear error in
 * transport "agent". A failure after the request reached the agent is that call's error
 * (a command may have run): the next call connects again.
 *
 * Owns: the attached state owns the connection; an operation owns its request and, while
 * it runs, its agent request.
 */
#ifndef SBX_AGENT_OP_H
#define SBX_AGENT_OP_H

#include <node_api.h>

#include "base/err.h"
#include "engine/agent_conn.h"
#include "napi/op.h"
#include "sandbox/sandbox.h"

/* The sandbox's agent connection, made at first use. NULL when out of memory. */
agent_conn_t *agent_op_conn(sandbox_t *sb);
/* Ends the sandbox's agent (stop and destroy do, first). */
void agent_op_shutdown(sandbox_t *sb);

/*
 * Falling back on the engine, decided here only:
 *   - before a call is made: agent_op_engine_instead, 1 when the agent is known not to
 *     run in this sandbox and its transport lets the engine serve ("auto"); the call then
 *     goes through the engine's table (runtime/transport.c);
 *   - when a started call finds the agent cannot serve it (`why`, the reason's text):
 *     agent_op_refuse, 0 when the engine's implementation takes it ("auto"), 1 in
 *     transport "agent" with the call's docker_unavailable error ("The sandbox agent is not available: ...") in err.
 */
int agent_op_engine_instead(sandbox_t *sb);
int agent_op_refuse(sandbox_t *sb, const char *why, err_t *err); /* why: a text, NULL unknown */

typedef struct agent_op agent_op_t;

typedef struct agent_op_kind {
  op_vtable_t vt; /* .start and .stop are the base's; .result, .destroy, .control the kind's */
  /* Starts the work on the ready connection; on failure settles the op (agent_op_fail). */
  void (*run)(agent_op_t *op, agent_conn_t *c);
  /* The engine's operation for the same request (its contents taken). NULL with err set. */
  op_t *(*fallback)(agent_op_t *op, err_t *err);
} agent_op_kind_t;

struct agent_op {
  op_t op;
  const agent_op_kind_t *kind;
  agent_waiter_t waiter;
  agent_req_t *req; /* the agent request running, if any */
  agent_req_fn on_event; /* its events' handler (agent_op_send) */
  /* An op that streams to JavaScript: its output's credit, given back as the consumer takes
   * it (agent_credit_taken) and held while it is paused (agent_op_control). */
  agent_credit_t credit;
  uint64_t started_ns;
};

/* The base of every agent operation's vtable. */
void agent_op_start(op_t *o);
void agent_op_stop(op_t *o);
/* The vtable's .control of a streaming op: OP_PAUSE holds its credit, OP_RESUME gives it. */
void agent_op_control(op_t *o, int command);
/* What every kind's destroy calls first. */
void agent_op_destroy(agent_op_t *op);
/* Allocates an operation of `size` bytes (agent_op_t first) for the environment of `env`;
 * NULL with the out-of-memory error thrown. */
void *agent_op_prepare(napi_env env, const agent_op_kind_t *kind, size_t size, sandbox_t *sb);
/* Settles with err, as the call's error. */
void agent_op_fail(agent_op_t *op, err_t *err);
/* Sends the operation's request (op->req); on failure settles the op with its error.
 * `fn` gets its events (ud: the op), with the op held (op_hold) meanwhile: a handler that
 * emits to JavaScript, whose callback may cancel and free the op, finds it still there
 * (checked with op->settled / op->cancelled). 0, or -1 (settled). */
int agent_op_send(agent_op_t *op, agent_conn_t *c, const agent_msg_t *m, agent_req_fn fn);
/* The connection was lost under the request (AE_FAILED, `ev`): settles the op with it. */
void agent_op_lost(agent_op_t *op, const agent_event_t *ev);
/* The agent's typed error as a DockerSandboxError, for an operation on `path` (NULL when
 * none): the engine path's messages where there is one. */
void agent_error_to_err(const aw_error_t *e, const char *what, const char *path, err_t *err);
/* A lost connection during a call. */
void agent_failure_to_err(const err_t *fail, err_t *err);

#endif
