/*
 * proc_start.c - startProcess (see proc.h and proc_registry.h): the options, the
 * original's limit check with pruning of finished records, the launcher and wrapper
 * scripts, and the wait for the marker that records the process group. Which carrier
 * runs the launch and checks groups is the operation's (the engine's, or the agent's
 * when agent_procs.c makes it).
 *
 * Owns: a start operation owns the validated options until they move into the record,
 * its reference on the record being started, its timeout and its prune check.
 */
#include "runtime/proc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "codec/paths.h"
#include "engine/timer.h"
#include "napi/args.h"
#include "napi/convert.h"
#include "napi/op.h"
#include "napi/checks.h"
#include "napi/values.h"
#include "runtime/agent_term.h"
#include "runtime/engine_term.h"
#include "runtime/proc_registry.h"
#include "runtime/sh/launcher_sh.h"
#include "runtime/sh/wrapper_sh.h"

/* sh -c LAUNCHER_SH launcher-name WRAPPER_SH wrapper-name marker command args... */
#define LAUNCH_FIXED_ARGS 7

typedef struct start_op {
  op_t op;
  proc_start_req_t req;
  const proc_carrier_t *carrier;
  proc_rec_t *rec;
  proc_watch_t watch;
  int watching;
  sbx_timer_t *timeout;
  uint64_t deadline_ns; /* the startup timeout, by uv_hrtime */
  const proc_carrier_t *check_carrier;
  void *check; /* prune's group check */
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
  proc_rec_cut(r); /* the wrapper never gets "start"; the launch's tree ends */
  proc_rec_remove(r);
  proc_rec_unref(r); /* ours */
  op->rec = NULL;
}

static void stop_timeout(start_op_t *op) {
  sbx_timer_cancel(op->timeout);
  op->timeout = NULL;
}

static void on_start_timeout(void *ud);

