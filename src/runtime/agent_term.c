/*
 * agent_term.c - terminals through the agent (see agent_term.h): every call on a terminal
 * is one agent request of the TERM_* family (agent/PROTOCOL.md "Terminals"), made by one
 * operation whose action says which:
 *
 *   start   TERM_OPEN, no flags: STARTED, then the RESULT at once -> { id, pid }
 *   attach  TERM_ATTACH, no flags: the same for a terminal that exists -> { id, pid }
 *   write   TERM_ATTACH `input`: the bytes on stream 1, then END; settles once they are in
 *           the terminal (a program that does not read holds the call back)
 *   output  TERM_ATTACH `output` from `since`: one event (offset, bytes) per record, until
 *           the terminal ends; back-pressure as watchFiles' (the credit is withheld while
 *           the consumer is paused, so the keeper stops reading the pty)
 *   wait    TERM_ATTACH `wait`: settles at the terminal's end -> { exitCode, signal }
 *   resize  TERM_RESIZE -> { cols, rows }
 *   signal  TERM_SIGNAL -> { delivered }
 *   list    TERM_LIST -> [{ id }]
 *
 * The terminal itself is the keeper's in the sandbox; the addon keeps nothing of it but
 * the ids this handle started, for maxProcesses (a terminal counts as a managed process):
 * a start at the limit asks the keeper of each terminal not known to have ended whether
 * it has, before it refuses.
 *
 * Everything the agent sends is checked: one STARTED before the RESULT, records whose
 * offsets follow one another and end where the RESULT's head says, a size in range (the
 * decoder's). A record that breaks that is a protocol violation (the call fails, the
 * connection ends).
 *
 * Owns: the operation's request (spec, id, input bytes) and, while it runs, the agent
 * request; the sandbox's terminal registry (attached to it).
 */
#include "runtime/agent_term.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rand.h"
#include "napi/args.h"
#include "napi/checks.h"
#include "napi/convert.h"
#include "napi/values.h"
#include "runtime/agent_exec.h"
#include "runtime/agent_op.h"
#include "runtime/exec_op.h"
#include "runtime/proc_registry.h"
#include "runtime/engine_term.h"
#include "runtime/term_req.h"

/* Credit on the output stream: what the agent may send ahead of JavaScript. */
#define TERM_WINDOW (256u * 1024u)
/* Terminals one handle remembers (each counts against maxProcesses until it ended). */
#define TERM_REGISTRY_MAX 4096u

static const char NEEDS_AGENT[] =
    "Sandbox terminals need the sandbox agent, which %s.";


/* ---- the registry: the terminals this handle started, for maxProcesses ---- */

typedef struct term_entry {
  char id[AW_MAX_TERM_ID + 1];
  int ended;
} term_entry_t;

typedef struct term_registry {
  term_entry_t *items;
  size_t count, cap;
} term_registry_t;

static const char registry_key = 0;

static void registry_free(void *p) {
  term_registry_t *t = p;
  free(t->items);
  free(t);
}

static term_registry_t *registry_of(sandbox_t *sb, int create) {
  if (!create) return sandbox_attached(sb, &registry_key);
  return sandbox_attached_new(sb, &registry_key, sizeof(term_registry_t), registry_free);
}

size_t agent_term_live(sandbox_t *sb) {
  term_registry_t *t = registry_of(sb, 0);
  size_t n = 0;
  for (size_t i = 0; t != NULL && i < t->count; i++) n += !t->items[i].ended;
  return n;
}

static term_entry_t *registry_find(term_registry_t *t, const char *id) {
  for (size_t i = 0; t != NULL && i < t->count; i++)
    if (strcmp(t->items[i].id, id) == 0) return &t->items[i];
  return NULL;
}

/* The terminal `id` ended (or is gone): it no longer counts. */
static void registry_ended(sandbox_t *sb, const char *id) {
  term_entry_t *e = registry_find(registry_of(sb, 0), id);
  if (e != NULL) e->ended = 1;
}

