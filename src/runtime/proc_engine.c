/*
 * proc_engine.c - the engine's carrier of managed processes (see proc_registry.h): the
 * launch as an Engine API exec whose stdin gets "start", the original's `kill -0` group
 * check and its TERM / grace / KILL stop, each as a small `sh -c` exec.
 *
 * Owns: a script call (the handle of a check or a stop) owns its exec task; it is freed
 * when its end is reported or when it is cancelled.
 */
#include <stdio.h>
#include <stdlib.h>
#include <jansson.h>
#include <string.h>

#include "engine/exec_task.h"
#include "runtime/proc_registry.h"
#include "runtime/sh/group_check_sh.h"
#include "runtime/sh/proc_stop_sh.h"

/* ---- the launch ---- */

static void on_launch_output(void *ud, int stream, const uint8_t *data, size_t len) {
  proc_rec_output(ud, stream, data, len);
}

static void on_launch_done(void *ud, exec_result_t *result, err_t *err) {
  (void)err;
  int code = result != NULL ? result->exit_code : 1;
  exec_result_free(result);
  proc_rec_ended(ud, code);
}

static int launch(sandbox_t *sb, proc_rec_t *r, exec_spec_t *spec, err_t *err) {
  static const exec_callbacks_t cbs = {.on_output = on_launch_output, .on_done = on_launch_done};
  spec->attach_stdin = 1;
  spec->max_output = 0;
  spec->kill_tree = 1;
  proc_rec_ref(r); /* the link's */
  r->link = exec_task_start(sb->eng, sb->container_name, spec, &cbs, r, err);
  if (r->link == NULL) {
    proc_rec_unref(r);
    return -1;
  }
  return 0;
}

static void go(proc_rec_t *r) {
  static const uint8_t start[] = "start\n";
  exec_task_write(r->link, start, sizeof(start) - 1);
  exec_task_end_stdin(r->link);
}

/* Closes stdin (a wrapper still waiting for "start" exits 125) and ends the tree. */
static void cut(proc_rec_t *r, void *link) {
  (void)r;
  exec_task_cancel(link);
}

/* ---- scripts against the group ---- */

/* The handle of a check or a stop: freed when its end is reported, or when cancelled. */
typedef struct script_call {
  exec_task_t *task;
  char id[37];
  proc_check_done_fn checked;
  proc_stop_done_fn stopped;
  void *ud;
} script_call_t;

/* The engine refused the exec because the container is not running or is gone (404).
 * Docker: 409 "... is not running" (not "... is paused"). Podman 4.3: 500 "can only
 * create exec sessions on running containers: container state improper", which it also
 * answers for a paused container (only a fork pauses one, for about a second). */
static int container_not_running(const err_t *err) {
  json_t *status = err->details ? json_object_get(err->details, "statusCode") : NULL;
  json_int_t code = json_is_integer(status) ? json_integer_value(status) : 0;
  if (code == 404) return 1;
  if (err->message == NULL) return 0;
  if (code == 409) return strstr(err->message, "is not running") != NULL;
  return code == 500 && strstr(err->message, "can only create exec sessions on running containers") != NULL;
}

static void on_script_done(void *ud, exec_result_t *result, err_t *err) {
  script_call_t c = *(script_call_t *)ud;
  free(ud);
  int code = result && !result->timed_out ? result->exit_code : -1;
  if (c.checked) {
    exec_result_free(result);
    c.checked(c.ud, err ? -1 : code == 0, err);
    return;
  }
  if (err != NULL && container_not_running(err)) {
    /* Only an orphan (its agent died) is stopped without a launch that would have
     * ended with the container: a stopped container has no process left. */
    exec_result_free(result);
    c.stopped(c.ud, 1, NULL);
    return;
  }
  if (err != NULL || code == 0 || code == 1) {
    exec_result_free(result);
    c.stopped(c.ud, err == NULL && code == 0, err);
    return;
  }
  err_t e = ERR_INIT;
  err_sandbox(&e, CODE_DOCKER_COMMAND_FAILED, "Unable to stop sandbox process: %s", c.id);
  e.exec_details = result;
  c.stopped(c.ud, 0, &e);
  err_clear(&e);
}

/* `sh -c script name pgid [a2]` as its own exec, ended with its tree on timeout. */
static void *run_script(proc_rec_t *r, const char *script, const char *name, const char *a2, int64_t timeout_ms,
                        script_call_t *c, err_t *err) {
  sandbox_t *sb = r->sb;
  char pg[32];
  snprintf(pg, sizeof(pg), "%lld", r->pgid);
  exec_spec_t spec;
  memset(&spec, 0, sizeof(spec));
  const char *argv[6] = {"sh", "-c", script, name, pg, a2};
  spec.workdir = strdup("/");
  spec.timeout_ms = timeout_ms;
  spec.max_output = (size_t)sb->runtime.max_output_bytes;
  spec.kill_tree = 1;
  if (spec.workdir == NULL || exec_spec_set_argv(&spec, argv, a2 ? 6 : 5) != 0) {
    free(c);
    exec_spec_free(&spec);
    err_oom(err);
    return NULL;
  }
  memcpy(c->id, r->id, sizeof(c->id));
  exec_callbacks_t cbs = {.on_done = on_script_done};
  c->task = exec_task_start(sb->eng, sb->container_name, &spec, &cbs, c, err);
  if (c->task == NULL) {
    free(c);
    return NULL;
  }
  return c;
}

static void *check_group(proc_rec_t *r, proc_check_done_fn done, void *ud, err_t *err) {
  script_call_t *c = calloc(1, sizeof(*c));
  if (c == NULL) {
    err_oom(err);
    return NULL;
  }
  c->checked = done;
  c->ud = ud;
  return run_script(r, GROUP_CHECK_SH, "anvia-process-group-check", NULL, PROC_CHECK_TIMEOUT_MS, c, err);
}

static void *stop_group(proc_rec_t *r, int64_t grace_ms, proc_stop_done_fn done, void *ud, err_t *err) {
  script_call_t *c = calloc(1, sizeof(*c));
  if (c == NULL) {
    err_oom(err);
    return NULL;
  }
  c->stopped = done;
  c->ud = ud;
  char grace[32];
  snprintf(grace, sizeof(grace), "%lld", (long long)grace_ms);
  return run_script(r, PROC_STOP_SH, "anvia-process-stop", grace, grace_ms + PROC_CLOSE_WAIT_MS + PROC_CHECK_TIMEOUT_MS,
                    c, err);
}

static void cancel(void *handle) {
  script_call_t *c = handle;
  if (c == NULL) return;
  exec_task_cancel(c->task);
  free(c);
}

const proc_carrier_t proc_engine_carrier = {
    .name = "engine",
    .launch = launch,
    .go = go,
    .cut = cut,
    .check_group = check_group,
    .stop_group = stop_group,
    .cancel = cancel,
};
