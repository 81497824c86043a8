/*
 * engine_term.c - terminals on the engine path (see engine_term.h), with the JavaScript
 * API and result shapes of the agent's (agent_term.c), one operation whose action says
 * which call:
 *
 *   start   an exec with "Tty": true running TERM_START_SH (the pty's size set by stty,
 *           then the program), then TERM_PID_SH for the program's pid and
 *           POST /exec/{id}/resize -> { id, pid }
 *   attach  a terminal of this I/O context -> { id, pid }
 *   write   the bytes onto the exec's stdin; settles once queued (hijack.c writes them in
 *           order); refused while more than TERM_WRITE_HIGH bytes wait unwritten
 *   output  the scrollback from `since` (a first offset past it: those bytes are gone),
 *           then every piece as it comes, (offset, bytes), until the terminal ends
 *   wait    at its end -> { exitCode, signal }
 *   resize  POST /exec/{id}/resize?h=ROWS&w=COLS -> { cols, rows }
 *   signal  TERM_SIGNAL_SH (SIGKILL: engine/sh/exec_kill.sh, freezing first) to every
 *           process carrying the terminal's marker -> { delivered }
 *   list    this I/O context's terminals of the container not ended -> [{ id }]
 *
 * The terminal lives in this process (the I/O context of one JavaScript environment),
 * keyed by container name and id: any handle of the sandbox here can attach to it, none
 * in another process can. It ends with its program, a kill, the sandbox's stop or removal
 * (the exec's end, or, where the engine keeps the stream open after that, the container
 * watch: see watch_container), or the environment's teardown. Its exec's connection keeps Node's
 * loop alive only while some call on it is pending (an output consumer, a wait).
 *
 * Bounds: the scrollback is one ring of exactly `scrollbackBytes` (4 KiB ..= 64 MiB,
 * default 1 MiB), allocated at start; the exec's raw stream is read 64 KiB at a time
 * (hijack.c) and each piece is copied into the ring and handed to every output consumer
 * at once. While any consumer is paused by JavaScript the exec's reading is paused too,
 * so the program is held back by its pty; with no consumer the ring overwrites its
 * oldest bytes and the program is never held. Unwritten input: at most TERM_WRITE_HIGH
 * (1 MiB) queued before a write is refused (one write larger than that is taken whole
 * when nothing waits). Terminals: at most TERM_MAX per I/O context, ended ones kept for
 * attach, wait and replay at most TERM_KEEP_ENDED (the oldest goes first).
 *
 * Signals and wait: the exec's inspection gives the exit code only; a pty program killed
 * by signal n exits 128 + n as the engine reports it, as does a program that exits with
 * that code itself. `signal` names n only when this process delivered n to the terminal
 * (kill) and the code is 128 + n; else null.
 *
 * Owns: the terminals (their exec task, ring, ids) and, per operation, its request and
 * whatever it has in flight (the pid or signal exec, the resize request, a timer).
 */
#include "runtime/engine_term.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "engine/exec_task.h"
#include "engine/sh/exec_kill_sh.h"
#include "engine/timer.h"
#include "napi/convert.h"
#include "napi/values.h"
#include "runtime/proc_registry.h"
#include "runtime/sh/term_leash_sh.h"
#include "runtime/sh/term_pid_sh.h"
#include "runtime/sh/term_signal_sh.h"
#include "runtime/sh/term_start_sh.h"

#define TERM_WRITE_HIGH (1024u * 1024u)
#define TERM_MAX 4096u
#define TERM_KEEP_ENDED 16u
#define TERM_REPLAY_PIECE (64u * 1024u)
#define TERM_HELPER_TIMEOUT_MS 30000

typedef struct eterm_op eterm_op_t;

typedef struct eterm {
  struct eterm *prev, *next; /* every terminal of every I/O context (`terms`) */
  io_t *io;
  jsenv_t *js;
  char *container;
  char id[AW_MAX_TERM_ID + 1];
  exec_task_t *task; /* NULL once ended */
  exec_task_t *leash; /* TERM_LEASH_SH: ends the program when this process's connection goes */
  engine_t *eng;      /* a reference: the end check's requests */
  http_req_t *check;  /* the container watch's GET /containers/{name}/json */
  sbx_timer_t *check_timer; /* its next round */
  char *started_at;   /* the run the terminal started in (State.StartedAt) */
  char marker[37];
  char *exec_id; /* once started */
  uint8_t *ring;
  size_t cap;
  uint64_t head; /* bytes the program wrote; the ring holds [head - min(head, cap), head) */
  uint32_t pid;
  int started, ended, exit_code, signalled;
  err_t end_err; /* the exec failed (kept for a start still pending) */
  eterm_op_t *ops; /* the calls on it still pending */
} eterm_t;

