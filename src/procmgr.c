/*
 * procmgr.c - managed processes (see procmgr.h): start with the marker handshake, output
 * tails, logs, listing, stop (TERM to the group, KILL after the grace period) and
 * disposal when the sandbox stops or is destroyed.
 */
#include "procmgr.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "api.h"
#include "args.h"
#include "exec.h"
#include "napi_util.h"
#include "op.h"
#include "opts.h"
#include "paths.h"
#include "runtime_ops.h"
#include "tail.h"
#include "timer.h"

/* The original's launcher and wrapper, byte for byte. */
static const char LAUNCHER[] =
    "wrapper=\"$1\"\n"
    "shift\n"
    "if command -v setsid >/dev/null 2>&1 && setsid -w true >/dev/null 2>&1; then\n"
    "  exec setsid -w sh -c \"$wrapper\" \"$@\"\n"
    "fi\n"
    "exec sh -c \"$wrapper\" \"$@\"";

static const char WRAPPER[] =
    "marker=\"$1\"\n"
    "shift\n"
    "group=$$\n"
    "printf '\\036%s:%s:%s\\036' \"$marker\" \"$$\" \"$group\"\n"
    "IFS= read -r ready || exit 125\n"
    "[ \"$ready\" = \"start\" ] || exit 125\n"
    "\"$@\" &\n"
    "child=$!\n"
    "terminate() {\n"
    "  wait \"$child\" 2>/dev/null || true\n"
    "  exit 143\n"
    "}\n"
    "trap terminate TERM INT\n"
    "wait \"$child\"\n"
    "exit $?";

/* kill -0 on the group, as the original's group check. */
static const char GROUP_CHECK[] = "kill -0 \"-$1\" 2>/dev/null";

/*
 * The original's stop in one exec: TERM to the group, wait up to the grace period for it
 * to go, KILL, wait up to a second more. Exit 0: the group is gone; 1: it is not.
 */
static const char STOP_SCRIPT[] =
    "pg=\"$1\"\n"
    "n=$(( ($2 + 49) / 50 ))\n"
    "gone() { ! kill -0 \"-$pg\" 2>/dev/null; }\n"
    "gone && exit 0\n"
    "kill -TERM \"-$pg\" 2>/dev/null\n"
    "i=0\n"
    "while [ \"$i\" -lt \"$n\" ]; do gone && exit 0; sleep 0.05; i=$((i + 1)); done\n"
    "gone && exit 0\n"
    "kill -KILL \"-$pg\" 2>/dev/null\n"
    "i=0\n"
    "while [ \"$i\" -lt 20 ]; do gone && exit 0; sleep 0.05; i=$((i + 1)); done\n"
    "exit 1";

#define MARKER_PREFIX "ANVIA_PROCESS"
#define CHECK_TIMEOUT_MS 5000
#define CLOSE_WAIT_MS 1000
#define MAX_MARKER_SCAN 4096

enum { P_RUNNING = 0, P_EXITED, P_STOPPED };

typedef struct proc_rec proc_rec_t;
typedef struct proc_watch proc_watch_t;

/* Someone waiting for a record to start or to close. */
struct proc_watch {
  void (*fn)(proc_watch_t *w);
  proc_watch_t *next;
};

struct proc_rec {
  int refs;
  procmgr_t *pm;
  proc_rec_t *next;
  int in_registry;
  char id[37];
  char *command;
  char **args;
  size_t nargs;
  char *cwd; /* as given, or NULL */
  int status;
  int has_exit_code;
  int exit_code;
  char started_at[64];
  char ended_at[64];
  tail_t out, err;
  exec_task_t *task;
  char marker_start[64]; /* "\x1eANVIA_PROCESS:<id>:" */
  size_t marker_start_len;
  buf_t scan; /* stdout held back while looking for the marker */
  int marker_seen;
  int marker_bad;
  long long pgid;
  int closed;
  int stop_requested;
  proc_watch_t *watchers;
};

struct procmgr {
  sandbox_t *sb; /* not a reference: the sandbox owns the manager */
  proc_rec_t *records;
  size_t count;
  int disposed;
};

static void iso_now(char out[64]) {
  struct timeval tv;
  gettimeofday(&tv, NULL);
  struct tm tm;
  gmtime_r(&tv.tv_sec, &tm);
  snprintf(out, 64, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
           tm.tm_min, tm.tm_sec, (int)(tv.tv_usec / 1000));
}

static int process_error(err_t *err, const char *fmt, const char *arg) {
  return err_sandbox(err, CODE_PROCESS, fmt, arg);
}

/* ---- records ---- */

static void rec_ref(proc_rec_t *r) { r->refs++; }

static void rec_unref(proc_rec_t *r) {
  if (r == NULL || --r->refs > 0) return;
  exec_task_cancel(r->task);
  free(r->command);
  for (size_t i = 0; i < r->nargs; i++) free(r->args[i]);
  free(r->args);
  free(r->cwd);
  tail_free(&r->out);
  tail_free(&r->err);
  buf_free(&r->scan);
  free(r);
}