/* Drops the ended entries and adds `id`. 0, or -1 when out of memory or full. */
static int registry_add(sandbox_t *sb, const char *id) {
  term_registry_t *t = registry_of(sb, 1);
  if (t == NULL) return -1;
  size_t w = 0;
  for (size_t i = 0; i < t->count; i++)
    if (!t->items[i].ended) t->items[w++] = t->items[i];
  t->count = w;
  if (t->count >= TERM_REGISTRY_MAX) return -1;
  if (t->count == t->cap) {
    size_t cap = t->cap ? t->cap * 2 : 8;
    term_entry_t *items = realloc(t->items, cap * sizeof(*items));
    if (items == NULL) return -1;
    t->items = items;
    t->cap = cap;
  }
  snprintf(t->items[t->count].id, sizeof(t->items[t->count].id), "%s", id);
  t->items[t->count++].ended = 0;
  return 0;
}

/* The next terminal after index *at not known to have ended, or NULL. */
static const char *registry_next_unknown(sandbox_t *sb, size_t *at) {
  term_registry_t *t = registry_of(sb, 0);
  for (; t != NULL && *at < t->count; (*at)++)
    if (!t->items[*at].ended) return t->items[(*at)++].id;
  return NULL;
}

/* ---- the operation ---- */

typedef struct agent_term_op {
  agent_op_t base;
  term_req_t r; /* the call, read once (term_req.h) */
  /* start at the limit: the registry entry being asked about (TERM_ATTACH) */
  int checking;
  size_t check_at;
  char check_id[AW_MAX_TERM_ID + 1];
  /* what the agent said */
  int started;
  uint32_t pid;
  uint64_t next; /* output: the offset the next record must have */
  int have_next;
  aw_term_res_t res;
  int delivered;
  char **ids; /* list */
  size_t nids;
} agent_term_op_t;

static void term_event(agent_req_t *req, const agent_event_t *ev, void *ud);
static void open_or_check(agent_term_op_t *op, agent_conn_t *c);

static void lied(agent_term_op_t *op, agent_req_t *req, const char *what) {
  err_t err = ERR_INIT;
  op->base.req = NULL;
  agent_req_violation(req, what);
  err_sandbox(&err, CODE_DOCKER_COMMAND_FAILED, "Unable to use sandbox terminal: the sandbox agent sent %s.", what);
  agent_op_fail(&op->base, &err);
}

static void term_error(agent_term_op_t *op, const aw_error_t *e) {
  err_t err = ERR_INIT;
  op->base.req = NULL;
  if (e->kind == AW_E_NOT_FOUND && op->r.action != TA_START && op->r.action != TA_LIST) { /* an id was asked for */
    registry_ended(op->base.op.sb, op->r.id);
    err_sandbox(&err, CODE_PROCESS, "Unknown sandbox terminal: %s", op->r.id);
  } else if (e->kind == AW_E_SPAWN) {
    char why[128];
    snprintf(why, sizeof(why), "%s", strerror(e->err ? e->err : EIO));
    if (e->stage == AW_STAGE_CWD)
      err_sandbox(&err, CODE_PROCESS, "Sandbox terminal cannot start in %s: %s", op->r.spec.workdir, why);
    else
      err_sandbox(&err, CODE_PROCESS, "Sandbox terminal command cannot start: %s: %s",
                  op->r.spec.argc ? op->r.spec.argv[0] : "", why);
  } else if (e->kind == AW_E_UNSUPPORTED) {
    err_sandbox(&err, CODE_INVALID_STATE, NEEDS_AGENT, "cannot hold terminals in this sandbox");
  } else if (op->r.action == TA_LIST) {
    err_sandbox(&err, CODE_DOCKER_COMMAND_FAILED, "Unable to list sandbox terminals (%s)", aw_error_name(e->kind));
  } else {
    err_sandbox(&err, CODE_DOCKER_COMMAND_FAILED, "Unable to use sandbox terminal: %s (%s)", op->r.id,
                aw_error_name(e->kind));
  }
  err_set_details(&err, json_pack("{s:s, s:s, s:i, s:s%}", "agentError", aw_error_name(e->kind), "terminal", op->r.id,
                                  "errno", (int)e->err, "detail", e->detail.p ? (const char *)e->detail.p : "",
                                  (size_t)e->detail.len));
  agent_op_fail(&op->base, &err);
}