struct eterm_op {
  op_t op;
  term_req_t r;
  eterm_t *term; /* linked in term->ops while not NULL */
  eterm_op_t *prev_op, *next_op;
  int paused;             /* output: JavaScript paused this consumer */
  exec_task_t *task;      /* start: the pid exec; signal: the signal exec */
  http_req_t *req;        /* start, resize: POST /exec/{id}/resize */
  sbx_timer_t *timer;     /* output: the replay */
  int pid_done;           /* start: the pid is known (or will not be) */
  uint32_t pid;
  int exit_code, signal_name_sig, delivered;
  char **ids;
  size_t nids;
};

static _Thread_local eterm_t *terms; /* one JavaScript environment per thread */

static void start_pid(eterm_op_t *op);
static void watch_later(eterm_t *t, uint64_t ms);

/* ---- terminals ---- */

static eterm_t *find(io_t *io, const char *container, const char *id) {
  for (eterm_t *t = terms; t != NULL; t = t->next)
    if (t->io == io && strcmp(t->container, container) == 0 && strcmp(t->id, id) == 0) return t;
  return NULL;
}

size_t engine_term_live(sandbox_t *sb) {
  size_t n = 0;
  io_t *io = engine_io(sb->eng);
  for (eterm_t *t = terms; t != NULL; t = t->next)
    n += t->io == io && !t->ended && strcmp(t->container, sb->container_name) == 0;
  return n;
}

static void term_free(eterm_t *t) {
  if (t->prev) t->prev->next = t->next;
  else if (terms == t) terms = t->next;
  if (t->next) t->next->prev = t->prev;
  for (eterm_op_t *o = t->ops; o != NULL; o = o->next_op) o->term = NULL;
  if (t->leash) exec_task_cancel(t->leash); /* its connection closes: the leash kills */
  if (t->task) exec_task_cancel(t->task);
  http_req_free(t->check);
  sbx_timer_cancel(t->check_timer);
  free(t->started_at);
  if (t->eng) engine_unref(t->eng);
  err_clear(&t->end_err);
  free(t->exec_id);
  free(t->container);
  free(t->ring);
  free(t);
}

/* Drops the oldest ended terminals nothing waits on, past TERM_KEEP_ENDED of this context. */
static void prune(io_t *io) {
  size_t ended = 0;
  eterm_t *oldest = NULL;
  for (eterm_t *t = terms; t != NULL; t = t->next) /* newest first: the last one is the oldest */
    if (t->io == io && t->ended) {
      ended++;
      if (t->ops == NULL) oldest = t;
    }
  if (ended > TERM_KEEP_ENDED && oldest != NULL) term_free(oldest);
}

static void link_op(eterm_t *t, eterm_op_t *op) {
  op->term = t;
  op->prev_op = NULL;
  op->next_op = t->ops;
  if (t->ops) t->ops->prev_op = op;
  t->ops = op;
}

/* The exec's connection keeps the loop alive while a start, an output or a wait waits. */
static void update_flow(eterm_t *t) {
  if (t->task == NULL) return;
  int paused = 0, ref = 0;
  for (eterm_op_t *o = t->ops; o != NULL; o = o->next_op) {
    if (o->r.action == TA_OUTPUT && o->paused) paused = 1;
    if (o->r.action == TA_OUTPUT || o->r.action == TA_WAIT || o->r.action == TA_START) ref = 1;
  }
  if (paused) exec_task_pause(t->task);
  else exec_task_resume(t->task);
  exec_task_set_ref(t->task, ref);
}

static void unlink_op(eterm_op_t *op) {
  eterm_t *t = op->term;
  if (t == NULL) return;
  if (op->prev_op) op->prev_op->next_op = op->next_op;
  else t->ops = op->next_op;
  if (op->next_op) op->next_op->prev_op = op->prev_op;
  op->term = NULL;
  op->prev_op = op->next_op = NULL;
  update_flow(t);
}