static void rec_remove(proc_rec_t *r) {
  procmgr_t *pm = r->pm;
  if (!r->in_registry) return;
  for (proc_rec_t **p = &pm->records; *p; p = &(*p)->next) {
    if (*p == r) {
      *p = r->next;
      break;
    }
  }
  r->in_registry = 0;
  r->next = NULL;
  pm->count--;
  rec_unref(r);
}

static proc_rec_t *rec_find(procmgr_t *pm, const char *id) {
  for (proc_rec_t *r = pm->records; r; r = r->next)
    if (strcmp(r->id, id) == 0) return r;
  return NULL;
}

static void rec_watch(proc_rec_t *r, proc_watch_t *w) {
  w->next = r->watchers;
  r->watchers = w;
}

static void rec_unwatch(proc_rec_t *r, proc_watch_t *w) {
  for (proc_watch_t **p = &r->watchers; *p; p = &(*p)->next) {
    if (*p == w) {
      *p = w->next;
      break;
    }
  }
  w->next = NULL;
}

/* Tells every watcher something changed; each unwatches itself if it is done. */
static void rec_notify(proc_rec_t *r) {
  rec_ref(r);
  proc_watch_t *list = r->watchers;
  while (list) {
    proc_watch_t *next = list->next;
    list->fn(list);
    list = next;
  }
  rec_unref(r);
}

procmgr_t *procmgr_new(sandbox_t *sb) {
  procmgr_t *pm = calloc(1, sizeof(*pm));
  if (pm) pm->sb = sb;
  return pm;
}

void procmgr_free(procmgr_t *pm) {
  if (pm == NULL) return;
  while (pm->records) rec_remove(pm->records);
  free(pm);
}

static procmgr_t *manager_of(sandbox_t *sb) {
  if (sb->procs == NULL) sb->procs = procmgr_new(sb);
  return sb->procs;
}

/* ---- output and the marker ---- */

static void scan_marker(proc_rec_t *r) {
  uint8_t *data = r->scan.data;
  size_t len = r->scan.len;
  uint8_t *start = len >= r->marker_start_len ? memmem(data, len, r->marker_start, r->marker_start_len) : NULL;
  if (start == NULL) {
    /* Keep only what could still be the beginning of the marker. */
    size_t keep = r->marker_start_len - 1;
    if (len > keep) {
      tail_accept(&r->out, data, len - keep);
      buf_consume(&r->scan, len - keep);
    }
    return;
  }
  size_t at = (size_t)(start - data);
  uint8_t *body = start + r->marker_start_len;
  uint8_t *end = memchr(body, 0x1e, len - at - r->marker_start_len);
  if (end == NULL) {
    if (at > 0) {
      tail_accept(&r->out, data, at);
      buf_consume(&r->scan, at);
    }
    if (r->scan.len > MAX_MARKER_SCAN) r->marker_bad = 1;
    return;
  }
  char ids[64];
  size_t n = (size_t)(end - body);
  long long pid = 0, group = 0;
  char extra;
  int ok = n < sizeof(ids);
  if (ok) {
    memcpy(ids, body, n);
    ids[n] = 0;
    ok = sscanf(ids, "%lld:%lld%c", &pid, &group, &extra) == 2 && pid > 0 && group > 0 && pid <= 9007199254740991LL &&
         group <= 9007199254740991LL;
  }
  if (at > 0) tail_accept(&r->out, data, at);
  size_t after = (size_t)(end + 1 - data);
  if (after < len) tail_accept(&r->out, data + after, len - after);
  buf_free(&r->scan);
  if (!ok) {
    r->marker_bad = 1;
    return;
  }
  r->pgid = group;
  r->marker_seen = 1;
}

static void on_proc_output(void *ud, int stream, const uint8_t *data, size_t len) {
  proc_rec_t *r = ud;
  if (stream == 2) {
    tail_accept(&r->err, data, len);
    return;
  }
  if (r->marker_seen || r->marker_bad) {
    tail_accept(&r->out, data, len);
    return;
  }
  if (buf_append(&r->scan, data, len) != 0) {
    r->marker_bad = 1;
    return;
  }
  scan_marker(r);
  if (r->marker_seen) {
    /* The group is recorded: let the command run. */
    static const uint8_t go[] = "start\n";
    exec_task_write(r->task, go, sizeof(go) - 1);
    exec_task_end_stdin(r->task);
  }
  if (r->marker_seen || r->marker_bad) rec_notify(r);
}

static void on_proc_done(void *ud, exec_result_t *result, err_t *err) {
  proc_rec_t *r = ud;
  r->task = NULL;
  if (r->scan.len > 0) {
    tail_accept(&r->out, r->scan.data, r->scan.len);
    buf_free(&r->scan);
  }
  r->status = r->stop_requested ? P_STOPPED : P_EXITED;
  r->has_exit_code = 1;
  r->exit_code = result != NULL ? result->exit_code : 1;
  iso_now(r->ended_at);
  r->closed = 1;
  exec_result_free(result);
  (void)err;
  rec_notify(r);
  rec_unref(r); /* the task's reference */
}

