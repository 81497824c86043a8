/*
 * agent_op.c - the sandbox's agent connection, the decision to fall back on the engine,
 * and the base of the agent operations (see agent_op.h).
 */
#include "runtime/agent_op.h"

#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "napi/convert.h"
#include "napi/values.h"

typedef struct agent_state {
  agent_conn_t *conn;
} agent_state_t;

/* The key the state is attached to its sandbox under. */
static const char state_key = 0;

static void state_free(void *p) {
  agent_state_t *st = p;
  agent_conn_free(st->conn);
  free(st);
}

static agent_state_t *state_of(sandbox_t *sb, int create) {
  if (!create) return sandbox_attached(sb, &state_key);
  return sandbox_attached_new(sb, &state_key, sizeof(agent_state_t), state_free);
}

agent_conn_t *agent_op_conn(sandbox_t *sb) {
  agent_state_t *st = state_of(sb, 1);
  if (st == NULL) return NULL;
  if (st->conn == NULL) st->conn = agent_conn_new(sb->eng, sb->container_name, sb->workdir, sb->readonly_rootfs);
  return st->conn;
}

void agent_op_shutdown(sandbox_t *sb) {
  agent_state_t *st = state_of(sb, 0);
  if (st != NULL) agent_conn_shutdown(st->conn);
}

/* ---- falling back on the engine ---- */

int agent_op_engine_instead(sandbox_t *sb) {
  agent_state_t *st = state_of(sb, 0);
  return sb->transport == TRANSPORT_AUTO && st != NULL && st->conn != NULL && agent_conn_unusable(st->conn);
}

int agent_op_refuse(sandbox_t *sb, const char *why, err_t *err) {
  if (sb->transport != TRANSPORT_AGENT) return 0;
  err_sandbox(err, CODE_DOCKER_UNAVAILABLE, "The sandbox agent is not available: %s", why ? why : "unknown reason");
  return 1;
}

/* ---- the base ---- */

void *agent_op_prepare(napi_env env, const agent_op_kind_t *kind, size_t size, sandbox_t *sb) {
  agent_op_t *op = op_prepare(env, &kind->vt, size, sb);
  if (op != NULL) op->kind = kind;
  return op;
}

void agent_op_fail(agent_op_t *op, err_t *err) { op_settle(&op->op, err); }

static void held_event(agent_req_t *req, const agent_event_t *ev, void *ud) {
  agent_op_t *op = ud;
  op_hold(&op->op);
  op->on_event(req, ev, op);
  op_unhold(&op->op);
}

int agent_op_send(agent_op_t *op, agent_conn_t *c, const agent_msg_t *m, agent_req_fn fn) {
  err_t err = ERR_INIT;
  op->on_event = fn;
  op->req = agent_req_start(c, m, held_event, op, &err);
  if (op->req != NULL) return 0;
  agent_op_fail(op, &err);
  err_clear(&err);
  return -1;
}

void agent_op_lost(agent_op_t *op, const agent_event_t *ev) {
  err_t err = ERR_INIT;
  op->req = NULL;
  agent_failure_to_err(ev->fail, &err);
  agent_op_fail(op, &err);
  err_clear(&err);
}

/* The agent cannot serve this call: the engine does (auto), or the call fails (agent). */
static void fall_back(agent_op_t *op, const err_t *why) {
  err_t err = ERR_INIT;
  if (agent_op_refuse(op->op.sb, why ? why->message : NULL, &err)) {
    op_settle(&op->op, &err);
    return;
  }
  op_t *child = op->kind->fallback(op, &err);
  if (child == NULL) {
    if (!err_is_set(&err)) err_oom(&err);
    op_settle(&op->op, &err);
    return;
  }
  op_delegate(&op->op, child);
}

static void on_ready(agent_waiter_t *w, const err_t *err) {
  agent_op_t *op = (agent_op_t *)((char *)w - offsetof(agent_op_t, waiter));
  if (err != NULL) fall_back(op, err);
  else op->kind->run(op, agent_op_conn(op->op.sb));
}

void agent_op_start(op_t *o) {
  agent_op_t *op = (agent_op_t *)o;
  op->started_ns = uv_hrtime();
  agent_conn_t *c = agent_op_conn(o->sb);
  err_t err = ERR_INIT;
  if (c == NULL) {
    err_oom(&err);
    op_settle(o, &err);
    return;
  }
  op->waiter.fn = on_ready;
  int rc = agent_conn_when_ready(c, &op->waiter, &err);
  if (rc == 1) op->kind->run(op, c);
  else if (rc < 0) fall_back(op, &err);
  err_clear(&err);
}

/* The connection if there is one (never made here). */
static agent_conn_t *conn_of(sandbox_t *sb) {
  agent_state_t *st = state_of(sb, 0);
  return st ? st->conn : NULL;
}

void agent_op_stop(op_t *o) {
  agent_op_t *op = (agent_op_t *)o;
  agent_conn_t *c = conn_of(o->sb);
  if (c != NULL) agent_conn_cancel_wait(c, &op->waiter);
  agent_req_cancel(op->req);
  op->req = NULL;
}

void agent_op_control(op_t *o, int command) {
  agent_op_t *op = (agent_op_t *)o;
  if (command == OP_PAUSE) agent_credit_pause(&op->credit);
  else agent_credit_resume(&op->credit, op->req);
}

void agent_op_destroy(agent_op_t *op) {
  agent_conn_t *c = conn_of(op->op.sb);
  if (c != NULL) agent_conn_cancel_wait(c, &op->waiter);
  agent_req_cancel(op->req);
  op->req = NULL;
}

void agent_failure_to_err(const err_t *fail, err_t *err) {
  err_set(err, ERRK_SANDBOX, fail && fail->code ? fail->code : CODE_DOCKER_COMMAND_FAILED, "%s",
          fail && fail->message ? fail->message : "The sandbox agent's connection failed.");
}

void agent_error_to_err(const aw_error_t *e, const char *what, const char *path, err_t *err) {
  const char *p = path ? path : "";
  switch (e->kind) {
    case AW_E_NOT_FOUND:
    case AW_E_NOT_DIRECTORY:
      err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, "Sandbox file does not exist: %s", p);
      break;
    case AW_E_SYMLINK:
      err_sandbox(err, CODE_INVALID_PATH, "Sandbox path passes through a symbolic link: %s", p);
      break;
    case AW_E_NOT_REGULAR:
    case AW_E_IS_DIRECTORY:
      err_sandbox(err, CODE_INVALID_PATH, "Sandbox path is not a regular file: %s", p);
      break;
    case AW_E_OUTSIDE:
      err_sandbox(err, CODE_INVALID_PATH, "Sandbox path cannot leave the workspace: %s", p);
      break;
    default:
      err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, "Unable to %s: %s (%s)", what, p, aw_error_name(e->kind));
      break;
  }
  err_set_details(err, json_pack("{s:s, s:s, s:i, s:s%}", "agentError", aw_error_name(e->kind), "path", p, "errno",
                                 (int)e->err, "detail", e->detail.p ? (const char *)e->detail.p : "",
                                 (size_t)e->detail.len));
}
