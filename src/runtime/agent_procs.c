/*
 * agent_procs.c - managed processes through the in-sandbox agent: the agent's carrier
 * (proc_registry.h) and the agent table's startProcess.
 *
 * The launch is the engine path's (the original's launcher and wrapper scripts, the
 * marker, "start" on stdin), sent as one detached EXEC: its output streams back as the
 * agent's DATA, and being detached it outlives the agent and the host, as an engine exec
 * outlives a client that went away. The group is checked with GROUP_ALIVE and stopped
 * with SIGNAL (TERM, the grace period polled with GROUP_ALIVE, KILL), each a request of
 * a few hundred microseconds instead of a shell polling every 50 ms.
 *
 * When the agent cannot serve a check or a stop (it died with the launch and cannot run
 * again, or the container stopped), the engine's carrier does, in either transport (the
 * group is found by id either way). A launch whose agent died keeps its record running
 * (proc_rec_orphaned): the process lives on, and stopProcess finds it; if the container
 * itself stopped, the engine says so and the process is gone.
 *
 * Owns: a group call owns its reference on the record, its agent request or waiter, its
 * poll timer, and the engine's handle once the engine took over.
 */
#include "runtime/agent_procs.h"

#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "engine/timer.h"
#include "napi/args.h"
#include "napi/values.h"
#include "runtime/agent_exec.h"
#include "runtime/agent_op.h"
#include "runtime/proc.h"
#include "runtime/proc_registry.h"
#include "runtime/table.h"

#define LAUNCH_WINDOW (256u * 1024u)
#define FIRST_POLL_MS 1u
#define MAX_POLL_MS 50u
#define KILL_WAIT_MS 1000u


/* ---- the launch ---- */

static void on_launch_event(agent_req_t *req, const agent_event_t *ev, void *ud) {
  proc_rec_t *r = ud;
  switch (ev->type) {
    case AE_DATA:
      /* Output goes to the tails, which keep the last bytes: credit is given back at once. */
      proc_rec_ref(r);
      proc_rec_output(r, ev->stream == AW_S_ERR ? 2 : 1, ev->data, ev->len);
      if (r->link == req) agent_req_grant(req, ev->stream, (uint32_t)ev->len);
      proc_rec_unref(r);
      return;
    case AE_STARTED:
    case AE_EXITED:
      return; /* the marker names the group; the end is the RESULT, once the output is over */
    case AE_RESULT:
      proc_rec_ended(r, ev->exit.code);
      return;
    case AE_ERROR:
      /* The launcher's shell could not start (runc's exit code for it), or the agent is
       * leaving. */
      proc_rec_ended(r, ev->error.kind == AW_E_SPAWN ? 126 : 1);
      return;
    case AE_FAILED:
      /* The agent died. Before the marker the wrapper sees the end of its input and exits
       * without running anything; after it the process may live on. */
      if (r->marker_seen) proc_rec_orphaned(r);
      else proc_rec_ended(r, 1);
      return;
  }
}

static int launch(sandbox_t *sb, proc_rec_t *r, exec_spec_t *spec, err_t *err) {
  agent_conn_t *c = agent_op_conn(sb);
  if (!agent_conn_is_ready(c)) {
    /* The agent went away between the start's wait for it and now. */
    if (agent_op_refuse(sb, "its connection was lost.", err)) return -1;
    r->carrier = engine_runtime_ops.procs;
    return engine_runtime_ops.procs->launch(sb, r, spec, err);
  }
  agent_exec_msg_t x;
  if (agent_exec_msg_init(&x, spec, AW_EXEC_DETACHED | AW_EXEC_STDIN, LAUNCH_WINDOW) != 0) return err_oom(err);
  proc_rec_ref(r); /* the link's */
  r->link = agent_req_start(c, &x.msg, on_launch_event, r, err);
  agent_exec_msg_free(&x);
  exec_spec_free(spec);
  if (r->link == NULL) {
    proc_rec_unref(r);
    return -1;
  }
  return 0;
}