/* ---- info objects ---- */

static napi_value info_to_js(napi_env env, proc_rec_t *r) {
  napi_value o, args;
  napi_create_object(env, &o);
  napi_set_named_property(env, o, "id", nu_string(env, r->id));
  napi_set_named_property(env, o, "command", nu_string(env, r->command));
  napi_create_array_with_length(env, r->nargs, &args);
  for (size_t i = 0; i < r->nargs; i++) napi_set_element(env, args, (uint32_t)i, nu_string(env, r->args[i]));
  napi_set_named_property(env, o, "args", args);
  napi_set_named_property(env, o, "status",
                          nu_string(env, r->status == P_RUNNING ? "running" : r->status == P_EXITED ? "exited" : "stopped"));
  napi_set_named_property(env, o, "startedAt", nu_string(env, r->started_at));
  if (r->cwd) napi_set_named_property(env, o, "cwd", nu_string(env, r->cwd));
  if (r->has_exit_code) napi_set_named_property(env, o, "exitCode", nu_number(env, r->exit_code));
  if (r->ended_at[0]) napi_set_named_property(env, o, "endedAt", nu_string(env, r->ended_at));
  return o;
}

/* ---- small execs against the group ---- */

typedef void (*script_done_fn)(void *ud, int exit_code, exec_result_t *r, err_t *err);

typedef struct script_call {
  script_done_fn fn;
  void *ud;
} script_call_t;

static void on_script_done(void *ud, exec_result_t *result, err_t *err) {
  script_call_t *c = ud;
  script_call_t call = *c;
  free(c);
  int code = result && !result->timed_out ? result->exit_code : -1;
  call.fn(call.ud, code, result, err);
}

static exec_task_t *run_script(sandbox_t *sb, const char *script, const char *name, const char *a1, const char *a2,
                               int64_t timeout_ms, script_done_fn fn, void *ud, err_t *err) {
  exec_spec_t spec;
  memset(&spec, 0, sizeof(spec));
  const char *argv[6] = {"sh", "-c", script, name, a1, a2};
  script_call_t *c = malloc(sizeof(*c));
  spec.workdir = strdup("/");
  spec.timeout_ms = timeout_ms;
  spec.max_output = (size_t)sb->runtime.max_output_bytes;
  spec.kill_tree = 1;
  if (c == NULL || spec.workdir == NULL || exec_spec_set_argv(&spec, argv, a2 ? 6 : 5) != 0) {
    free(c);
    exec_spec_free(&spec);
    err_oom(err);
    return NULL;
  }
  c->fn = fn;
  c->ud = ud;
  exec_callbacks_t cbs = {NULL, on_script_done};
  exec_task_t *t = exec_task_start(sb, &spec, &cbs, c, err);
  if (t == NULL) free(c);
  return t;
}

/* ================= terminate: shared by stop and dispose ================= */

typedef struct terminate terminate_t;
typedef void (*terminate_done_fn)(void *ud, int stopped, err_t *err);

struct terminate {
  sandbox_t *sb;
  proc_rec_t *rec;
  int64_t grace_ms;
  proc_watch_t watch;
  int watching;
  sbx_timer_t *timer;
  exec_task_t *task;
  terminate_done_fn done;
  void *ud;
  int waiting_close_after_group; /* 1: the group is gone, waiting for the exec to end */
};

static void term_free(terminate_t *t) {
  if (t->watching) rec_unwatch(t->rec, &t->watch);
  sbx_timer_cancel(t->timer);
  exec_task_cancel(t->task);
  rec_unref(t->rec);
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
  rec_unwatch(t->rec, w);
  t->watching = 0;
  term_finish(t, 1, NULL);
}

static void on_term_close_timeout(void *ud) {
  terminate_t *t = ud;
  t->timer = NULL;
  if (t->waiting_close_after_group) {
    /* The group is gone but the exec still holds the stream: end it (the original killed
     * its docker CLI child here). */
    exec_task_t *task = t->rec->task;
    t->rec->task = NULL;
    exec_task_cancel(task);
    if (!t->rec->closed) {
      t->rec->closed = 1;
      t->rec->status = P_STOPPED;
      t->rec->has_exit_code = 1;
      t->rec->exit_code = 137;
      iso_now(t->rec->ended_at);
      rec_unref(t->rec); /* the task's reference */
    }
    term_finish(t, 1, NULL);
    return;
  }
  /* No group was ever recorded and the process did not end. */
  term_finish(t, t->rec->status != P_RUNNING, NULL);
}

