/*
 * proc_start.c - startProcess on the engine path (see proc.h and proc_registry.h): the
 * original's limit check with pruning of finished records, the launcher and wrapper
 * scripts, and the wait for the marker that records the process group.
 *
 * Owns: a start operation owns the validated options until they move into the record,
 * its reference on the record being started, its timeout and its prune check.
 */
#include "runtime/proc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/paths.h"
#include "engine/timer.h"
#include "napi/args.h"
#include "napi/convert.h"
#include "napi/op.h"
#include "napi/opts.h"
#include "napi/values.h"
#include "runtime/proc_registry.h"

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

/* sh -c LAUNCHER launcher-name WRAPPER wrapper-name marker command args... */
#define LAUNCH_FIXED_ARGS 7

typedef struct start_op {
  op_t op;
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
} start_op_t;

static void launch(start_op_t *op);
static void prune_next(start_op_t *op);

/* A failed start: the command never got "start"; make sure nothing of it runs. */
static void discard_record(start_op_t *op) {
  proc_rec_t *r = op->rec;
  if (r == NULL) return;
  if (op->watching) proc_rec_unwatch(r, &op->watch);
  op->watching = 0;
  r->stop_requested = 1;
  exec_task_t *task = r->task;
  r->task = NULL;
  if (task) {
    exec_task_cancel(task); /* closes stdin (the wrapper exits 125) and ends the tree */
    proc_rec_unref(r);      /* the task's reference */
  }
  proc_rec_remove(r);
  proc_rec_unref(r); /* ours */
  op->rec = NULL;
}

static void stop_timeout(start_op_t *op) {
  sbx_timer_cancel(op->timeout);
  op->timeout = NULL;
}

static void on_start_watch(proc_watch_t *w) {
  start_op_t *op = (start_op_t *)((char *)w - offsetof(start_op_t, watch));
  proc_rec_t *r = op->rec;
  err_t err;
  err_init(&err);
  if (r->marker_seen) {
    proc_rec_unwatch(r, w);
    op->watching = 0;
    stop_timeout(op);
    op_settle(&op->op, NULL);
    return;
  }
  if (r->marker_bad) proc_error(&err, "Sandbox process returned invalid process IDs.%s", "");
  else if (r->closed) proc_error(&err, "Sandbox process exited before startup completed: %s", r->id);
  else return;
  stop_timeout(op);
  discard_record(op);
  op_settle(&op->op, &err);
}

static void on_start_timeout(void *ud) {
  start_op_t *op = ud;
  op->timeout = NULL;
  err_t err;
  err_init(&err);
  err_sandbox(&err, CODE_TIMEOUT, "Starting sandbox process timed out.");
  discard_record(op);
  op_settle(&op->op, &err);
}

/* The launch exec: argv (the scripts, the marker, the command and its args), the
 * sandbox's env overridden by the call's, the workdir. 0, or -1 when out of memory. */
static int launch_spec(start_op_t *op, proc_rec_t *r, exec_spec_t *spec) {
  sandbox_t *sb = op->op.sb;
  char marker[64];
  snprintf(marker, sizeof(marker), "%s:%s", PROC_MARKER_PREFIX, r->id);
  size_t argc = LAUNCH_FIXED_ARGS + 1 + r->nargs;
  const char **argv = calloc(argc, sizeof(char *));
  if (argv == NULL) return -1;
  const char *fixed[LAUNCH_FIXED_ARGS] = {"sh", "-c", LAUNCHER, "anvia-process-launcher", WRAPPER,
                                          "anvia-managed-process", marker};
  memcpy(argv, fixed, sizeof(fixed));
  argv[LAUNCH_FIXED_ARGS] = r->command;
  for (size_t i = 0; i < r->nargs; i++) argv[LAUNCH_FIXED_ARGS + 1 + i] = r->args[i];
  memset(spec, 0, sizeof(*spec));
  int rc = exec_spec_set_argv(spec, argv, argc);
  free(argv);
  /* {...configuration.env, ...options.env}: later keys win, as in the original. */
  for (size_t i = 0; rc == 0 && i < sb->env.count; i++) {
    int overridden = 0;
    for (size_t j = 0; j < op->env.count; j++)
      if (strcmp(op->env.items[j].key, sb->env.items[i].key) == 0) overridden = 1;
    if (!overridden) rc = exec_spec_add_env(spec, sb->env.items[i].key, sb->env.items[i].value);
  }
  for (size_t i = 0; rc == 0 && i < op->env.count; i++)
    rc = exec_spec_add_env(spec, op->env.items[i].key, op->env.items[i].value);
  if (rc != 0) {
    exec_spec_free(spec);
    return -1;
  }
  spec->workdir = op->workdir;
  op->workdir = NULL;
  spec->attach_stdin = 1;
  spec->max_output = 0;
  spec->kill_tree = 1;
  return 0;
}