/* One piece of output, at `off`, to one consumer. */
static void emit(eterm_op_t *op, uint64_t off, const uint8_t *p, size_t n) {
  op_t *o = &op->op;
  jsenv_scope_t s;
  if (n == 0 || !op_has_events(o) || jsenv_enter(o->js, &s) != 0) return;
  napi_value argv[2] = {nu_number(o->js->env, (double)off), nu_uint8array(o->js->env, p, n)};
  op_emit(o, 2, argv);
  jsenv_leave(o->js, &s);
}

static void on_term_output(void *ud, int stream, const uint8_t *data, size_t len) {
  eterm_t *t = ud;
  (void)stream; /* a Tty exec: everything is stream 1 */
  if (len == 0) return;
  uint64_t off = t->head;
  /* Into the ring: the last `cap` bytes of the piece at most. */
  const uint8_t *p = data;
  size_t n = len;
  if (n > t->cap) {
    p += n - t->cap;
    n = t->cap;
  }
  size_t at = (size_t)((off + (len - n)) % t->cap);
  size_t first = n < t->cap - at ? n : t->cap - at;
  memcpy(t->ring + at, p, first);
  if (n > first) memcpy(t->ring, p + first, n - first);
  t->head += len;
  /* To every consumer, each held while its callback runs (it may cancel any of them). */
  size_t count = 0;
  for (eterm_op_t *o = t->ops; o != NULL; o = o->next_op) count += o->r.action == TA_OUTPUT;
  if (count == 0) return;
  eterm_op_t **list = malloc(count * sizeof(*list));
  if (list == NULL) return; /* out of memory: the consumers miss this piece, the ring has it */
  size_t k = 0;
  for (eterm_op_t *o = t->ops; o != NULL && k < count; o = o->next_op)
    if (o->r.action == TA_OUTPUT) {
      list[k++] = o;
      op_hold(&o->op);
    }
  for (size_t i = 0; i < k; i++) {
    if (!list[i]->op.settled && !list[i]->op.cancelled && list[i]->term == t) emit(list[i], off, data, len);
    op_unhold(&list[i]->op);
  }
  free(list);
}

static void start_finish(eterm_op_t *op);

/* The exec ended: the terminal with it. Outputs and waits settle; a start still looking
 * for its pid finishes when that ends. */
static void on_term_done(void *ud, exec_result_t *result, err_t *err) {
  eterm_t *t = ud;
  t->task = NULL;
  t->ended = 1;
  if (t->leash) exec_task_cancel(t->leash); /* nothing left to kill: it ends */
  t->leash = NULL;
  sbx_timer_cancel(t->check_timer); /* the container watch (an answer in flight is dropped) */
  t->check_timer = NULL;
  t->exit_code = result != NULL ? result->exit_code : -1;
  exec_result_free(result);
  if (err != NULL && err_is_set(err)) err_copy(&t->end_err, err);
  /* First every op is placed: outputs and waits leave the terminal (each held, as
   * settling one runs JavaScript, which may cancel another), the rest stay linked. */
  size_t count = 0;
  for (eterm_op_t *o = t->ops; o != NULL; o = o->next_op) count++;
  eterm_op_t **done = count ? malloc(count * sizeof(*done)) : NULL;
  size_t k = 0;
  eterm_op_t *pending = t->ops;
  t->ops = NULL;
  io_t *io = t->io;
  eterm_op_t *start = NULL;
  while (pending != NULL) {
    eterm_op_t *op = pending;
    pending = op->next_op;
    op->prev_op = op->next_op = NULL;
    op->term = NULL;
    int ends = op->r.action == TA_WAIT || (op->r.action == TA_OUTPUT && op->timer == NULL);
    if (ends && done != NULL) {
      op->exit_code = t->exit_code;
      op->signal_name_sig = t->signalled && t->exit_code == 128 + t->signalled ? t->signalled : 0;
      op_hold(&op->op);
      done[k++] = op;
      continue;
    }
    link_op(t, op); /* start, resize, signal and a replay due: they end on their own */
    if (op->r.action == TA_START && op->task == NULL && op->req == NULL) start = op;
  }
  for (size_t i = 0; i < k; i++) {
    if (!done[i]->op.settled && !done[i]->op.cancelled) op_settle(&done[i]->op, NULL);
    op_unhold(&done[i]->op);
  }
  free(done);
  if (start != NULL && start->term == t) start_finish(start); /* may free t */
  prune(io);
}