/* One output record to the consumer: (offset, bytes). 0, or -1 when it does not follow
 * the one before. */
static int take_record(agent_term_op_t *op, const uint8_t *p, size_t len) {
  if (len <= AW_TERM_REC_FIXED) return -1;
  uint64_t off = 0;
  for (int i = 0; i < 8; i++) off = (off << 8) | p[i]; /* big-endian, as every integer on the wire */
  size_t n = len - AW_TERM_REC_FIXED;
  if (op->have_next ? off != op->next : off + n < off) return -1;
  op->next = off + n;
  op->have_next = 1;
  op_t *o = &op->base.op;
  jsenv_scope_t s;
  if (!op_has_events(o) || jsenv_enter(o->js, &s) != 0) return 0;
  /* Offsets beyond 2^53 are not safe integers: a terminal would need 9 PB of output. */
  napi_value argv[2] = {nu_number(o->js->env, (double)off), nu_uint8array(o->js->env, p + AW_TERM_REC_FIXED, n)};
  op_emit(o, 2, argv);
  jsenv_leave(o->js, &s);
  return 0;
}

static void on_result(agent_term_op_t *op, agent_req_t *req, const agent_event_t *ev) {
  sandbox_t *sb = op->base.op.sb;
  if (op->r.action == TA_LIST) {
    aw_list_t it = ev->res.term_list.ids;
    size_t n = it.count;
    op->ids = calloc(n ? n : 1, sizeof(char *));
    aw_bytes_t id;
    while (op->ids != NULL && aw_list_next(&it, &id) == 1) {
      char *s = strndup((const char *)id.p, id.len);
      if (s == NULL) break;
      op->ids[op->nids++] = s;
    }
    op->base.req = NULL;
    err_t err = ERR_INIT;
    if (op->ids == NULL || op->nids != n) err_oom(&err);
    op_settle(&op->base.op, &err);
    return;
  }
  if (op->r.action == TA_SIGNAL) {
    op->delivered = ev->res.signal.delivered;
    op->base.req = NULL;
    op_settle(&op->base.op, NULL);
    return;
  }
  op->res = ev->res.term;
  /* STARTED comes first for OPEN and ATTACH; RESIZE has none. */
  if (op->r.action != TA_RESIZE && !op->started) {
    lied(op, req, "a terminal result before its STARTED");
    return;
  }
  if (op->r.action == TA_OUTPUT && op->have_next && op->res.head != op->next) {
    lied(op, req, "a terminal result whose head is not where its output ended");
    return;
  }
  if (op->res.tail > op->res.head) {
    lied(op, req, "a terminal result whose tail is past its head");
    return;
  }
  /* wait and output end at the terminal's end (PROTOCOL.md "Terminals"): a RESULT that
   * does not say so is not an exit, nor the output's end. */
  if ((op->r.action == TA_WAIT || op->r.action == TA_OUTPUT) && !op->checking && !(op->res.flags & AW_TERMF_ENDED)) {
    lied(op, req, "a wait or output result for a terminal that has not ended");
    return;
  }
  if (op->checking) { /* start at the limit: one registry entry answered */
    op->checking = 0;
    if (op->res.flags & AW_TERMF_ENDED) registry_ended(sb, op->check_id);
    op->started = 0;
    op->base.req = NULL;
    open_or_check(op, agent_op_conn(sb));
    return;
  }
  if (op->res.flags & AW_TERMF_ENDED) registry_ended(sb, op->r.id);
  op->base.req = NULL;
  err_t err = ERR_INIT;
  if (op->r.action == TA_START && registry_add(sb, op->r.id) != 0) {
    /* The terminal runs; this handle cannot count it. Said rather than hidden. */
    err_oom(&err);
  }
  op_settle(&op->base.op, &err);
}