/* A record for the call: the options move into it. NULL when out of memory. */
static proc_rec_t *make_record(start_op_t *op) {
  proc_rec_t *r = proc_rec_new((size_t)op->op.sb->runtime.max_output_bytes);
  if (r == NULL) return NULL;
  r->command = op->command;
  r->args = op->args;
  r->nargs = op->nargs;
  r->cwd = op->cwd_raw;
  op->command = NULL;
  op->args = NULL;
  op->nargs = 0;
  op->cwd_raw = NULL;
  return r;
}

static void launch(start_op_t *op) {
  sandbox_t *sb = op->op.sb;
  proc_registry_t *pm = proc_registry_of(sb);
  err_t err;
  err_init(&err);
  if ((int64_t)pm->count >= sb->runtime.max_processes) {
    char msg[128];
    snprintf(msg, sizeof(msg), "Sandbox process limit reached (%zu >= %lld).", pm->count,
             (long long)sb->runtime.max_processes);
    proc_error(&err, "%s", msg);
    op_settle(&op->op, &err);
    return;
  }
  exec_spec_t spec;
  proc_rec_t *r = make_record(op);
  if (r == NULL || launch_spec(op, r, &spec) != 0) {
    proc_rec_unref(r);
    err_oom(&err);
    op_settle(&op->op, &err);
    return;
  }
  /* Registered now, like the original: it counts towards the limit while it starts. */
  proc_rec_register(pm, r); /* the registry's reference; `r`'s own one is ours */
  op->rec = r;
  proc_rec_ref(r); /* the task's */
  r->task = exec_task_start(sb->eng, sb->container_name, &spec, &proc_task_callbacks, r, &err);
  if (r->task == NULL) {
    proc_rec_unref(r); /* the task's */
    proc_rec_remove(r);
    proc_rec_unref(r); /* ours */
    op->rec = NULL;
    op_settle(&op->op, &err);
    return;
  }
  op->watch.fn = on_start_watch;
  proc_rec_watch(r, &op->watch);
  op->watching = 1;
  op->timeout = sbx_timer_start(engine_io(sb->eng), (uint64_t)sb->runtime.command_timeout_ms, on_start_timeout, op);
}

/* pruneCompletedRecords: while at the limit, drop finished records whose group is gone. */
static void advance_prune(start_op_t *op, proc_rec_t *r, int remove) {
  proc_rec_t *next = r->next;
  if (next) proc_rec_ref(next);
  if (remove) proc_rec_remove(r);
  proc_rec_unref(r);
  op->prune_at = next;
}

static void on_prune_check(void *ud, int code, exec_result_t *result, err_t *err) {
  start_op_t *op = ud;
  op->check = NULL;
  exec_result_free(result);
  proc_rec_t *r = op->prune_at;
  if (err != NULL) {
    proc_rec_unref(r);
    op->prune_at = NULL;
    op_settle(&op->op, err);
    return;
  }
  advance_prune(op, r, code != 0 && r->status != P_RUNNING);
  prune_next(op);
}

static void prune_next(start_op_t *op) {
  sandbox_t *sb = op->op.sb;
  proc_registry_t *pm = proc_registry_of(sb);
  err_t err;
  err_init(&err);
  while (op->prune_at != NULL) {
    proc_rec_t *r = op->prune_at;
    if ((int64_t)pm->count < sb->runtime.max_processes || !r->in_registry) {
      proc_rec_unref(r);
      op->prune_at = NULL;
      break;
    }
    if (r->status == P_RUNNING || !r->marker_seen) {
      /* Running: kept. Finished without a group: nothing to check, dropped. */
      advance_prune(op, r, r->status != P_RUNNING);
      continue;
    }
    char pg[32];
    snprintf(pg, sizeof(pg), "%lld", r->pgid);
    op->check = proc_run_script(sb, GROUP_CHECK, "anvia-process-group-check", pg, NULL, PROC_CHECK_TIMEOUT_MS,
                                on_prune_check, op, &err);
    if (op->check == NULL) {
      proc_rec_unref(r);
      op->prune_at = NULL;
      op_settle(&op->op, &err);
    }
    return;
  }
  launch(op);
}