static void wait_close(terminate_t *t, uint64_t ms, int after_group) {
  if (t->rec->status != P_RUNNING || t->rec->closed) {
    term_finish(t, 1, NULL);
    return;
  }
  t->waiting_close_after_group = after_group;
  t->watch.fn = on_term_close_watch;
  rec_watch(t->rec, &t->watch);
  t->watching = 1;
  t->timer = sbx_timer_start(t->sb->addon, ms, on_term_close_timeout, t);
}

static void on_stop_script(void *ud, int code, exec_result_t *result, err_t *err) {
  terminate_t *t = ud;
  t->task = NULL;
  if (err != NULL) {
    exec_result_free(result);
    term_finish(t, 0, err);
    return;
  }
  if (code == 0) {
    exec_result_free(result);
    wait_close(t, CLOSE_WAIT_MS, 1);
    return;
  }
  if (code == 1) {
    exec_result_free(result);
    term_finish(t, 0, NULL);
    return;
  }
  err_t e;
  err_init(&e);
  err_sandbox(&e, CODE_DOCKER_COMMAND_FAILED, "Unable to stop sandbox process: %s", t->rec->id);
  e.exec_details = result;
  term_finish(t, 0, &e);
  err_clear(&e);
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
  rec_ref(r);
  t->grace_ms = grace_ms;
  t->done = done;
  t->ud = ud;
  r->stop_requested = 1;
  if (!r->marker_seen) {
    /* Still starting (or never started): give it min(grace, 250 ms) to end. */
    if (r->status != P_RUNNING || r->closed) {
      t->timer = sbx_timer_start(sb->addon, 0, on_term_close_timeout, t);
    } else {
      t->watch.fn = on_term_close_watch;
      rec_watch(r, &t->watch);
      t->watching = 1;
      t->timer = sbx_timer_start(sb->addon, (uint64_t)(grace_ms < 250 ? grace_ms : 250), on_term_close_timeout, t);
    }
    return t;
  }
  char pg[32], grace[32];
  snprintf(pg, sizeof(pg), "%lld", r->pgid);
  snprintf(grace, sizeof(grace), "%lld", (long long)grace_ms);
  t->task = run_script(sb, STOP_SCRIPT, "anvia-process-stop", pg, grace, grace_ms + CLOSE_WAIT_MS + CHECK_TIMEOUT_MS,
                       on_stop_script, t, err);
  if (t->task == NULL) {
    rec_unref(r);
    free(t);
    return NULL;
  }
  return t;
}

static void terminate_cancel(terminate_t *t) {
  if (t) term_free(t);
}

/* ================= start ================= */

typedef struct start_op {
  op_t op;
  sandbox_t *sb;
  char *command;
  char **args;
  size_t nargs;
  char *cwd_raw;
  char *workdir;
  kv_list_t env;
  proc_rec_t *rec;
  proc_watch_t watch;
  int watching;
  sbx_timer_t *timeout;
  exec_task_t *check; /* prune's group check */
  proc_rec_t *prune_at;
  int pruning;
} start_op_t;

static void start_launch(start_op_t *op);
static void prune_next(start_op_t *op);

static void start_fail(start_op_t *op, err_t *err) {
  op_reject(&op->op, err);
  op_release(&op->op);
}

/* A failed start: the command never got "start"; make sure nothing of it runs. */
static void discard_record(start_op_t *op) {
  proc_rec_t *r = op->rec;
  if (r == NULL) return;
  if (op->watching) rec_unwatch(r, &op->watch);
  op->watching = 0;
  r->stop_requested = 1;
  exec_task_t *task = r->task;
  r->task = NULL;
  if (task) {
    exec_task_cancel(task); /* closes stdin (the wrapper exits 125) and ends the tree */
    rec_unref(r);           /* the task's reference */
  }
  rec_remove(r);
  rec_unref(r); /* ours */
  op->rec = NULL;
}

static void on_start_watch(proc_watch_t *w) {
  start_op_t *op = (start_op_t *)((char *)w - offsetof(start_op_t, watch));
  proc_rec_t *r = op->rec;
  err_t err;
  err_init(&err);
  if (r->marker_seen) {
    rec_unwatch(r, w);
    op->watching = 0;
    sbx_timer_cancel(op->timeout);
    op->timeout = NULL;
    op_resolve(&op->op);
    op_release(&op->op);
    return;
  }
  if (r->marker_bad) {
    sbx_timer_cancel(op->timeout);
    op->timeout = NULL;
    process_error(&err, "Sandbox process returned invalid process IDs.%s", "");
  } else if (r->closed) {
    sbx_timer_cancel(op->timeout);
    op->timeout = NULL;
    process_error(&err, "Sandbox process exited before startup completed: %s", r->id);
  } else {
    return;
  }
  discard_record(op);
  start_fail(op, &err);
  err_clear(&err);
}

static void on_start_timeout(void *ud) {
  start_op_t *op = ud;
  op->timeout = NULL;
  err_t err;
  err_init(&err);
  err_sandbox(&err, CODE_TIMEOUT, "Starting sandbox process timed out.");
  discard_record(op);
  start_fail(op, &err);
  err_clear(&err);
}