static void on_term_started(void *ud) {
  eterm_t *t = ud;
  const char *id = exec_task_exec_id(t->task);
  t->started = 1;
  t->exec_id = id ? strdup(id) : NULL;
  watch_later(t, 0); /* the run it started in */
  for (eterm_op_t *o = t->ops; o != NULL; o = o->next_op)
    if (o->r.action == TA_START) {
      start_pid(o);
      return;
    }
}

/* ---- helpers run in the container ---- */

static exec_task_t *helper(eterm_op_t *op, const char *script, const char *name, const char *a1, const char *a2,
                           void (*done)(void *, exec_result_t *, err_t *), err_t *err) {
  exec_spec_t k;
  memset(&k, 0, sizeof(k));
  const char *argv[] = {"sh", "-c", script, name, a1, a2};
  k.workdir = strdup("/");
  k.timeout_ms = TERM_HELPER_TIMEOUT_MS;
  k.max_output = 256;
  if (k.workdir == NULL || exec_spec_set_argv(&k, argv, a2 ? 6 : 5) != 0) {
    exec_spec_free(&k);
    err_oom(err);
    return NULL;
  }
  exec_callbacks_t cbs = {.on_done = done};
  exec_task_t *task = exec_task_start(op->op.sb->eng, op->op.sb->container_name, &k, &cbs, op, err);
  exec_spec_free(&k);
  return task;
}

static http_req_t *resize_req(eterm_op_t *op, const char *exec_id, http_done_fn done, err_t *err) {
  char *id = url_escape(exec_id);
  http_req_t *req = id ? http_req_new(op->op.sb->eng, "POST", "/exec/%s/resize?h=%u&w=%u", id,
                                      (unsigned)op->r.rows, (unsigned)op->r.cols)
                       : NULL;
  free(id);
  if (req == NULL) {
    err_oom(err);
    return NULL;
  }
  if (http_req_start(req, done, op, err) != 0) {
    http_req_free(req);
    return NULL;
  }
  return req;
}

/* ---- start ---- */

/* The start's outcome, once nothing of it is in flight. */
static void start_finish(eterm_op_t *op) {
  eterm_t *t = op->term;
  err_t err = ERR_INIT;
  if (t == NULL) {
    err_sandbox(&err, CODE_INVALID_STATE, "The addon is shutting down.");
  } else if (t->ended && err_is_set(&t->end_err)) {
    err_copy(&err, &t->end_err);
  } else if (t->ended && t->exit_code == 127 && op->pid == 0) {
    err_sandbox(&err, CODE_PROCESS, "Sandbox terminal command cannot start: %s: %s", op->r.spec.argc ? op->r.spec.argv[0] : "",
                "not found");
  }
  if (t != NULL) {
    t->pid = op->pid;
    unlink_op(op);
    if (err_is_set(&err) && !t->started) term_free(t); /* it never ran: nothing to attach to */
  }
  op_settle(&op->op, &err);
  err_clear(&err);
}

static void on_start_resized(http_req_t *req, void *ud) {
  eterm_op_t *op = ud;
  op->req = NULL;
  http_req_free(req); /* best effort: the pty had its size from stty already */
  start_finish(op);
}

static void on_pid(void *ud, exec_result_t *result, err_t *err) {
  eterm_op_t *op = ud;
  op->task = NULL;
  op->pid_done = 1;
  (void)err;
  if (result != NULL && result->exit_code == 0 && result->out.bytes.len > 0) {
    char buf[16];
    size_t n = result->out.bytes.len < sizeof(buf) - 1 ? result->out.bytes.len : sizeof(buf) - 1;
    memcpy(buf, result->out.bytes.data, n);
    buf[n] = 0;
    long v = strtol(buf, NULL, 10);
    if (v > 0 && v < 0x7fffffffL) op->pid = (uint32_t)v;
  }
  exec_result_free(result);
  eterm_t *t = op->term;
  if (t != NULL && !t->ended && t->exec_id != NULL) {
    err_t e = ERR_INIT;
    op->req = resize_req(op, t->exec_id, on_start_resized, &e);
    err_clear(&e);
    if (op->req != NULL) return;
  }
  start_finish(op);
}

static void start_pid(eterm_op_t *op) {
  err_t err = ERR_INIT;
  op->task = helper(op, TERM_PID_SH, "anvia-term-pid", op->term->marker, NULL, on_pid, &err);
  err_clear(&err);
  if (op->task == NULL) on_pid(op, NULL, NULL);
}

