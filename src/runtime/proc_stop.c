/*
 * proc_stop.c - stopProcess and the disposal of every managed process when the sandbox
 * stops or is destroyed (see proc.h and proc_registry.h): TERM to the process group, the
 * grace period, KILL (by the record's carrier), then the wait for its launch to end.
 *
 * Owns: a termination owns its reference on the record, its timer and its carrier's stop;
 * a stop operation owns its terminations (one, or one per record for a disposal).
 */
#include "runtime/proc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/timer.h"
#include "napi/args.h"
#include "napi/convert.h"
#include "napi/op.h"
#include "napi/checks.h"
#include "napi/values.h"
#include "runtime/proc_registry.h"

/* A process still starting gets at most this long to end by itself. */
#define STARTING_GRACE_MS 250
/* What disposal gives every process between TERM and KILL. */
#define DISPOSE_GRACE_MS 1000

/* ================= terminate: shared by stop and dispose ================= */

typedef struct terminate terminate_t;
typedef void (*terminate_done_fn)(void *ud, int stopped, err_t *err);

struct terminate {
  sandbox_t *sb;
  proc_rec_t *rec;
  proc_watch_t watch;
  int watching;
  sbx_timer_t *timer;
  const proc_carrier_t *carrier; /* whose stop runs */
  void *stop;
  terminate_done_fn done;
  void *ud;
  int waiting_close_after_group; /* 1: the group is gone, waiting for the exec to end */
};

static void term_free(terminate_t *t) {
  if (t->watching) proc_rec_unwatch(t->rec, &t->watch);
  sbx_timer_cancel(t->timer);
  if (t->stop != NULL) t->carrier->cancel(t->stop);
  proc_rec_unref(t->rec);
  free(t);
}

static void term_finish(terminate_t *t, int stopped, err_t *err) {
  terminate_done_fn done = t->done;
  void *ud = t->ud;
  term_free(t);
  done(ud, stopped, err);
}

static void on_term_close_watch(proc_watch_t *w) {
  terminate_t *t = (terminate_t *)((char *)w - offsetof(terminate_t, watch));
  if (!t->rec->closed) return;
  proc_rec_unwatch(t->rec, w);
  t->watching = 0;
  term_finish(t, 1, NULL);
}

static void on_term_close_timeout(void *ud) {
  terminate_t *t = ud;
  t->timer = NULL;
  if (t->waiting_close_after_group) {
    /* The group is gone but the exec still holds the stream: end it (the original killed
     * its docker CLI child here). */
    proc_rec_close_killed(t->rec);
    term_finish(t, 1, NULL);
    return;
  }
  /* No group was ever recorded and the process did not end. */
  term_finish(t, t->rec->status != P_RUNNING, NULL);
}

/* Waits up to `ms` for the record's launch to end. */
static void wait_close(terminate_t *t, uint64_t ms, int after_group) {
  if (t->rec->status != P_RUNNING || t->rec->closed) {
    term_finish(t, 1, NULL);
    return;
  }
  if (after_group && t->rec->link == NULL) {
    /* An orphan (its agent died): the group is gone and no end will be reported. */
    proc_rec_close_killed(t->rec);
    term_finish(t, 1, NULL);
    return;
  }
  t->waiting_close_after_group = after_group;
  t->watch.fn = on_term_close_watch;
  proc_rec_watch(t->rec, &t->watch);
  t->watching = 1;
  t->timer = sbx_timer_start(engine_io(t->sb->eng), ms, on_term_close_timeout, t);
}

static void on_stopped(void *ud, int gone, err_t *err) {
  terminate_t *t = ud;
  t->stop = NULL;
  if (err != NULL) term_finish(t, 0, err);
  else if (gone) wait_close(t, PROC_CLOSE_WAIT_MS, 1);
  else term_finish(t, 0, NULL);
}

