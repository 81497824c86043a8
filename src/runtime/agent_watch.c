/*
 * agent_watch.c - watchFiles through the agent (see agent_watch.h): one WATCH request whose
 * records (agent/PROTOCOL.md "WATCH") become events for JavaScript, one per record.
 *
 * Flow control: the agent sends records only within the credit granted on its stream, and
 * reads inotify only while it has some; each frame is credited again once its records were
 * handed to JavaScript, unless the consumer is behind (OP_PAUSE from lib/flow.js): then the
 * credit is withheld until OP_RESUME, the agent stops reading inotify, and the kernel's
 * queue (bounded by its max_queued_events) fills until it overflows, which arrives as an
 * "overflow" event. Nothing here grows with what the sandbox does: a frame is decoded and
 * emitted at once, never kept.
 *
 * Everything the agent sends is checked: a record that does not decode, or a frame that
 * ends inside one, is a protocol violation (the call fails, the connection ends), and so
 * is a RESULT whose count is not the records that came.
 *
 * Owns: the request (the directory's path) and, while it runs, the agent request.
 */
#include "runtime/agent_watch.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "napi/args.h"
#include "napi/convert.h"
#include "napi/values.h"
#include "runtime/agent_op.h"
#include "runtime/listing.h"

/* Credit on the records' stream: what the agent may send ahead of JavaScript. */
#define WATCH_WINDOW (64u * 1024u)
/* Directories one watch follows at most (the agent reports when it stops adding). */
#define WATCH_MAX_DIRS 8192u

static const char NEEDS_AGENT[] =
    "Sandbox file watching needs the sandbox agent, which %s (the Engine API cannot watch a container's files).";

typedef struct agent_watch_op {
  agent_op_t base;
  char *path; /* workdir-relative, "." for the workdir */
  int recursive;
  uint64_t events;  /* records received */
} agent_watch_op_t;

static const char *type_name(uint8_t type) {
  switch (type) {
    case AW_WEV_CREATE: return "create";
    case AW_WEV_MODIFY: return "modify";
    case AW_WEV_DELETE: return "delete";
    case AW_WEV_RENAME: return "rename";
    default: return "overflow";
  }
}

/* One record to the consumer: (type, path, kind), or ("overflow"). A scope is open. */
static void emit(agent_watch_op_t *op, const aw_wevent_t *e) {
  napi_env env = op->base.op.js->env;
  napi_value argv[3] = {nu_string(env, type_name(e->type)), nu_undefined(env), nu_undefined(env)};
  if (e->type != AW_WEV_OVERFLOW) {
    argv[1] = nu_string_n(env, (const char *)e->path.p, e->path.len); /* ill-formed UTF-8: U+FFFD */
    argv[2] = nu_string(env, e->kind == AW_WKIND_DIR ? "directory" : "file");
  }
  op_emit(&op->base.op, e->type == AW_WEV_OVERFLOW ? 1 : 3, argv);
}

/* The records of one frame, each emitted as it is decoded, inside one JavaScript scope for
 * the whole frame (not one per record: a frame holds up to 16384). 0, or -1 when the frame
 * does not hold whole, valid records. The consumer may cancel the op meanwhile (checked). */
static int take_records(agent_watch_op_t *op, const uint8_t *p, size_t len) {
  op_t *o = &op->base.op;
  jsenv_scope_t s;
  int open = op_has_events(o) && jsenv_enter(o->js, &s) == 0;
  int rc;
  for (;;) {
    aw_wevent_t e;
    rc = aw_wevent_next(&p, &len, &e);
    if (rc <= 0) break;
    op->events++;
    if (open) emit(op, &e);
    if (o->settled || o->cancelled) {
      rc = 0;
      break;
    }
  }
  if (open) jsenv_leave(o->js, &s);
  return rc < 0 ? -1 : 0;
}

static void lied(agent_watch_op_t *op, agent_req_t *req, const char *what) {
  err_t err = ERR_INIT;
  op->base.req = NULL;
  agent_req_violation(req, what);
  err_sandbox(&err, CODE_DOCKER_COMMAND_FAILED, "Unable to watch sandbox files: the sandbox agent sent %s.", what);
  agent_op_fail(&op->base, &err);
}