static void start_launch(start_op_t *op) {
  sandbox_t *sb = op->sb;
  procmgr_t *pm = manager_of(sb);
  err_t err;
  err_init(&err);
  if ((int64_t)pm->count >= sb->runtime.max_processes) {
    char msg[128];
    snprintf(msg, sizeof(msg), "Sandbox process limit reached (%zu >= %lld).", pm->count, (long long)sb->runtime.max_processes);
    process_error(&err, "%s", msg);
    start_fail(op, &err);
    err_clear(&err);
    return;
  }
  proc_rec_t *r = calloc(1, sizeof(*r));
  if (r == NULL || uuid_v4(r->id) != 0) goto oom_rec;
  r->refs = 1;
  r->pm = pm;
  r->status = P_RUNNING;
  iso_now(r->started_at);
  tail_init(&r->out, (size_t)sb->runtime.max_output_bytes);
  tail_init(&r->err, (size_t)sb->runtime.max_output_bytes);
  buf_init(&r->scan, 0);
  r->command = op->command;
  op->command = NULL;
  r->args = op->args;
  r->nargs = op->nargs;
  op->args = NULL;
  op->nargs = 0;
  r->cwd = op->cwd_raw;
  op->cwd_raw = NULL;
  char marker[64];
  snprintf(marker, sizeof(marker), "%s:%s", MARKER_PREFIX, r->id);
  r->marker_start_len = (size_t)snprintf(r->marker_start, sizeof(r->marker_start), "\036%s:", marker);

  exec_spec_t spec;
  memset(&spec, 0, sizeof(spec));
  size_t argc = 7 + r->nargs;
  const char **argv = calloc(argc, sizeof(char *));
  if (argv == NULL) goto oom_rec;
  argv[0] = "sh";
  argv[1] = "-c";
  argv[2] = LAUNCHER;
  argv[3] = "anvia-process-launcher";
  argv[4] = WRAPPER;
  argv[5] = "anvia-managed-process";
  argv[6] = marker;
  /* argv[7] is the command: rebuilt below with the args after it */
  const char **full = calloc(argc + 1, sizeof(char *));
  if (full == NULL) {
    free(argv);
    goto oom_rec;
  }
  memcpy(full, argv, 7 * sizeof(char *));
  full[7] = r->command;
  for (size_t i = 0; i < r->nargs; i++) full[8 + i] = r->args[i];
  free(argv);
  int rc = exec_spec_set_argv(&spec, full, argc + 1);
  free(full);
  /* {...configuration.env, ...options.env}: later keys win, as in the original. */
  for (size_t i = 0; rc == 0 && i < sb->env.count; i++) {
    int overridden = 0;
    for (size_t j = 0; j < op->env.count; j++)
      if (strcmp(op->env.items[j].key, sb->env.items[i].key) == 0) overridden = 1;
    if (!overridden) rc = exec_spec_add_env(&spec, sb->env.items[i].key, sb->env.items[i].value);
  }
  for (size_t i = 0; rc == 0 && i < op->env.count; i++) rc = exec_spec_add_env(&spec, op->env.items[i].key, op->env.items[i].value);
  spec.workdir = op->workdir;
  op->workdir = NULL;
  spec.attach_stdin = 1;
  spec.max_output = 0;
  spec.kill_tree = 1;
  if (rc != 0) {
    exec_spec_free(&spec);
    goto oom_rec;
  }
  /* Registered now, like the original: it counts towards the limit while it starts. */
  r->next = NULL;
  proc_rec_t **tail = &pm->records;
  while (*tail) tail = &(*tail)->next;
  *tail = r;
  r->in_registry = 1;
  pm->count++;
  rec_ref(r); /* ours */
  op->rec = r;
  exec_callbacks_t cbs = {on_proc_output, on_proc_done};
  rec_ref(r); /* the task's */
  r->task = exec_task_start(sb, &spec, &cbs, r, &err);
  if (r->task == NULL) {
    rec_unref(r);
    rec_remove(r);
    rec_unref(r);
    op->rec = NULL;
    start_fail(op, &err);
    err_clear(&err);
    return;
  }
  op->watch.fn = on_start_watch;
  rec_watch(r, &op->watch);
  op->watching = 1;
  op->timeout = sbx_timer_start(sb->addon, (uint64_t)sb->runtime.command_timeout_ms, on_start_timeout, op);
  return;
oom_rec:
  if (r) rec_unref(r);
  err_oom(&err);
  start_fail(op, &err);
  err_clear(&err);
}