static void on_start_watch(proc_watch_t *w) {
  start_op_t *op = (start_op_t *)((char *)w - offsetof(start_op_t, watch));
  proc_rec_t *r = op->rec;
  err_t err = ERR_INIT;
  if (r->marker_seen && uv_hrtime() >= op->deadline_ns) {
    /* The marker came in after the startup timeout, before its timer ran (both were
     * ready in the same turn of the loop): a timeout all the same. */
    stop_timeout(op);
    on_start_timeout(op);
    return;
  }
  if (r->marker_seen) {
    /* The group is recorded: let the command run. */
    proc_rec_unwatch(r, w);
    op->watching = 0;
    stop_timeout(op);
    r->carrier->go(r);
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
  err_t err = ERR_INIT;
  err_sandbox(&err, CODE_TIMEOUT, "Starting sandbox process timed out.");
  discard_record(op);
  op_settle(&op->op, &err);
}

/* The launch: argv (the scripts, the marker, the command and its args), the sandbox's
 * env overridden by the call's, the workdir. 0, or -1 when out of memory. */
static int launch_spec(start_op_t *op, proc_rec_t *r, exec_spec_t *spec) {
  sandbox_t *sb = op->op.sb;
  char marker[64];
  snprintf(marker, sizeof(marker), "%s:%s", PROC_MARKER_PREFIX, r->id);
  size_t argc = LAUNCH_FIXED_ARGS + 1 + r->nargs;
  const char **argv = calloc(argc, sizeof(char *));
  if (argv == NULL) return -1;
  const char *fixed[LAUNCH_FIXED_ARGS] = {"sh", "-c", LAUNCHER_SH, "anvia-process-launcher", WRAPPER_SH,
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
    for (size_t j = 0; j < op->req.env.count; j++)
      if (strcmp(op->req.env.items[j].key, sb->env.items[i].key) == 0) overridden = 1;
    if (!overridden) rc = exec_spec_add_env(spec, sb->env.items[i].key, sb->env.items[i].value);
  }
  for (size_t i = 0; rc == 0 && i < op->req.env.count; i++)
    rc = exec_spec_add_env(spec, op->req.env.items[i].key, op->req.env.items[i].value);
  if (rc != 0) {
    exec_spec_free(spec);
    return -1;
  }
  spec->workdir = op->req.workdir;
  op->req.workdir = NULL;
  return 0;
}

/* A record for the call: the options move into it. NULL when out of memory. */
static proc_rec_t *make_record(start_op_t *op) {
  proc_rec_t *r = proc_rec_new((size_t)op->op.sb->runtime.max_output_bytes);
  if (r == NULL) return NULL;
  r->command = op->req.command;
  r->args = op->req.args;
  r->nargs = op->req.nargs;
  r->cwd = op->req.cwd_raw;
  op->req.command = NULL;
  op->req.args = NULL;
  op->req.nargs = 0;
  op->req.cwd_raw = NULL;
  r->sb = op->op.sb;
  r->carrier = op->carrier;
  return r;
}

static void launch(start_op_t *op) {
  sandbox_t *sb = op->op.sb;
  proc_registry_t *pm = proc_registry_of(sb);
  err_t err = ERR_INIT;
  /* Terminals count too: those this handle started through the agent (agent_term.h) and
   * this process's live engine-path terminals of the container (engine_term.h). */
  size_t used = pm->count + agent_term_live(sb) + engine_term_live(sb);
  if ((int64_t)used >= sb->runtime.max_processes) {
    char msg[128];
    snprintf(msg, sizeof(msg), "Sandbox process limit reached (%zu >= %lld).", used,
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
  if (r->carrier->launch(sb, r, &spec, &err) != 0) {
    exec_spec_free(&spec);
    proc_rec_remove(r);
    proc_rec_unref(r); /* ours */
    op->rec = NULL;
    op_settle(&op->op, &err);
    return;
  }
  op->watch.fn = on_start_watch;
  proc_rec_watch(r, &op->watch);
  op->watching = 1;
  op->deadline_ns = uv_hrtime() + (uint64_t)sb->runtime.command_timeout_ms * 1000000u;
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

static void on_prune_check(void *ud, int alive, err_t *err) {
  start_op_t *op = ud;
  op->check = NULL;
  proc_rec_t *r = op->prune_at;
  if (err != NULL) {
    proc_rec_unref(r);
    op->prune_at = NULL;
    op_settle(&op->op, err);
    return;
  }
  advance_prune(op, r, !alive && r->status != P_RUNNING);
  prune_next(op);
}

static void prune_next(start_op_t *op) {
  sandbox_t *sb = op->op.sb;
  proc_registry_t *pm = proc_registry_of(sb);
  err_t err = ERR_INIT;
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
    /* Asked through this start's carrier: any carrier finds a group by its id. */
    op->check_carrier = op->carrier;
    op->check = op->carrier->check_group(r, on_prune_check, op, &err);
    if (op->check == NULL) {
      proc_rec_unref(r);
      op->prune_at = NULL;
      op_settle(&op->op, &err);
    }
    return;
  }
  launch(op);
}

int proc_start_refused(sandbox_t *sb, const proc_start_req_t *req, err_t *err) {
  proc_registry_t *pm = proc_registry_of(sb);
  if (pm == NULL) return err_oom(err);
  if (pm->disposed) return proc_error(err, "Sandbox process manager has been disposed.%s", "");
  for (const char *p = req->command; *p; p++)
    if (!strchr(" \t\n\r\v\f", *p)) return 0;
  return proc_error(err, "Sandbox process command cannot be empty.%s", "");
}

static void start_start(op_t *o) {
  start_op_t *op = (start_op_t *)o;
  proc_registry_t *pm = proc_registry_of(o->sb);
  err_t err = ERR_INIT;
  if (proc_start_refused(o->sb, &op->req, &err) != 0) {
    op_settle(o, &err);
    return;
  }
  op->prune_at = pm->records;
  if (op->prune_at) proc_rec_ref(op->prune_at);
  prune_next(op);
}

static void cancel_check(start_op_t *op) {
  if (op->check != NULL) op->check_carrier->cancel(op->check);
  op->check = NULL;
}

static void start_halt(op_t *o) {
  start_op_t *op = (start_op_t *)o;
  stop_timeout(op);
  cancel_check(op);
  if (op->prune_at) proc_rec_unref(op->prune_at);
  op->prune_at = NULL;
  if (op->rec && !op->rec->marker_seen) discard_record(op);
}

static napi_value start_result(op_t *o) { return proc_info_to_js(o->js->env, ((start_op_t *)o)->rec); }

static void start_destroy(op_t *o) {
  start_op_t *op = (start_op_t *)o;
  sbx_timer_cancel(op->timeout);
  cancel_check(op);
  if (op->prune_at) proc_rec_unref(op->prune_at);
  if (op->rec) {
    if (op->watching) proc_rec_unwatch(op->rec, &op->watch);
    proc_rec_unref(op->rec);
  }
  proc_start_req_free(&op->req);
}

static const op_vtable_t start_vt = {.name = "startProcess",
    .start = start_start, .stop = start_halt, .result = start_result, .destroy = start_destroy};

/*
 * Node's TypeError for the first argument of the original's launch that held a NUL
 * (createExecArgs: exec -i -w <dir>, "-e K=V" per entry of {...sandbox env, ...env}, the
 * container, then sh -c <launcher> anvia-process-launcher <wrapper> anvia-managed-process
 * <marker> <command> <args>), in *late; NULL when none. The original refused a blank
 * command first ("Sandbox process command cannot be empty.", start_start's check, with
 * the same blanks): then nothing is reported here. 0, or -1 when out of memory.
 */
static int launch_nul_error(napi_env env, sandbox_t *sb, napi_value command, const kv_list_t *envs,
                            const nul_hit_t *args_nul, const nul_hit_t *env_nul, napi_value *late, err_t *err) {
  *late = NULL;
  size_t len = 0;
  char *c = nu_strdup_len(env, command, &len);
  if (c == NULL) return err_oom(err);
  int blank = 1;
  for (size_t i = 0; i < len; i++)
    if (c[i] == '\0' || !strchr(" \t\n\r\v\f", c[i])) blank = 0;
  free(c);
  if (blank) return 0;
  size_t merged = sb->env.count;
  for (size_t i = 0; i < envs->count; i++) {
    int overrides = 0;
    for (size_t j = 0; j < sb->env.count; j++)
      if (strcmp(envs->items[i].key, sb->env.items[j].key) == 0) overrides = 1;
    merged += !overrides;
  }
  argv_nul_t n = {0};
  args_argv_nul_note_hit(env, &n, 4 + 2 * env_nul->index + 1, env_nul);
  size_t command_pos = 4 + 2 * merged + 1 + LAUNCH_FIXED_ARGS;
  args_argv_nul_note(env, &n, command_pos, command);
  args_argv_nul_note_hit(env, &n, command_pos + 1 + args_nul->index, args_nul);
  if (!n.found) return 0;
  *late = args_argv_nul_error(env, &n, err);
  return *late ? 0 : -1;
}

void proc_start_req_free(proc_start_req_t *req) {
  free(req->command);
  args_string_array_free(req->args, req->nargs);
  free(req->cwd_raw);
  free(req->workdir);
  kv_list_free(&req->env);
  memset(req, 0, sizeof(*req));
}

/* validateProcessStartOptions. */
int proc_start_req_from_js(napi_env env, sandbox_t *sb, napi_value options, proc_start_req_t *req, napi_value *late,
                           err_t *err) {
  memset(req, 0, sizeof(*req));
  *late = NULL;
  char *cwd_norm = NULL;
  nul_hit_t args_nul = {0}, env_nul = {.base = &sb->env};
  napi_value command = nu_get(env, options, "command");
  napi_value cwd = nu_get(env, options, "cwd");
  if (check_nonempty_string(env, command, "command", err) ||
      args_string_array(env, nu_get(env, options, "args"), &req->args, &req->nargs, &args_nul, err) ||
      (!nu_is_undefined(env, cwd) && (cwd_norm = args_sandbox_path(env, cwd, "cwd", 1, err)) == NULL) ||
      check_string_record(env, nu_get(env, options, "env"), "env", &req->env, &env_nul, err) ||
      check_env_not_reserved(&req->env, err) ||
      launch_nul_error(env, sb, command, &req->env, &args_nul, &env_nul, late, err))
    goto fail;
  req->command = nu_strdup(env, command);
  req->cwd_raw = nu_is_undefined(env, cwd) ? NULL : nu_strdup(env, cwd);
  req->workdir = paths_container(sb->workdir, cwd_norm ? cwd_norm : ".", err);
  if (err_is_set(err)) goto fail;
  if (req->command == NULL || req->workdir == NULL || (!nu_is_undefined(env, cwd) && req->cwd_raw == NULL)) {
    err_oom(err);
    goto fail;
  }
  free(cwd_norm);
  return 0;
fail:
  free(cwd_norm);
  proc_start_req_free(req);
  *late = NULL;
  return -1;
}

op_t *proc_start_op(jsenv_t *js, sandbox_t *sb, proc_start_req_t *req, const proc_carrier_t *carrier) {
  start_op_t *op = op_new(js, &start_vt, sizeof(*op), sb);
  if (op == NULL) return NULL;
  op->req = *req;
  memset(req, 0, sizeof(*req));
  op->carrier = carrier;
  return &op->op;
}

/* native.prepareStartProcess(sandbox, options) on the engine path. */
napi_value proc_prepare_start(napi_env env, sandbox_t *sb, napi_value *argv) {
  napi_value options = args_options(env, argv);
  if (options == NULL) return NULL;
  err_t err = ERR_INIT;
  start_op_t *op = op_prepare(env, &start_vt, sizeof(*op), sb);
  if (op == NULL) return NULL;
  op->carrier = &proc_engine_carrier;
  napi_value late = NULL;
  if (proc_start_req_from_js(env, sb, options, &op->req, &late, &err) == 0 && late != NULL)
    op_fail_at_start(&op->op, late, &err);
  return op_prepared(&op->op, &err);
}