/* Starts terminating; `done` is always called later (never from inside this call). */
static terminate_t *terminate_start(sandbox_t *sb, proc_rec_t *r, int64_t grace_ms, terminate_done_fn done, void *ud,
                                    err_t *err) {
  terminate_t *t = calloc(1, sizeof(*t));
  if (t == NULL) {
    err_oom(err);
    return NULL;
  }
  t->sb = sb;
  t->rec = r;
  proc_rec_ref(r);
  t->done = done;
  t->ud = ud;
  r->stop_requested = 1;
  io_t *io = engine_io(sb->eng);
  if (r->status != P_RUNNING || r->closed) {
    /* Its exec is over: reported as it is, as the original does when its group is gone.
     * The original signalled the group when something still answered to its id, but
     * that id may belong to another group by now (a later managed process's wrapper can
     * get the same pid): no script against it. */
    t->timer = sbx_timer_start(io, 0, on_term_close_timeout, t);
    return t;
  }
  if (!r->marker_seen) {
    /* Still starting: give it min(grace, 250 ms) to end. */
    t->watch.fn = on_term_close_watch;
    proc_rec_watch(r, &t->watch);
    t->watching = 1;
    t->timer = sbx_timer_start(io, (uint64_t)(grace_ms < STARTING_GRACE_MS ? grace_ms : STARTING_GRACE_MS),
                               on_term_close_timeout, t);
    return t;
  }
  t->carrier = r->carrier;
  t->stop = t->carrier->stop_group(r, grace_ms, on_stopped, t, err);
  if (t->stop == NULL) {
    proc_rec_unref(r);
    free(t);
    return NULL;
  }
  return t;
}

/* ================= stop and dispose ================= */

typedef struct stop_op {
  op_t op;
  char *process_id;
  int64_t grace_ms;
  int dispose;
  proc_rec_t *rec;
  terminate_t **terms;
  size_t nterms;
  size_t pending;
  err_t err;
} stop_op_t;

/* Which termination of which operation finished (the record's id kept for messages). */
typedef struct term_slot {
  stop_op_t *op;
  size_t index;
  char id[37];
} term_slot_t;

static void stop_settle(stop_op_t *op) { op_settle(&op->op, &op->err); }

static void on_terminated(void *ud, int stopped, err_t *err) {
  term_slot_t *slot = ud;
  stop_op_t *op = slot->op;
  size_t i = slot->index;
  char id[37];
  memcpy(id, slot->id, sizeof(id));
  free(slot);
  op->terms[i] = NULL;
  proc_rec_t *r = op->dispose ? NULL : op->rec;
  if (!err_is_set(&op->err)) {
    if (err != NULL) err_move(&op->err, err);
    else if (!stopped) proc_error(&op->err, "Sandbox process did not stop: %s", id);
  }
  if (r != NULL && err_is_set(&op->err) && r->status == P_RUNNING) r->stop_requested = 0;
  if (--op->pending > 0) return;
  if (op->dispose && !err_is_set(&op->err)) proc_registry_of(op->op.sb)->disposed = 1;
  stop_settle(op);
}

/* Which records to end: the one named, or (dispose) all. 0 = nothing to do (settled or
 * done), 1 = go on with *count records from *first. */
static int stop_targets(stop_op_t *op, proc_registry_t *pm, proc_rec_t **first, size_t *count) {
  if (op->dispose) {
    if (pm->disposed) return 0;
    if (pm->count == 0) {
      pm->disposed = 1;
      return 0;
    }
    *first = pm->records;
    *count = pm->count;
    return 1;
  }
  if (pm->disposed) {
    proc_error(&op->err, "Sandbox process manager has been disposed.%s", "");
    return 0;
  }
  op->rec = proc_rec_find(pm, op->process_id);
  if (op->rec == NULL) {
    proc_error(&op->err, "Unknown sandbox process: %s", op->process_id);
    return 0;
  }
  proc_rec_ref(op->rec);
  *first = op->rec;
  *count = 1;
  return 1;
}