/* pruneCompletedRecords: while at the limit, drop finished records whose group is gone. */
static void on_prune_check(void *ud, int code, exec_result_t *result, err_t *err) {
  start_op_t *op = ud;
  op->check = NULL;
  exec_result_free(result);
  proc_rec_t *r = op->prune_at;
  if (err != NULL) {
    rec_unref(r);
    op->prune_at = NULL;
    start_fail(op, err);
    return;
  }
  proc_rec_t *next = r->next;
  if (next) rec_ref(next);
  if (code != 0 && r->status != P_RUNNING) rec_remove(r);
  rec_unref(r);
  op->prune_at = next;
  prune_next(op);
}

static void prune_next(start_op_t *op) {
  procmgr_t *pm = manager_of(op->sb);
  err_t err;
  err_init(&err);
  while (op->prune_at != NULL) {
    proc_rec_t *r = op->prune_at;
    if ((int64_t)pm->count < op->sb->runtime.max_processes || !r->in_registry) {
      rec_unref(r);
      op->prune_at = NULL;
      break;
    }
    if (r->status != P_RUNNING) {
      if (!r->marker_seen) {
        proc_rec_t *next = r->next;
        if (next) rec_ref(next);
        rec_remove(r);
        rec_unref(r);
        op->prune_at = next;
        continue;
      }
      char pg[32];
      snprintf(pg, sizeof(pg), "%lld", r->pgid);
      op->check = run_script(op->sb, GROUP_CHECK, "anvia-process-group-check", pg, NULL, CHECK_TIMEOUT_MS, on_prune_check, op, &err);
      if (op->check == NULL) {
        rec_unref(r);
        op->prune_at = NULL;
        start_fail(op, &err);
        err_clear(&err);
      }
      return;
    }
    proc_rec_t *next = r->next;
    if (next) rec_ref(next);
    rec_unref(r);
    op->prune_at = next;
  }
  start_launch(op);
}

static void start_start(op_t *o) {
  start_op_t *op = (start_op_t *)o;
  procmgr_t *pm = manager_of(op->sb);
  err_t err;
  err_init(&err);
  if (pm == NULL) {
    err_oom(&err);
  } else if (pm->disposed) {
    process_error(&err, "Sandbox process manager has been disposed.%s", "");
  } else {
    int blank = 1;
    for (const char *p = op->command; *p; p++)
      if (!strchr(" \t\n\r\v\f", *p)) blank = 0;
    if (blank) process_error(&err, "Sandbox process command cannot be empty.%s", "");
  }
  if (err_is_set(&err)) {
    start_fail(op, &err);
    err_clear(&err);
    return;
  }
  op->prune_at = pm->records;
  if (op->prune_at) rec_ref(op->prune_at);
  prune_next(op);
}

static void start_cancel(op_t *o) {
  start_op_t *op = (start_op_t *)o;
  sbx_timer_cancel(op->timeout);
  op->timeout = NULL;
  exec_task_cancel(op->check);
  op->check = NULL;
  if (op->prune_at) rec_unref(op->prune_at);
  op->prune_at = NULL;
  if (op->rec && !op->rec->marker_seen) discard_record(op);
  op_reject_cancelled(o);
  op_release(o);
}

static napi_value start_result(op_t *o) { return info_to_js(o->addon->env, ((start_op_t *)o)->rec); }

static void start_destroy(op_t *o) {
  start_op_t *op = (start_op_t *)o;
  sbx_timer_cancel(op->timeout);
  exec_task_cancel(op->check);
  if (op->prune_at) rec_unref(op->prune_at);
  if (op->rec) {
    if (op->watching) rec_unwatch(op->rec, &op->watch);
    rec_unref(op->rec);
  }
  free(op->command);
  for (size_t i = 0; i < op->nargs; i++) free(op->args[i]);
  free(op->args);
  free(op->cwd_raw);
  free(op->workdir);
  kv_list_free(&op->env);
  sandbox_unref(op->sb);
}

static const op_vtable_t start_vt = {"startProcess", start_start, start_cancel, start_result, start_destroy, NULL};

/* native.prepareStartProcess(sandbox, options): validateProcessStartOptions. */
napi_value procmgr_prepare_start(napi_env env, sandbox_t *sb, napi_value *argv, size_t argc) {
  addon_t *a = addon_get(env);
  napi_value options = args_options(env, argv);
  if (options == NULL) return NULL;
  err_t err;
  err_init(&err);
  char **args = NULL, *cwd_norm = NULL;
  size_t nargs = 0;
  kv_list_t envs = {0};
  start_op_t *op = NULL;
  napi_value command = nu_get(env, options, "command");
  if (check_nonempty_string(env, command, "command", &err)) goto fail;
  if (args_string_array(env, nu_get(env, options, "args"), &args, &nargs, &err)) goto fail;
  napi_value cwd = nu_get(env, options, "cwd");
  if (!nu_is_undefined(env, cwd) && (cwd_norm = args_sandbox_path(env, cwd, "cwd", 1, &err)) == NULL) goto fail;
  if (read_string_record(env, nu_get(env, options, "env"), "env", &envs, &err)) goto fail;
  op = (start_op_t *)op_alloc(a, &start_vt, sizeof(start_op_t));
  if (op == NULL) goto oom;
  op->sb = sb;
  sandbox_ref(sb);
  op->env = envs;
  memset(&envs, 0, sizeof(envs));
  op->args = args;
  op->nargs = nargs;
  args = NULL;
  op->command = nu_strdup(env, command);
  op->cwd_raw = nu_is_undefined(env, cwd) ? NULL : nu_strdup(env, cwd);
  op->workdir = sandbox_container_path(sb->workdir, cwd_norm ? cwd_norm : ".", &err);
  if (op->command == NULL || op->workdir == NULL || (!nu_is_undefined(env, cwd) && op->cwd_raw == NULL)) goto oom;
  free(cwd_norm);
  return op_token(&op->op);
oom:
  if (!err_is_set(&err)) err_oom(&err);
fail:
  if (op) op_discard(&op->op);
  args_string_array_free(args, nargs);
  free(cwd_norm);
  kv_list_free(&envs);
  return nu_throw_err(a, &err);
}