/* The consumer's callback (op_emit) may cancel the op: agent_op_send holds it meanwhile. */
static void watch_event(agent_req_t *req, const agent_event_t *ev, void *ud) {
  agent_watch_op_t *op = ud;
  err_t err = ERR_INIT;
  switch (ev->type) {
    case AE_DATA:
      if (ev->stream != AW_S_OUT || take_records(op, ev->data, ev->len) != 0) {
        lied(op, req, "a watch record that does not decode");
        return;
      }
      if (op->base.op.settled || op->base.op.cancelled) return;
      agent_credit_taken(&op->base.credit, req, AW_S_OUT, (uint32_t)ev->len, 0);
      return;
    case AE_RESULT:
      if (ev->res.watch.events != op->events) {
        lied(op, req, "a watch result that does not count the records it sent");
        return;
      }
      /* The directory is gone: the watch ends, as a stream ends. */
      op->base.req = NULL;
      op_settle(&op->base.op, NULL);
      return;
    case AE_ERROR:
      op->base.req = NULL;
      if (ev->error.kind == AW_E_UNSUPPORTED) {
        err_sandbox(&err, CODE_INVALID_STATE, NEEDS_AGENT, "cannot watch files in this sandbox");
        err_set_details(&err, json_pack("{s:s, s:s%}", "path", op->path, "detail",
                                        ev->error.detail.p ? (const char *)ev->error.detail.p : "",
                                        (size_t)ev->error.detail.len));
      } else if (ev->error.kind == AW_E_NOT_DIRECTORY) {
        err_sandbox(&err, CODE_INVALID_PATH, "Sandbox path is not a directory: %s", op->path);
      } else {
        agent_error_to_err(&ev->error, "watch sandbox directory", op->path, &err);
      }
      agent_op_fail(&op->base, &err);
      return;
    case AE_FAILED:
      agent_op_lost(&op->base, ev);
      return;
    default:
      return;
  }
}

static void watch_run(agent_op_t *base, agent_conn_t *c) {
  agent_watch_op_t *op = (agent_watch_op_t *)base;
  agent_msg_t m = {.type = AW_T_WATCH};
  m.u.watch.flags = op->recursive ? AW_WATCH_RECURSIVE : 0;
  m.u.watch.window = WATCH_WINDOW;
  m.u.watch.max_watches = WATCH_MAX_DIRS;
  const char *path = strcmp(op->path, ".") == 0 ? "" : op->path;
  m.u.watch.path = (aw_bytes_t){(const uint8_t *)path, (uint32_t)strlen(path)};
  agent_op_send(base, c, &m, watch_event);
}

/* The agent cannot run here: there is nothing to fall back on. */
static op_t *watch_fallback(agent_op_t *base, err_t *err) {
  (void)base;
  err_sandbox(err, CODE_INVALID_STATE, NEEDS_AGENT, "cannot run in this sandbox");
  return NULL;
}


static void watch_destroy(op_t *o) {
  agent_watch_op_t *op = (agent_watch_op_t *)o;
  agent_op_destroy(&op->base);
  free(op->path);
}

static const agent_op_kind_t watch_kind = {
    .vt = {.name = "agentWatchFiles", .start = agent_op_start, .stop = agent_op_stop, .destroy = watch_destroy,
           .control = agent_op_control},
    .run = watch_run,
    .fallback = watch_fallback,
};

/* options: { path?: string (default "."), recursive?: boolean (default false) }. The path
 * follows listFiles' rules (a directory beneath the workdir). NULL with err set. */
static char *parse(napi_env env, napi_value *argv, int *recursive, err_t *err) {
  napi_value options = argv[1]; /* undefined: every default */
  if (!nu_is_undefined(env, options) && !nu_is_record(env, options)) {
    err_type(err, "options must be an object.");
    return NULL;
  }
  napi_value r = nu_get(env, options, "recursive");
  bool on = false;
  if (!nu_is_undefined(env, r) && (nu_typeof(env, r) != napi_boolean || napi_get_value_bool(env, r, &on) != napi_ok)) {
    err_type(err, "recursive must be a boolean.");
    return NULL;
  }
  *recursive = on;
  char *path = listing_parse(env, options, err);
  if (path == NULL) return NULL;
  size_t n = strlen(path);
  while (n > 1 && path[n - 1] == '/') path[--n] = 0; /* "dir/" is "dir" */
  return path;
}

napi_value agent_watch_prepare(napi_env env, sandbox_t *sb, napi_value *argv) {
  jsenv_t *js = jsenv_get(env);
  err_t err = ERR_INIT;
  int recursive = 0;
  char *path = parse(env, argv, &recursive, &err);
  if (path == NULL) return convert_throw_err(js, &err);
  agent_watch_op_t *op = agent_op_prepare(env, &watch_kind, sizeof(*op), sb);
  if (op == NULL) {
    free(path);
    return NULL;
  }
  op->path = path;
  op->recursive = recursive;
  return op_prepared(&op->base.op, NULL);
}

napi_value agent_watch_engine_prepare(napi_env env, sandbox_t *sb, napi_value *argv) {
  jsenv_t *js = jsenv_get(env);
  err_t err = ERR_INIT;
  int recursive = 0;
  char *path = parse(env, argv, &recursive, &err);
  if (path != NULL) {
    free(path);
    err_sandbox(&err, CODE_INVALID_STATE, NEEDS_AGENT,
                sb->transport == TRANSPORT_ENGINE ? "this sandbox does not use (transport \"engine\")"
                                                  : "cannot run in this sandbox");
  }
  return convert_throw_err(js, &err);
}