static void stop_start(op_t *o) {
  stop_op_t *op = (stop_op_t *)o;
  proc_registry_t *pm = proc_registry_of(o->sb);
  proc_rec_t *r = NULL;
  size_t n = 0;
  if (pm == NULL) err_oom(&op->err);
  if (pm == NULL || !stop_targets(op, pm, &r, &n)) {
    stop_settle(op);
    return;
  }
  op->terms = calloc(n, sizeof(terminate_t *));
  if (op->terms == NULL) {
    err_oom(&op->err);
    stop_settle(op);
    return;
  }
  op->nterms = n;
  for (size_t i = 0; i < n && r != NULL; i++, r = r->next) {
    term_slot_t *slot = malloc(sizeof(*slot));
    if (slot == NULL) {
      err_oom(&op->err);
      break;
    }
    slot->op = op;
    slot->index = i;
    memcpy(slot->id, r->id, sizeof(slot->id));
    err_t err = ERR_INIT;
    op->terms[i] =
        terminate_start(o->sb, r, op->dispose ? DISPOSE_GRACE_MS : op->grace_ms, on_terminated, slot, &err);
    if (op->terms[i] == NULL) {
      free(slot);
      err_move(&op->err, &err);
      break;
    }
    op->pending++;
  }
  if (op->pending == 0) stop_settle(op);
}

static void cancel_terms(stop_op_t *op) {
  for (size_t i = 0; i < op->nterms; i++) {
    if (op->terms[i] == NULL) continue;
    term_slot_t *slot = op->terms[i]->ud;
    term_free(op->terms[i]);
    free(slot);
    op->terms[i] = NULL;
  }
  op->pending = 0;
}

static void stop_halt(op_t *o) {
  stop_op_t *op = (stop_op_t *)o;
  cancel_terms(op);
  if (op->rec && op->rec->status == P_RUNNING) op->rec->stop_requested = 0;
}

static napi_value stop_result(op_t *o) {
  stop_op_t *op = (stop_op_t *)o;
  return op->dispose ? nu_undefined(o->js->env) : proc_info_to_js(o->js->env, op->rec);
}

static void stop_destroy(op_t *o) {
  stop_op_t *op = (stop_op_t *)o;
  cancel_terms(op);
  free(op->terms);
  proc_rec_unref(op->rec);
  free(op->process_id);
  err_clear(&op->err);
}

static const op_vtable_t stop_vt = {.name = "stopProcess",
    .start = stop_start, .stop = stop_halt, .result = stop_result, .destroy = stop_destroy};

/* native.prepareStopProcess(sandbox, options): assertOptionsObject, processId, gracePeriodMs. */
napi_value proc_prepare_stop(napi_env env, sandbox_t *sb, napi_value *argv) {
  napi_value options = args_options(env, argv);
  if (options == NULL) return NULL;
  err_t err = ERR_INIT;
  napi_value pid = nu_get(env, options, "processId");
  int64_t grace = 5000;
  napi_value g = nu_get(env, options, "gracePeriodMs");
  if (check_nonempty_string(env, pid, "processId", &err) ||
      (!nu_is_undefined(env, g) && check_nonnegative_safe_integer(env, g, "gracePeriodMs", &grace, &err)))
    return convert_throw_err(jsenv_get(env), &err);
  stop_op_t *op = op_prepare(env, &stop_vt, sizeof(*op), sb);
  if (op == NULL) return NULL;
  err_init(&op->err);
  op->grace_ms = grace;
  op->process_id = nu_strdup(env, pid);
  if (op->process_id == NULL) err_oom(&err);
  return op_prepared(&op->op, &err);
}

/* native.prepareDisposeProcesses(sandbox) */
napi_value proc_prepare_dispose(napi_env env, sandbox_t *sb, napi_value *argv) {
  (void)argv;
  stop_op_t *op = op_prepare(env, &stop_vt, sizeof(*op), sb);
  if (op == NULL) return NULL;
  err_init(&op->err);
  op->dispose = 1;
  return op_prepared(&op->op, NULL);
}