/* The program's argv: sh -c TERM_START_SH anvia-term COLS ROWS program args...; TERM
 * unless the caller's env names it (as the agent's keeper presets it). */
static int start_spec(eterm_op_t *op, exec_spec_t *spec) {
  *spec = op->r.spec;
  memset(&op->r.spec, 0, sizeof(op->r.spec));
  /* keep argv[0] for the start's error message */
  if (spec->argc > 0 && exec_spec_set_argv(&op->r.spec, (const char *const *)spec->argv, 1) != 0) return -1;
  char cols[8], rows[8];
  snprintf(cols, sizeof(cols), "%u", (unsigned)op->r.cols);
  snprintf(rows, sizeof(rows), "%u", (unsigned)op->r.rows);
  const char *head[] = {"sh", "-c", TERM_START_SH, "anvia-term", cols, rows};
  size_t nh = sizeof(head) / sizeof(head[0]);
  char **argv = calloc(spec->argc + nh, sizeof(char *));
  if (argv == NULL) return -1;
  for (size_t i = 0; i < nh; i++)
    if ((argv[i] = strdup(head[i])) == NULL) {
      for (size_t j = 0; j < i; j++) free(argv[j]);
      free(argv);
      return -1;
    }
  memcpy(argv + nh, spec->argv, spec->argc * sizeof(char *));
  free(spec->argv);
  spec->argv = argv;
  spec->argc += nh;
  int has_term = 0;
  for (size_t i = 0; i < spec->envc; i++) has_term |= strncmp(spec->env[i], "TERM=", 5) == 0;
  if (!has_term && exec_spec_add_env(spec, "TERM", "xterm-256color") != 0) return -1;
  spec->tty = 1;
  spec->attach_stdin = 1;
  spec->has_input = 0;
  spec->timeout_ms = 0; /* a terminal lasts as long as its program */
  spec->max_output = 0;
  spec->kill_tree = 1;
  return 0;
}

static void teardown(jsenv_t *js);

/* The container watch. runsc keeps a Tty exec's stream (and the leash's) open after its
 * container stopped, where runc ends them, so the stream's end alone cannot tell that the
 * terminal ended: while it lives, the container is inspected every TERM_WATCH_MS (and at
 * once when the leash ends, which it also does when the container stops). The first
 * answer records the run (State.StartedAt); a container gone, stopped, or running another
 * run since ends the terminal (exit code 128 + SIGKILL: a stop kills what runs). */
#define TERM_WATCH_MS 2000

static void watch_container(void *ud);

static void watch_later(eterm_t *t, uint64_t ms) {
  if (t->task == NULL || t->check != NULL || t->check_timer != NULL) return;
  t->check_timer = sbx_timer_start(t->io, ms, watch_container, t);
  sbx_timer_unref(t->check_timer); /* the watch alone never keeps Node running */
}

static void on_watched(http_req_t *req, void *ud) {
  eterm_t *t = ud;
  t->check = NULL;
  err_t err = ERR_INIT;
  json_t *ins = http_req_ok(req) ? http_req_json(req, &err) : NULL;
  int gone = http_req_not_found(req);
  http_req_free(req);
  err_clear(&err);
  json_t *state = json_object_get(ins, "State");
  json_t *at = json_object_get(state, "StartedAt");
  int running = json_is_true(json_object_get(state, "Running")) && json_is_string(at);
  int same = running && (t->started_at == NULL || strcmp(t->started_at, json_string_value(at)) == 0);
  if (running && t->started_at == NULL) t->started_at = strdup(json_string_value(at));
  json_decref(ins);
  if (t->task == NULL) return; /* it ended on its own meanwhile */
  if (!gone && (ins == NULL || same)) { /* an answer that says nothing is asked again later */
    watch_later(t, TERM_WATCH_MS);
    return;
  }
  exec_result_t *result = exec_result_new(0);
  exec_task_cancel(t->task); /* the stream that did not end; no callback from it now */
  t->task = NULL;
  if (result != NULL) result->exit_code = 128 + SIGKILL;
  on_term_done(t, result, NULL);
}

static void watch_container(void *ud) {
  eterm_t *t = ud;
  t->check_timer = NULL;
  if (t->task == NULL) return;
  char *name = url_escape(t->container);
  t->check = name ? http_req_new(t->eng, "GET", "/containers/%s/json", name) : NULL;
  free(name);
  err_t err = ERR_INIT;
  if (t->check != NULL && http_req_start(t->check, on_watched, t, &err) != 0) {
    http_req_free(t->check);
    t->check = NULL;
  }
  err_clear(&err);
  if (t->check == NULL) watch_later(t, TERM_WATCH_MS);
}