static void start_start(op_t *o) {
  start_op_t *op = (start_op_t *)o;
  proc_registry_t *pm = proc_registry_of(o->sb);
  err_t err;
  err_init(&err);
  if (pm == NULL) {
    err_oom(&err);
  } else if (pm->disposed) {
    proc_error(&err, "Sandbox process manager has been disposed.%s", "");
  } else {
    int blank = 1;
    for (const char *p = op->command; *p; p++)
      if (!strchr(" \t\n\r\v\f", *p)) blank = 0;
    if (blank) proc_error(&err, "Sandbox process command cannot be empty.%s", "");
  }
  if (err_is_set(&err)) {
    op_settle(o, &err);
    return;
  }
  op->prune_at = pm->records;
  if (op->prune_at) proc_rec_ref(op->prune_at);
  prune_next(op);
}

static void start_cancel(op_t *o) {
  start_op_t *op = (start_op_t *)o;
  stop_timeout(op);
  exec_task_cancel(op->check);
  op->check = NULL;
  if (op->prune_at) proc_rec_unref(op->prune_at);
  op->prune_at = NULL;
  if (op->rec && !op->rec->marker_seen) discard_record(op);
  op_reject_cancelled(o);
  op_release(o);
}

static napi_value start_result(op_t *o) { return proc_info_to_js(o->js->env, ((start_op_t *)o)->rec); }

static void start_destroy(op_t *o) {
  start_op_t *op = (start_op_t *)o;
  sbx_timer_cancel(op->timeout);
  exec_task_cancel(op->check);
  if (op->prune_at) proc_rec_unref(op->prune_at);
  if (op->rec) {
    if (op->watching) proc_rec_unwatch(op->rec, &op->watch);
    proc_rec_unref(op->rec);
  }
  free(op->command);
  args_string_array_free(op->args, op->nargs);
  free(op->cwd_raw);
  free(op->workdir);
  kv_list_free(&op->env);
}

static const op_vtable_t start_vt = {
    .name = "startProcess",
    .start = start_start,
    .cancel = start_cancel,
    .result = start_result,
    .destroy = start_destroy,
};

/* native.prepareStartProcess(sandbox, options): validateProcessStartOptions. */
napi_value proc_prepare_start(napi_env env, sandbox_t *sb, napi_value *argv, size_t argc) {
  (void)argc;
  napi_value options = args_options(env, argv);
  if (options == NULL) return NULL;
  err_t err;
  err_init(&err);
  char **args = NULL, *cwd_norm = NULL;
  size_t nargs = 0;
  kv_list_t envs = {0};
  napi_value command = nu_get(env, options, "command");
  napi_value cwd = nu_get(env, options, "cwd");
  if (check_nonempty_string(env, command, "command", &err) ||
      args_string_array(env, nu_get(env, options, "args"), &args, &nargs, &err) ||
      (!nu_is_undefined(env, cwd) && (cwd_norm = args_sandbox_path(env, cwd, "cwd", 1, &err)) == NULL) ||
      read_string_record(env, nu_get(env, options, "env"), "env", &envs, &err)) {
    args_string_array_free(args, nargs);
    free(cwd_norm);
    return nu_throw_err(jsenv_get(env), &err);
  }
  start_op_t *op = op_prepare(env, &start_vt, sizeof(*op), sb);
  if (op == NULL) {
    args_string_array_free(args, nargs);
    free(cwd_norm);
    kv_list_free(&envs);
    return NULL;
  }
  op->env = envs;
  op->args = args;
  op->nargs = nargs;
  op->command = nu_strdup(env, command);
  op->cwd_raw = nu_is_undefined(env, cwd) ? NULL : nu_strdup(env, cwd);
  op->workdir = sandbox_container_path(sb->workdir, cwd_norm ? cwd_norm : ".", &err);
  free(cwd_norm);
  if (!err_is_set(&err) &&
      (op->command == NULL || op->workdir == NULL || (!nu_is_undefined(env, cwd) && op->cwd_raw == NULL)))
    err_oom(&err);
  return op_prepared(&op->op, &err);
}
