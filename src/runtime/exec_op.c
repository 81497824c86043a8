/*
 * exec_op.c - the runtime's exec and execStream: option validation (the original's
 * validateExecOptions), and the operation that runs one exec task for JavaScript,
 * streaming its output as events when asked and pausing the connection when the
 * consumer falls behind.
 */
#include "runtime/exec_op.h"

#include <stdlib.h>
#include <string.h>


#include "napi/args.h"
#include "engine/exec_task.h"
#include "napi/convert.h"
#include "napi/values.h"
#include "napi/op.h"
#include "napi/checks.h"
#include "codec/paths.h"

typedef struct exec_op {
  op_t op;
  exec_spec_t spec;
  exec_task_t *task;
  exec_result_t *result;
} exec_op_t;

int exec_spec_from_js(napi_env env, napi_value options, sandbox_t *sb, exec_spec_t *spec, napi_value *late,
                      err_t *err) {
  memset(spec, 0, sizeof(*spec));
  *late = NULL;
  nul_hit_t args_nul = {0}, env_nul = {0};
  char *cwd = NULL;
  kv_list_t envs = {0};
  char **args = NULL;
  size_t nargs = 0;
  if (!nu_is_record(env, options)) return err_type(err, "options must be an object.");
  napi_value command = nu_get(env, options, "command");
  if (check_nonempty_string(env, command, "command", err)) return -1;
  if (args_string_array(env, nu_get(env, options, "args"), &args, &nargs, &args_nul, err)) return -1;
  napi_value cwd_v = nu_get(env, options, "cwd");
  if (!nu_is_undefined(env, cwd_v) && (cwd = args_sandbox_path(env, cwd_v, "cwd", 1, err)) == NULL) goto fail;
  if (check_string_record(env, nu_get(env, options, "env"), "env", &envs, &env_nul, err) ||
      check_env_not_reserved(&envs, err))
    goto fail;
  napi_value timeout = nu_get(env, options, "timeoutMs");
  int64_t timeout_ms = sb->runtime.command_timeout_ms;
  if (!nu_is_undefined(env, timeout) && check_positive_safe_integer(env, timeout, "timeoutMs", &timeout_ms, err))
    goto fail;
  napi_value input = nu_get(env, options, "input");
  uint8_t *in_data = NULL;
  size_t in_len = 0;
  int is_string = nu_typeof(env, input) == napi_string;
  if (!nu_is_undefined(env, input) && !is_string && !nu_uint8array_view(env, input, &in_data, &in_len)) {
    err_type(err, "input must be a string or Uint8Array.");
    goto fail;
  }

  spec->argv = calloc(nargs + 1, sizeof(char *));
  if (spec->argv == NULL) goto oom;
  spec->argv[0] = nu_strdup(env, command);
  if (spec->argv[0] == NULL) goto oom;
  spec->argc = 1;
  for (size_t i = 0; i < nargs; i++) {
    spec->argv[spec->argc++] = args[i]; /* moved */
    args[i] = NULL;
  }
  for (size_t i = 0; i < envs.count; i++)
    if (exec_spec_add_env(spec, envs.items[i].key, envs.items[i].value) != 0) goto oom;
  spec->workdir = paths_container(sb->workdir, cwd ? cwd : ".", err);
  if (spec->workdir == NULL) goto fail;
  if (!nu_is_undefined(env, input)) {
    spec->has_input = 1;
    if (is_string) {
      napi_get_value_string_utf8(env, input, NULL, 0, &in_len);
      spec->input = malloc(in_len + 1);
      if (spec->input == NULL) goto oom;
      napi_get_value_string_utf8(env, input, (char *)spec->input, in_len + 1, &in_len);
    } else {
      spec->input = malloc(in_len ? in_len : 1);
      if (spec->input == NULL) goto oom;
      if (in_len) memcpy(spec->input, in_data, in_len);
    }
    spec->input_len = in_len;
  }
  spec->timeout_ms = timeout_ms;
  spec->max_output = (size_t)sb->runtime.max_output_bytes;
  spec->kill_tree = 1;
  {
    /* The original's execArgs: exec [-i] -w <dir> (-e K=V)* <container> <command> <args>. */
    argv_nul_t n = {0};
    size_t base = spec->has_input ? 4 : 3;
    args_argv_nul_note_hit(env, &n, base + 2 * env_nul.index + 1, &env_nul);
    args_argv_nul_note(env, &n, base + 2 * envs.count + 1, command);
    args_argv_nul_note_hit(env, &n, base + 2 * envs.count + 2 + args_nul.index, &args_nul);
    if (n.found && (*late = args_argv_nul_error(env, &n, err)) == NULL) goto fail;
  }
  free(cwd);
  kv_list_free(&envs);
  args_string_array_free(args, nargs);
  return 0;
oom:
  err_oom(err);
fail:
  free(cwd);
  kv_list_free(&envs);
  args_string_array_free(args, nargs);
  exec_spec_free(spec);
  return -1;
}