static void on_leash_done(void *ud, exec_result_t *result, err_t *err) {
  eterm_t *t = ud;
  (void)err;
  t->leash = NULL;
  exec_result_free(result);
  if (t->task != NULL && t->check == NULL) { /* now rather than at the next round */
    sbx_timer_cancel(t->check_timer);
    t->check_timer = NULL;
    watch_later(t, 0);
  }
}

/* The leash: stdin attached, no timeout, never holding the loop; its own marker, not the
 * terminal's (so the kill it runs does not end it first). 0, or -1 with err set. */
static int leash_start(eterm_t *t, sandbox_t *sb, err_t *err) {
  exec_spec_t k;
  memset(&k, 0, sizeof(k));
  const char *argv[] = {"sh", "-c", TERM_LEASH_SH, "anvia-term-leash", t->marker, EXEC_KILL_SH};
  k.workdir = strdup("/");
  k.attach_stdin = 1;
  k.max_output = 256;
  if (k.workdir == NULL || exec_spec_set_argv(&k, argv, 6) != 0) {
    exec_spec_free(&k);
    return err_oom(err);
  }
  exec_callbacks_t cbs = {.on_done = on_leash_done};
  t->leash = exec_task_start(sb->eng, sb->container_name, &k, &cbs, t, err);
  exec_spec_free(&k);
  if (t->leash == NULL) return -1;
  exec_task_set_ref(t->leash, 0);
  return 0;
}

static void do_start(eterm_op_t *op) {
  op_t *o = &op->op;
  sandbox_t *sb = o->sb;
  err_t err = ERR_INIT;
  exec_spec_t spec;
  memset(&spec, 0, sizeof(spec));
  eterm_t *t = NULL;
  /* As agent_term.c counts: managed processes and terminals (the engine path has no agent's). */
  size_t used = proc_registry_of(sb)->count + engine_term_live(sb);
  if ((int64_t)used >= sb->runtime.max_processes) {
    err_sandbox(&err, CODE_PROCESS, "Sandbox process limit reached (%zu >= %lld).", used,
                (long long)sb->runtime.max_processes);
    goto fail;
  }
  size_t here = 0;
  for (eterm_t *x = terms; x != NULL; x = x->next) here += x->io == o->js->io;
  if (here >= TERM_MAX) {
    err_sandbox(&err, CODE_PROCESS, "Too many sandbox terminals in this process (%u).", TERM_MAX);
    goto fail;
  }
  t = calloc(1, sizeof(*t));
  if (t == NULL || jsenv_on_teardown(o->js, teardown) != 0) goto oom;
  t->io = o->js->io;
  t->js = o->js;
  t->eng = sb->eng;
  engine_ref(t->eng);
  t->cap = op->r.scrollback;
  t->ring = malloc(t->cap);
  t->container = strdup(sb->container_name);
  if (t->ring == NULL || t->container == NULL || start_spec(op, &spec) != 0) goto oom;
  snprintf(t->id, sizeof(t->id), "%s", op->r.id);
  exec_callbacks_t cbs = {.on_output = on_term_output, .on_done = on_term_done, .on_started = on_term_started};
  t->task = exec_task_start(sb->eng, sb->container_name, &spec, &cbs, t, &err);
  if (t->task == NULL) goto fail;
  snprintf(t->marker, sizeof(t->marker), "%s", exec_task_marker(t->task));
  if (leash_start(t, sb, &err) != 0) {
    exec_task_cancel(t->task); /* ends what it started */
    goto fail;
  }
  t->next = terms;
  if (terms) terms->prev = t;
  terms = t;
  link_op(t, op);
  update_flow(t);
  exec_spec_free(&spec);
  return;
oom:
  err_oom(&err);
fail:
  exec_spec_free(&spec);
  if (t != NULL) {
    if (t->eng) engine_unref(t->eng);
    free(t->ring);
    free(t->container);
    free(t);
  }
  op_settle(o, &err);
  err_clear(&err);
}

/* ---- the other calls ---- */