/* ================= stop and dispose ================= */

typedef struct stop_op {
  op_t op;
  sandbox_t *sb;
  char *process_id;
  int64_t grace_ms;
  int dispose;
  proc_rec_t *rec;
  terminate_t **terms;
  size_t nterms;
  size_t pending;
  err_t err;
} stop_op_t;

static void stop_settle(stop_op_t *op) {
  if (err_is_set(&op->err)) op_reject(&op->op, &op->err);
  else op_resolve(&op->op);
  op_release(&op->op);
}

static void on_terminated(void *ud, int stopped, err_t *err);

typedef struct term_slot {
  stop_op_t *op;
  size_t index;
  char id[37];
} term_slot_t;

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
    else if (!stopped) process_error(&op->err, "Sandbox process did not stop: %s", id);
  }
  if (r != NULL && err_is_set(&op->err) && r->status == P_RUNNING) r->stop_requested = 0;
  if (--op->pending > 0) return;
  if (op->dispose && !err_is_set(&op->err)) manager_of(op->sb)->disposed = 1;
  stop_settle(op);
}

static void stop_start(op_t *o) {
  stop_op_t *op = (stop_op_t *)o;
  procmgr_t *pm = manager_of(op->sb);
  err_t err;
  err_init(&err);
  if (pm == NULL) {
    err_oom(&op->err);
    stop_settle(op);
    return;
  }
  if (op->dispose && pm->disposed) {
    stop_settle(op);
    return;
  }
  if (!op->dispose) {
    if (pm->disposed) {
      process_error(&op->err, "Sandbox process manager has been disposed.%s", "");
      stop_settle(op);
      return;
    }
    op->rec = rec_find(pm, op->process_id);
    if (op->rec == NULL) {
      process_error(&op->err, "Unknown sandbox process: %s", op->process_id);
      stop_settle(op);
      return;
    }
    rec_ref(op->rec);
  }
  size_t n = op->dispose ? pm->count : 1;
  if (n == 0) {
    pm->disposed = 1;
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
  proc_rec_t *r = op->dispose ? pm->records : op->rec;
  for (size_t i = 0; i < n && r != NULL; i++, r = r->next) {
    term_slot_t *slot = malloc(sizeof(*slot));
    if (slot == NULL) {
      err_oom(&op->err);
      break;
    }
    slot->op = op;
    slot->index = i;
    memcpy(slot->id, r->id, sizeof(slot->id));
    op->terms[i] = terminate_start(op->sb, r, op->dispose ? 1000 : op->grace_ms, on_terminated, slot, &err);
    if (op->terms[i] == NULL) {
      free(slot);
      err_move(&op->err, &err);
      break;
    }
    op->pending++;
  }
  if (op->pending == 0) stop_settle(op);
}

static void stop_cancel(op_t *o) {
  stop_op_t *op = (stop_op_t *)o;
  for (size_t i = 0; i < op->nterms; i++) {
    if (op->terms[i] == NULL) continue;
    terminate_t *t = op->terms[i];
    term_slot_t *slot = t->ud;
    terminate_cancel(t);
    free(slot);
    op->terms[i] = NULL;
  }
  op->pending = 0;
  if (op->rec && op->rec->status == P_RUNNING) op->rec->stop_requested = 0;
  op_reject_cancelled(o);
  op_release(o);
}

static napi_value stop_result(op_t *o) {
  stop_op_t *op = (stop_op_t *)o;
  return op->dispose ? nu_undefined(o->addon->env) : info_to_js(o->addon->env, op->rec);
}

static void stop_destroy(op_t *o) {
  stop_op_t *op = (stop_op_t *)o;
  for (size_t i = 0; i < op->nterms; i++) {
    if (op->terms[i] == NULL) continue;
    term_slot_t *slot = op->terms[i]->ud;
    terminate_cancel(op->terms[i]);
    free(slot);
  }
  free(op->terms);
  rec_unref(op->rec);
  free(op->process_id);
  err_clear(&op->err);
  sandbox_unref(op->sb);
}

static const op_vtable_t stop_vt = {"stopProcess", stop_start, stop_cancel, stop_result, stop_destroy, NULL};

static stop_op_t *new_stop_op(napi_env env, sandbox_t *sb) {
  stop_op_t *op = (stop_op_t *)op_alloc(addon_get(env), &stop_vt, sizeof(stop_op_t));
  if (op == NULL) return NULL;
  op->sb = sb;
  sandbox_ref(sb);
  err_init(&op->err);
  return op;
}

/* native.prepareStopProcess(sandbox, options): assertOptionsObject, processId, gracePeriodMs. */
napi_value procmgr_prepare_stop(napi_env env, sandbox_t *sb, napi_value *argv, size_t argc) {
  addon_t *a = addon_get(env);
  napi_value options = args_options(env, argv);
  if (options == NULL) return NULL;
  err_t err;
  err_init(&err);
  napi_value pid = nu_get(env, options, "processId");
  if (check_nonempty_string(env, pid, "processId", &err)) return nu_throw_err(a, &err);
  int64_t grace = 5000;
  napi_value g = nu_get(env, options, "gracePeriodMs");
  if (!nu_is_undefined(env, g) && check_nonnegative_safe_integer(env, g, "gracePeriodMs", &grace, &err))
    return nu_throw_err(a, &err);
  stop_op_t *op = new_stop_op(env, sb);
  if (op == NULL || (op->process_id = nu_strdup(env, pid)) == NULL) {
    if (op) op_discard(&op->op);
    err_oom(&err);
    return nu_throw_err(a, &err);
  }
  op->grace_ms = grace;
  return op_token(&op->op);
}

/* native.prepareDisposeProcesses(sandbox) */
napi_value procmgr_prepare_dispose(napi_env env, sandbox_t *sb, napi_value *argv, size_t argc) {
  (void)argv;
  (void)argc;
  stop_op_t *op = new_stop_op(env, sb);
  if (op == NULL) {
    napi_throw_error(env, NULL, "Out of memory.");
    return NULL;
  }
  op->dispose = 1;
  return op_token(&op->op);
}

/* ================= list and logs (synchronous) ================= */

static procmgr_t *active_manager(napi_env env, sandbox_t *sb) {
  procmgr_t *pm = manager_of(sb);
  if (pm == NULL) {
    napi_throw_error(env, NULL, "Out of memory.");
    return NULL;
  }
  if (pm->disposed) {
    err_t err;
    err_init(&err);
    process_error(&err, "Sandbox process manager has been disposed.%s", "");
    nu_throw_err(addon_get(env), &err);
    return NULL;
  }
  return pm;
}

/* native.listProcesses(sandbox) */
napi_value procmgr_list(napi_env env, sandbox_t *sb, napi_value *argv, size_t argc) {
  (void)argv;
  (void)argc;
  procmgr_t *pm = active_manager(env, sb);
  if (pm == NULL) return NULL;
  napi_value arr;
  napi_create_array_with_length(env, pm->count, &arr);
  uint32_t i = 0;
  for (proc_rec_t *r = pm->records; r; r = r->next) napi_set_element(env, arr, i++, info_to_js(env, r));
  return arr;
}

/* native.processLogs(sandbox, processId, tailBytes | undefined) */
napi_value procmgr_logs(napi_env env, sandbox_t *sb, napi_value *argv, size_t argc) {
  procmgr_t *pm = active_manager(env, sb);
  if (pm == NULL) return NULL;
  char *id = nu_strdup(env, argv[1]);
  proc_rec_t *r = id ? rec_find(pm, id) : NULL;
  if (r == NULL) {
    err_t err;
    err_init(&err);
    process_error(&err, "Unknown sandbox process: %s", id ? id : "");
    free(id);
    return nu_throw_err(addon_get(env), &err);
  }
  free(id);
  size_t want = SIZE_MAX;
  int64_t tail = 0;
  if (argc > 2 && nu_safe_integer(env, argv[2], &tail) && tail >= 0) want = (size_t)tail;
  napi_value o;
  napi_create_object(env, &o);
  const tail_t *tails[2] = {&r->out, &r->err};
  const char *names[2] = {"stdout", "stderr"};
  int truncated[2];
  for (int k = 0; k < 2; k++) {
    size_t n = 0;
    uint8_t *bytes = tail_copy(tails[k], want, &n);
    if (bytes == NULL) {
      napi_throw_error(env, NULL, "Out of memory.");
      return NULL;
    }
    truncated[k] = tails[k]->truncated || n < tails[k]->len;
    napi_set_named_property(env, o, names[k], nu_uint8array_take(env, bytes, n));
  }
  napi_set_named_property(env, o, "stdoutTruncated", nu_bool(env, truncated[0]));
  napi_set_named_property(env, o, "stderrTruncated", nu_bool(env, truncated[1]));
  return o;
}