static void go(proc_rec_t *r) {
  static const uint8_t start[] = "start\n";
  if (agent_req_write(r->link, start, sizeof(start) - 1, 1) != 0) proc_rec_cut(r); /* out of memory */
}

/* CANCEL: the agent ends the launch's whole tree (the wrapper too, though setsid made it
 * a session of its own: the tree follows parent links). */
static void cut(proc_rec_t *r, void *link) {
  (void)r;
  agent_req_cancel(link);
}

/* ---- checks and stops of a group ---- */

enum { GC_CHECK = 0, GC_STOP };
enum { PH_FIRST = 0, PH_TERM, PH_WAIT_TERM, PH_KILL, PH_WAIT_KILL };

typedef struct group_call {
  proc_rec_t *rec;
  int kind;
  proc_check_done_fn checked;
  proc_stop_done_fn stopped;
  void *ud;
  int64_t grace_ms;
  int phase;
  uint64_t started_ms, deadline_ms;
  uint32_t poll_ms;
  agent_waiter_t waiter;
  int waiting;
  agent_req_t *req;
  sbx_timer_t *timer;
  void *engine; /* the engine carrier's handle, once it took over */
} group_call_t;

static void call_step(group_call_t *g);

static uint64_t now_ms(void) { return uv_hrtime() / 1000000u; }

static void call_free(group_call_t *g) {
  agent_conn_t *c = agent_op_conn(g->rec->sb);
  if (g->waiting && c != NULL) agent_conn_cancel_wait(c, &g->waiter);
  agent_req_cancel(g->req);
  sbx_timer_cancel(g->timer);
  if (g->engine != NULL) engine_runtime_ops.procs->cancel(g->engine);
  proc_rec_unref(g->rec);
  free(g);
}

static void call_done(group_call_t *g, int answer, err_t *err) {
  group_call_t copy = *g;
  g->engine = NULL;
  g->req = NULL;
  g->timer = NULL;
  g->waiting = 0;
  call_free(g);
  if (copy.kind == GC_CHECK) copy.checked(copy.ud, err ? -1 : answer, err);
  else copy.stopped(copy.ud, answer, err);
}

/* The engine's answer, passed on. */
static void on_engine_checked(void *ud, int alive, err_t *err) {
  group_call_t *g = ud;
  g->engine = NULL;
  call_done(g, alive, err);
}

static void on_engine_stopped(void *ud, int gone, err_t *err) {
  group_call_t *g = ud;
  g->engine = NULL;
  call_done(g, gone, err);
}

/* The agent cannot answer (it died with the launch and no new one starts, the container
 * stopped): the engine's carrier does, in either transport, since what is asked is the
 * state of a process the caller already has, not a new operation. */
static void hand_over(group_call_t *g, const err_t *why) {
  (void)why;
  err_t err = ERR_INIT;
  if (g->kind == GC_CHECK) {
    g->engine = engine_runtime_ops.procs->check_group(g->rec, on_engine_checked, g, &err);
  } else {
    /* What is left of the grace period (all of it before TERM was sent). */
    int64_t grace = g->grace_ms;
    if (g->phase >= PH_WAIT_TERM) {
      uint64_t spent = now_ms() - g->started_ms;
      grace = (uint64_t)grace > spent ? grace - (int64_t)spent : 0;
    }
    g->engine = engine_runtime_ops.procs->stop_group(g->rec, grace, on_engine_stopped, g, &err);
  }
  if (g->engine == NULL) {
    call_done(g, 0, &err);
    err_clear(&err);
  }
}

static void on_poll_timer(void *ud) {
  group_call_t *g = ud;
  g->timer = NULL;
  call_step(g);
}