static void on_resized(http_req_t *req, void *ud) {
  eterm_op_t *op = ud;
  op->req = NULL;
  err_t err = ERR_INIT;
  if (!http_req_ok(req)) http_req_error(req, &err);
  http_req_free(req);
  unlink_op(op);
  op_settle(&op->op, &err);
  err_clear(&err);
}

static void on_signalled(void *ud, exec_result_t *result, err_t *err) {
  eterm_op_t *op = ud;
  op->task = NULL;
  err_t e = ERR_INIT;
  if (err != NULL && err_is_set(err)) err_copy(&e, err);
  else op->delivered = result != NULL && result->exit_code == 0;
  exec_result_free(result);
  eterm_t *t = op->term;
  if (t != NULL && op->delivered) t->signalled = op->r.signal;
  unlink_op(op);
  op_settle(&op->op, &e);
  err_clear(&e);
}

/* output: the scrollback from `since`, from the loop (not inside native.start), then live. */
static void on_replay(void *ud) {
  eterm_op_t *op = ud;
  op->timer = NULL;
  eterm_t *t = op->term;
  if (t == NULL) {
    op_settle(&op->op, NULL);
    return;
  }
  uint64_t tail = t->head > t->cap ? t->head - t->cap : 0;
  uint64_t from = op->r.since < tail ? tail : op->r.since > t->head ? t->head : op->r.since;
  op_hold(&op->op);
  while (from < t->head && !op->op.settled && !op->op.cancelled && op->term == t) {
    size_t at = (size_t)(from % t->cap);
    uint64_t left = t->head - from;
    size_t n = t->cap - at;
    if (n > left) n = (size_t)left;
    if (n > TERM_REPLAY_PIECE) n = TERM_REPLAY_PIECE;
    emit(op, from, t->ring + at, n);
    from += n;
  }
  int live = !op->op.settled && !op->op.cancelled && op->term == t;
  op_unhold(&op->op);
  if (!live) return;
  if (t->ended) {
    unlink_op(op);
    op_settle(&op->op, NULL);
  }
}

static void ended_err(err_t *err, const char *id) {
  err_sandbox(err, CODE_PROCESS, "Sandbox terminal has ended: %s", id);
}

static void term_start(op_t *o) {
  eterm_op_t *op = (eterm_op_t *)o;
  err_t err = ERR_INIT;
  if (op->r.action == TA_START) {
    do_start(op);
    return;
  }
  io_t *io = o->js->io;
  if (op->r.action == TA_LIST) {
    size_t n = 0;
    for (eterm_t *t = terms; t != NULL; t = t->next)
      n += t->io == io && !t->ended && strcmp(t->container, o->sb->container_name) == 0;
    op->ids = calloc(n ? n : 1, sizeof(char *));
    if (op->ids == NULL) err_oom(&err);
    for (eterm_t *t = terms; op->ids != NULL && t != NULL && op->nids < n; t = t->next)
      if (t->io == io && !t->ended && strcmp(t->container, o->sb->container_name) == 0) {
        if ((op->ids[op->nids] = strdup(t->id)) == NULL) {
          err_oom(&err);
          break;
        }
        op->nids++;
      }
    op_settle(o, &err);
    return;
  }
  eterm_t *t = find(io, o->sb->container_name, op->r.id);
  if (t == NULL) {
    err_sandbox(&err, CODE_PROCESS, "Unknown sandbox terminal: %s", op->r.id);
    op_settle(o, &err);
    return;
  }
  switch (op->r.action) {
    case TA_ATTACH:
      op->pid = t->pid;
      break;
    case TA_WRITE:
      if (t->ended || t->task == NULL) {
        ended_err(&err, op->r.id);
      } else if (exec_task_queued(t->task) > 0 && exec_task_queued(t->task) + op->r.input_len > TERM_WRITE_HIGH) {
        err_sandbox(&err, CODE_PROCESS,
                    "Sandbox terminal %s does not read its input: %zu bytes wait unwritten (at most %u).", op->r.id,
                    exec_task_queued(t->task), TERM_WRITE_HIGH);
      } else if (op->r.input_len > 0 && exec_task_write(t->task, op->r.input, op->r.input_len) != 0) {
        ended_err(&err, op->r.id);
      }
      break;
    case TA_WAIT:
      if (!t->ended) {
        link_op(t, op);
        update_flow(t);
        return;
      }
      op->exit_code = t->exit_code;
      op->signal_name_sig = t->signalled && t->exit_code == 128 + t->signalled ? t->signalled : 0;
      break;
    case TA_OUTPUT:
      op->timer = sbx_timer_start(io, 0, on_replay, op);
      if (op->timer == NULL) {
        err_oom(&err);
        break;
      }
      link_op(t, op);
      update_flow(t);
      return;
    case TA_RESIZE:
      if (t->ended || t->exec_id == NULL) {
        ended_err(&err, op->r.id);
        break;
      }
      op->req = resize_req(op, t->exec_id, on_resized, &err);
      if (op->req == NULL) break;
      link_op(t, op);
      return;
    case TA_SIGNAL: {
      if (t->ended) break; /* delivered: false */
      char sig[8];
      snprintf(sig, sizeof(sig), "%d", op->r.signal);
      op->task = op->r.signal == SIGKILL
                     ? helper(op, EXEC_KILL_SH, "anvia-kill", t->marker, NULL, on_signalled, &err)
                     : helper(op, TERM_SIGNAL_SH, "anvia-term-signal", t->marker, sig, on_signalled, &err);
      if (op->task == NULL) break;
      link_op(t, op);
      return;
    }
    default:
      break;
  }
  op_settle(o, &err);
  err_clear(&err);
}