static void on_output(void *ud, int stream, const uint8_t *data, size_t len) {
  exec_op_t *op = ud;
  if (!op_has_events(&op->op)) return;
  jsenv_t *js = op->op.js;
  jsenv_scope_t s;
  if (jsenv_enter(js, &s) != 0) return;
  napi_value argv[2] = {nu_string(js->env, stream == 2 ? "stderr" : "stdout"), nu_uint8array(js->env, data, len)};
  op_emit(&op->op, 2, argv);
  jsenv_leave(js, &s);
}

static void on_done(void *ud, exec_result_t *result, err_t *err) {
  exec_op_t *op = ud;
  op->task = NULL;
  op->result = result;
  op_settle(&op->op, err);
}

static void exec_start(op_t *o) {
  exec_op_t *op = (exec_op_t *)o;
  err_t err = ERR_INIT;
  exec_callbacks_t cbs = {.on_output = op_has_events(o) ? on_output : NULL, .on_done = on_done};
  op->task = exec_task_start(o->sb->eng, o->sb->container_name, &op->spec, &cbs, op, &err);
  if (op->task == NULL) op_settle(o, &err);
}

static void exec_stop(op_t *o) {
  exec_op_t *op = (exec_op_t *)o;
  exec_task_cancel(op->task);
  op->task = NULL;
}

static void exec_control(op_t *o, int command) {
  exec_op_t *op = (exec_op_t *)o;
  if (op->task == NULL) return;
  if (command == OP_PAUSE) exec_task_pause(op->task);
  else exec_task_resume(op->task);
}

static napi_value exec_result_value(op_t *o) { return convert_exec_result(o->js->env, ((exec_op_t *)o)->result); }

static void exec_destroy(op_t *o) {
  exec_op_t *op = (exec_op_t *)o;
  exec_task_cancel(op->task);
  exec_result_free(op->result);
  exec_spec_free(&op->spec);
}

static const op_vtable_t exec_vt = {.name = "exec",
    .start = exec_start, .stop = exec_stop, .result = exec_result_value,
    .destroy = exec_destroy, .control = exec_control};

op_t *exec_engine_op(jsenv_t *js, sandbox_t *sb, exec_spec_t *spec) {
  exec_op_t *op = op_new(js, &exec_vt, sizeof(*op), sb);
  if (op == NULL) return NULL;
  op->spec = *spec;
  memset(spec, 0, sizeof(*spec));
  return &op->op;
}

/* native.prepareExec(sandbox, options) -> token (through the runtime table). */
napi_value exec_prepare(napi_env env, sandbox_t *sb, napi_value *argv) {
  /* Not args_options: exec's options check is part of validateExecOptions, in order. */
  exec_op_t *op = op_prepare(env, &exec_vt, sizeof(*op), sb);
  if (op == NULL) return NULL;
  err_t err = ERR_INIT;
  napi_value late = NULL;
  if (exec_spec_from_js(env, argv[1], sb, &op->spec, &late, &err) == 0 && late != NULL)
    op_fail_at_start(&op->op, late, &err);
  return op_prepared(&op->op, &err);
}