/* The group is still there while waiting: ask again soon (1 ms, doubling up to 50). */
static void poll_again(group_call_t *g) {
  uint64_t now = now_ms();
  if (now >= g->deadline_ms) {
    g->phase = g->phase == PH_WAIT_TERM ? PH_KILL : PH_WAIT_KILL + 1;
    if (g->phase > PH_WAIT_KILL) {
      call_done(g, 0, NULL); /* it did not go */
      return;
    }
    call_step(g);
    return;
  }
  uint64_t wait = g->poll_ms;
  if (wait > g->deadline_ms - now) wait = g->deadline_ms - now;
  g->poll_ms = g->poll_ms * 2 > MAX_POLL_MS ? MAX_POLL_MS : g->poll_ms * 2;
  g->timer = sbx_timer_start(engine_io(g->rec->sb->eng), wait, on_poll_timer, g);
}

static void on_call_event(agent_req_t *req, const agent_event_t *ev, void *ud) {
  (void)req;
  group_call_t *g = ud;
  if (ev->type != AE_RESULT && ev->type != AE_ERROR && ev->type != AE_FAILED) return;
  g->req = NULL;
  if (ev->type == AE_FAILED) {
    hand_over(g, ev->fail);
    return;
  }
  if (g->phase == PH_TERM || g->phase == PH_KILL) {
    /* Sent (or refused: `kill` in the script ignores that too); now wait for the group. */
    g->deadline_ms = now_ms() + (g->phase == PH_TERM ? (uint64_t)g->grace_ms : KILL_WAIT_MS);
    g->phase++;
    g->poll_ms = FIRST_POLL_MS;
    call_step(g);
    return;
  }
  /* A GROUP_ALIVE answer; an error counts as "not alive", as `kill -0` failing does. */
  int alive = ev->type == AE_RESULT && ev->res.alive.alive;
  if (g->kind == GC_CHECK) {
    call_done(g, alive, NULL);
  } else if (!alive) {
    call_done(g, 1, NULL);
  } else if (g->phase == PH_FIRST) {
    g->phase = PH_TERM;
    call_step(g);
  } else {
    poll_again(g);
  }
}

/* Sends what the phase needs: GROUP_ALIVE, or SIGNAL in PH_TERM / PH_KILL. */
static void call_send(group_call_t *g, agent_conn_t *c) {
  agent_msg_t m;
  memset(&m, 0, sizeof(m));
  if (g->phase == PH_TERM || g->phase == PH_KILL) {
    m.type = AW_T_SIGNAL;
    m.u.signal.pgid = (int32_t)g->rec->pgid;
    m.u.signal.signal = g->phase == PH_TERM ? 15 : 9;
  } else {
    m.type = AW_T_GROUP_ALIVE;
    m.u.alive.pgid = (int32_t)g->rec->pgid;
  }
  err_t err = ERR_INIT;
  g->req = agent_req_start(c, &m, on_call_event, g, &err);
  if (g->req == NULL) hand_over(g, &err);
  err_clear(&err);
}

static void on_call_ready(agent_waiter_t *w, const err_t *err) {
  group_call_t *g = (group_call_t *)((char *)w - offsetof(group_call_t, waiter));
  g->waiting = 0;
  if (err != NULL) hand_over(g, err);
  else call_send(g, agent_op_conn(g->rec->sb));
}

/* The next request, once the agent is ready (a new one after a death). */
static void call_step(group_call_t *g) {
  agent_conn_t *c = agent_op_conn(g->rec->sb);
  err_t err = ERR_INIT;
  if (c == NULL) {
    err_oom(&err);
    call_done(g, 0, &err);
    err_clear(&err);
    return;
  }
  g->waiter.fn = on_call_ready;
  int rc = agent_conn_when_ready(c, &g->waiter, &err);
  if (rc == 1) call_send(g, c);
  else if (rc == 0) g->waiting = 1;
  else hand_over(g, &err);
  err_clear(&err);
}