static void term_stop(op_t *o) {
  eterm_op_t *op = (eterm_op_t *)o;
  eterm_t *t = op->term;
  if (op->task) exec_task_cancel(op->task);
  op->task = NULL;
  http_req_free(op->req);
  op->req = NULL;
  sbx_timer_cancel(op->timer);
  op->timer = NULL;
  unlink_op(op);
  /* A start given up: its terminal goes (nobody was told its id). */
  if (op->r.action == TA_START && t != NULL && !t->ended) {
    if (t->task) exec_task_cancel(t->task);
    t->task = NULL;
    if (t->leash) exec_task_cancel(t->leash);
    t->leash = NULL;
    t->ended = 1;
    t->exit_code = -1;
    if (t->ops == NULL) term_free(t);
  }
}

static void term_control(op_t *o, int command) {
  eterm_op_t *op = (eterm_op_t *)o;
  op->paused = command == OP_PAUSE;
  if (op->term != NULL) update_flow(op->term);
}

static napi_value term_value(op_t *o) {
  eterm_op_t *op = (eterm_op_t *)o;
  term_answer_t a = {.pid = op->pid, .exit_code = op->exit_code, .signal = op->signal_name_sig,
                     .cols = op->r.cols, .rows = op->r.rows, .delivered = op->delivered, .ids = op->ids,
                     .nids = op->nids};
  return term_req_value(o->js->env, &op->r, &a);
}

static void term_destroy(op_t *o) {
  eterm_op_t *op = (eterm_op_t *)o;
  if (op->task) exec_task_cancel(op->task);
  http_req_free(op->req);
  sbx_timer_cancel(op->timer);
  unlink_op(op);
  term_req_free(&op->r);
  for (size_t i = 0; i < op->nids; i++) free(op->ids[i]);
  free(op->ids);
}

static const op_vtable_t term_vt = {.name = "engineTerminal", .start = term_start, .stop = term_stop,
                                    .result = term_value, .destroy = term_destroy, .control = term_control};

/* The environment ends: its terminals go with it (their execs' connections close). */
static void teardown(jsenv_t *js) {
  eterm_t *t = terms;
  while (t != NULL) {
    eterm_t *next = t->next;
    if (t->js == js) term_free(t);
    t = next;
  }
}

op_t *engine_term_op(jsenv_t *js, sandbox_t *sb, term_req_t *r) {
  eterm_op_t *op = op_new(js, &term_vt, sizeof(*op), sb);
  if (op == NULL) return NULL;
  op->r = *r;
  memset(r, 0, sizeof(*r));
  return &op->op;
}

napi_value engine_term_prepare(napi_env env, sandbox_t *sb, napi_value *argv) {
  jsenv_t *js = jsenv_get(env);
  err_t err = ERR_INIT;
  term_action_t action = TA_LIST;
  if (term_req_action(env, argv[2], &action, &err) != 0) return convert_throw_err(js, &err);
  eterm_op_t *op = op_prepare(env, &term_vt, sizeof(*op), sb);
  if (op == NULL) return NULL;
  op->r.action = action;
  if (term_req_parse(env, argv[1], sb, &op->r, &err) != 0) return op_prepared(&op->op, &err);
  return op_prepared(&op->op, NULL);
}