/* The consumer's callback (op_emit) may cancel the op: agent_op_send holds it meanwhile. */
static void term_event(agent_req_t *req, const agent_event_t *ev, void *ud) {
  agent_term_op_t *op = ud;
  switch (ev->type) {
    case AE_STARTED:
      if (op->started) {
        lied(op, req, "a second STARTED for a terminal");
        return;
      }
      op->started = 1;
      op->pid = ev->started.pid;
      return;
    case AE_DATA:
      if (op->r.action != TA_OUTPUT || op->checking || ev->stream != AW_S_OUT || !op->started ||
          take_record(op, ev->data, ev->len) != 0) {
        lied(op, req, "terminal output that does not follow the output before it");
        return;
      }
      if (op->base.op.settled || op->base.op.cancelled) return;
      agent_credit_taken(&op->base.credit, req, AW_S_OUT, (uint32_t)ev->len, 0);
      return;
    case AE_RESULT:
      on_result(op, req, ev);
      return;
    case AE_ERROR:
      if (op->checking && ev->error.kind == AW_E_NOT_FOUND) { /* that one is gone */
        op->checking = 0;
        registry_ended(op->base.op.sb, op->check_id);
        op->started = 0;
        op->base.req = NULL;
        open_or_check(op, agent_op_conn(op->base.op.sb));
        return;
      }
      term_error(op, &ev->error);
      return;
    case AE_FAILED:
      agent_op_lost(&op->base, ev);
      return;
    default:
      return;
  }
}

static aw_bytes_t bytes_of(const char *s) { return (aw_bytes_t){(const uint8_t *)s, (uint32_t)strlen(s)}; }

static void attach_msg(agent_msg_t *m, const char *id, uint32_t flags, uint32_t window, uint64_t since) {
  memset(m, 0, sizeof(*m));
  m->type = AW_T_TERM_ATTACH;
  m->u.term_attach.flags = flags;
  m->u.term_attach.window = window;
  m->u.term_attach.since = since;
  m->u.term_attach.term_id = bytes_of(id);
}

static void send_open(agent_term_op_t *op, agent_conn_t *c) {
  err_t err = ERR_INIT;
  agent_exec_msg_t x;
  if (agent_exec_msg_init(&x, &op->r.spec, 0, 0) != 0) {
    err_oom(&err);
    agent_op_fail(&op->base, &err);
    return;
  }
  agent_msg_t m = {.type = AW_T_TERM_OPEN};
  aw_term_open_enc_t *t = &m.u.term_open;
  t->cols = op->r.cols;
  t->rows = op->r.rows;
  t->scrollback = op->r.scrollback;
  t->term_id = bytes_of(op->r.id);
  t->cwd = x.msg.u.exec.cwd;
  t->argv = x.msg.u.exec.argv;
  t->argv_count = x.msg.u.exec.argv_count;
  t->env = x.msg.u.exec.env;
  t->env_count = x.msg.u.exec.env_count;
  agent_op_send(&op->base, c, &m, term_event);
  agent_exec_msg_free(&x);
}

/* start: under the limit, TERM_OPEN; at it, the next terminal not known to have ended is
 * asked first; when none is left to ask, the limit's error. */
static void open_or_check(agent_term_op_t *op, agent_conn_t *c) {
  sandbox_t *sb = op->base.op.sb;
  size_t used = proc_registry_of(sb)->count + agent_term_live(sb) + engine_term_live(sb);
  if ((int64_t)used < sb->runtime.max_processes) {
    send_open(op, c);
    return;
  }
  const char *id = registry_next_unknown(sb, &op->check_at);
  if (id == NULL) {
    err_t err = ERR_INIT;
    char msg[128];
    snprintf(msg, sizeof(msg), "Sandbox process limit reached (%zu >= %lld).", used,
             (long long)sb->runtime.max_processes);
    err_sandbox(&err, CODE_PROCESS, "%s", msg);
    agent_op_fail(&op->base, &err);
    return;
  }
  snprintf(op->check_id, sizeof(op->check_id), "%s", id);
  op->checking = 1;
  agent_msg_t m;
  attach_msg(&m, op->check_id, 0, 0, 0);
  agent_op_send(&op->base, c, &m, term_event);
}