/* Answers come later, never from inside this call: the first step runs from a timer. */
static group_call_t *call_new(proc_rec_t *r, int kind, err_t *err) {
  group_call_t *g = calloc(1, sizeof(*g));
  if (g == NULL) {
    err_oom(err);
    return NULL;
  }
  g->rec = r;
  proc_rec_ref(r);
  g->kind = kind;
  g->started_ms = now_ms();
  g->timer = sbx_timer_start(engine_io(r->sb->eng), 0, on_poll_timer, g);
  return g;
}

static void *check_group(proc_rec_t *r, proc_check_done_fn done, void *ud, err_t *err) {
  group_call_t *g = call_new(r, GC_CHECK, err);
  if (g == NULL) return NULL;
  g->checked = done;
  g->ud = ud;
  return g;
}

static void *stop_group(proc_rec_t *r, int64_t grace_ms, proc_stop_done_fn done, void *ud, err_t *err) {
  group_call_t *g = call_new(r, GC_STOP, err);
  if (g == NULL) return NULL;
  g->stopped = done;
  g->ud = ud;
  g->grace_ms = grace_ms;
  return g;
}

static void cancel(void *handle) {
  if (handle != NULL) call_free(handle);
}

const proc_carrier_t agent_procs_carrier = {
    .name = "agent",
    .launch = launch,
    .go = go,
    .cut = cut,
    .check_group = check_group,
    .stop_group = stop_group,
    .cancel = cancel,
};

/* ---- startProcess ---- */

typedef struct agent_start_op {
  agent_op_t base;
  proc_start_req_t req;
} agent_start_op_t;

/* The agent is ready: the start (limit, pruning, launch) runs with the agent's carrier. */
static void run(agent_op_t *base, agent_conn_t *c) {
  (void)c;
  agent_start_op_t *op = (agent_start_op_t *)base;
  op_t *child = proc_start_op(base->op.js, base->op.sb, &op->req, &agent_procs_carrier);
  if (child == NULL) {
    err_t err = ERR_INIT;
    err_oom(&err);
    agent_op_fail(base, &err);
    return;
  }
  op_delegate(&base->op, child);
}

static op_t *fallback(agent_op_t *base, err_t *err) {
  agent_start_op_t *op = (agent_start_op_t *)base;
  op_t *o = proc_start_op(base->op.js, base->op.sb, &op->req, engine_runtime_ops.procs);
  if (o == NULL) err_oom(err);
  return o;
}

/* The start's own refusals come first, before the agent is waited for or placed. */
static void start(op_t *o) {
  agent_start_op_t *op = (agent_start_op_t *)o;
  err_t err = ERR_INIT;
  if (proc_start_refused(o->sb, &op->req, &err) != 0) {
    op_settle(o, &err);
    return;
  }
  agent_op_start(o);
}

static napi_value result(op_t *o) {
  (void)o;
  return NULL; /* never settles by itself: its delegate does */
}

static void destroy(op_t *o) {
  agent_start_op_t *op = (agent_start_op_t *)o;
  agent_op_destroy(&op->base);
  proc_start_req_free(&op->req);
}

static const agent_op_kind_t start_kind = {
    .vt = {.name = "agentStartProcess", .start = start, .stop = agent_op_stop, .result = result,
           .destroy = destroy},
    .run = run,
    .fallback = fallback,
};

napi_value agent_procs_prepare_start(napi_env env, sandbox_t *sb, napi_value *argv) {
  napi_value options = args_options(env, argv);
  if (options == NULL) return NULL;
  agent_start_op_t *op = agent_op_prepare(env, &start_kind, sizeof(*op), sb);
  if (op == NULL) return NULL;
  err_t err = ERR_INIT;
  napi_value late = NULL;
  if (proc_start_req_from_js(env, sb, options, &op->req, &late, &err) == 0 && late != NULL)
    op_fail_at_start(&op->base.op, late, &err);
  return op_prepared(&op->base.op, &err);
}