static void term_run(agent_op_t *base, agent_conn_t *c) {
  agent_term_op_t *op = (agent_term_op_t *)base;
  agent_msg_t m;
  switch (op->r.action) {
    case TA_START:
      open_or_check(op, c);
      return;
    case TA_ATTACH: attach_msg(&m, op->r.id, 0, 0, 0); break;
    case TA_OUTPUT: attach_msg(&m, op->r.id, AW_TERM_OUTPUT, TERM_WINDOW, op->r.since); break;
    case TA_WAIT: attach_msg(&m, op->r.id, AW_TERM_WAIT, 0, 0); break;
    case TA_WRITE: attach_msg(&m, op->r.id, AW_TERM_INPUT, 0, 0); break;
    case TA_RESIZE:
      memset(&m, 0, sizeof(m));
      m.type = AW_T_TERM_RESIZE;
      m.u.term_resize.cols = op->r.cols;
      m.u.term_resize.rows = op->r.rows;
      m.u.term_resize.term_id = bytes_of(op->r.id);
      break;
    case TA_SIGNAL:
      memset(&m, 0, sizeof(m));
      m.type = AW_T_TERM_SIGNAL;
      m.u.term_signal.signal = (uint8_t)op->r.signal;
      m.u.term_signal.term_id = bytes_of(op->r.id);
      break;
    default:
      memset(&m, 0, sizeof(m));
      m.type = AW_T_TERM_LIST;
      break;
  }
  if (agent_op_send(base, c, &m, term_event) != 0 || op->r.action != TA_WRITE) return;
  if (agent_req_write(base->req, op->r.input, op->r.input_len, 1) != 0) {
    err_t err = ERR_INIT;
    agent_req_cancel(base->req);
    base->req = NULL;
    err_oom(&err);
    agent_op_fail(base, &err);
    return;
  }
  free(op->r.input);
  op->r.input = NULL;
}

/* The agent cannot run here ("auto"): the engine path's terminals (engine_term.c) take
 * the same request. */
static op_t *term_fallback(agent_op_t *base, err_t *err) {
  agent_term_op_t *op = (agent_term_op_t *)base;
  op_t *child = engine_term_op(base->op.js, base->op.sb, &op->r);
  if (child == NULL) err_oom(err);
  return child;
}


static napi_value term_value(op_t *o) {
  agent_term_op_t *op = (agent_term_op_t *)o;
  term_answer_t a = {.pid = op->pid, .exit_code = (int)op->res.code,
                     .signal = op->res.how == AW_EXIT_SIGNAL ? (int)op->res.signal : 0, .cols = op->res.cols,
                     .rows = op->res.rows, .delivered = op->delivered, .ids = op->ids, .nids = op->nids};
  return term_req_value(o->js->env, &op->r, &a);
}

static void term_destroy(op_t *o) {
  agent_term_op_t *op = (agent_term_op_t *)o;
  agent_op_destroy(&op->base);
  term_req_free(&op->r);
  for (size_t i = 0; i < op->nids; i++) free(op->ids[i]);
  free(op->ids);
}

static const agent_op_kind_t term_kind = {
    .vt = {.name = "agentTerminal", .start = agent_op_start, .stop = agent_op_stop, .result = term_value,
           .destroy = term_destroy, .control = agent_op_control},
    .run = term_run,
    .fallback = term_fallback,
};

napi_value agent_term_prepare(napi_env env, sandbox_t *sb, napi_value *argv) {
  jsenv_t *js = jsenv_get(env);
  err_t err = ERR_INIT;
  term_action_t action = TA_LIST;
  if (term_req_action(env, argv[2], &action, &err) != 0) return convert_throw_err(js, &err);
  agent_term_op_t *op = agent_op_prepare(env, &term_kind, sizeof(*op), sb);
  if (op == NULL) return NULL;
  op->r.action = action;
  if (term_req_parse(env, argv[1], sb, &op->r, &err) != 0) return op_prepared(&op->base.op, &err);
  return op_prepared(&op->base.op, NULL);
}
