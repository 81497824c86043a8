/*
 * listing.c - listFiles: one exec of `find <dir> -mindepth 1 -maxdepth 1 -printf
 * '%y\0%s\0%p\0'` (the original's find, with NUL-terminated fields so that no name can
 * break or fake the listing), parsed in C (codec/findparse.c). Images whose find has no
 * -printf (busybox) are noticed from find's own complaint and listed with a shell loop
 * printing the same records (LIST_SH); the sandbox remembers which form works, so
 * later listings need one exec.
 *
 * Owns: a listing operation owns its exec task and the parsed entries.
 */
#include "runtime/listing.h"

#include <stdlib.h>
#include <string.h>


#include "napi/args.h"
#include "engine/exec_task.h"
#include "codec/findparse.h"
#include "napi/convert.h"
#include "napi/values.h"
#include "napi/op.h"
#include "codec/paths.h"
#include "runtime/sh/list_sh.h"

typedef struct list_op {
  op_t op;
  char *target; /* absolute container path */
  exec_task_t *task;
  int fallback;
  list_entries_t entries;
} list_op_t;

static void run_listing(list_op_t *op);

static int looks_like_no_printf(const exec_result_t *r) {
  if (r->timed_out || r->exit_code == 0) return 0;
  const char *err = (const char *)r->err.bytes.data;
  size_t n = r->err.bytes.len;
  if (err == NULL) return 0;
  char tmp[512];
  size_t k = n < sizeof(tmp) - 1 ? n : sizeof(tmp) - 1;
  memcpy(tmp, err, k);
  tmp[k] = 0;
  return strstr(tmp, "-printf") != NULL && (strstr(tmp, "unrecognized") || strstr(tmp, "unknown") || strstr(tmp, "invalid"));
}

static void list_finish(list_op_t *op, err_t *err) { op_settle(&op->op, err); }

static void on_listed(void *ud, exec_result_t *r, err_t *err) {
  list_op_t *op = ud;
  op->task = NULL;
  if (err != NULL) {
    list_finish(op, err);
    return;
  }
  err_t e = ERR_INIT;
  if (!op->fallback && looks_like_no_printf(r)) {
    exec_result_free(r);
    op->op.sb->find_lacks_printf = 1;
    op->fallback = 1;
    run_listing(op);
    return;
  }
  if (r->timed_out || r->exit_code != 0) {
    err_sandbox(&e, CODE_DOCKER_COMMAND_FAILED, "Unable to list sandbox files.");
    e.exec_details = r;
    list_finish(op, &e);
    err_clear(&e);
    return;
  }
  list_parse(r->out.bytes.data, r->out.bytes.len, op->op.sb->workdir, &op->entries, &e);
  exec_result_free(r);
  list_finish(op, &e);
}

static void run_listing(list_op_t *op) {
  sandbox_t *s = op->op.sb;
  exec_spec_t spec;
  memset(&spec, 0, sizeof(spec));
  err_t err = ERR_INIT;
  const char *gnu[] = {"find", op->target, "-mindepth", "1", "-maxdepth", "1", "-printf", "%y\\0%s\\0%p\\0"};
  const char *sh[] = {"sh", "-c", LIST_SH, "anvia-list", op->target};
  op->fallback = op->fallback || s->find_lacks_printf;
  int rc = op->fallback ? exec_spec_set_argv(&spec, sh, 5) : exec_spec_set_argv(&spec, gnu, 8);
  spec.workdir = paths_container(s->workdir, ".", &err);
  spec.timeout_ms = s->runtime.command_timeout_ms;
  spec.max_output = (size_t)s->runtime.max_output_bytes;
  spec.kill_tree = 1;
  if (rc != 0 || spec.workdir == NULL) {
    exec_spec_free(&spec);
    if (!err_is_set(&err)) err_oom(&err);
    list_finish(op, &err);
    err_clear(&err);
    return;
  }
  exec_callbacks_t cbs = {.on_done = on_listed};
  op->task = exec_task_start(s->eng, s->container_name, &spec, &cbs, op, &err);
  if (op->task == NULL) list_finish(op, &err);
}

static void list_start(op_t *o) { run_listing((list_op_t *)o); }

static void list_stop(op_t *o) {
  list_op_t *op = (list_op_t *)o;
  exec_task_cancel(op->task);
  op->task = NULL;
}

static napi_value list_result(op_t *o) { return convert_list_entries(o->js->env, &((list_op_t *)o)->entries); }

static void list_destroy(op_t *o) {
  list_op_t *op = (list_op_t *)o;
  exec_task_cancel(op->task);
  list_entries_free(&op->entries);
  free(op->target);
}

static const op_vtable_t list_vt = {.name = "listFiles",
    .start = list_start, .stop = list_stop, .result = list_result, .destroy = list_destroy};

char *listing_parse(napi_env env, napi_value options, err_t *err) {
  /* options.path ?? "." */
  napi_value p = nu_get(env, options, "path");
  if (nu_is_undefined(env, p) || nu_typeof(env, p) == napi_null) p = nu_string(env, ".");
  return args_sandbox_path(env, p, "path", 1, err);
}

op_t *listing_engine_op(jsenv_t *js, sandbox_t *sb, const char *path, err_t *err) {
  char *target = paths_container(sb->workdir, path, err);
  if (target == NULL) return NULL;
  list_op_t *op = op_new(js, &list_vt, sizeof(*op), sb);
  if (op == NULL) {
    free(target);
    err_oom(err);
    return NULL;
  }
  op->target = target;
  return &op->op;
}

/* native.prepareListFiles(sandbox, options) */
napi_value listing_prepare(napi_env env, sandbox_t *sb, napi_value *argv) {
  jsenv_t *js = jsenv_get(env);
  napi_value options = args_options(env, argv);
  if (options == NULL) return NULL;
  err_t err = ERR_INIT;
  char *path = listing_parse(env, options, &err);
  op_t *op = path ? listing_engine_op(js, sb, path, &err) : NULL;
  free(path);
  if (op == NULL) return convert_throw_err(js, &err);
  return op_prepared(op, NULL);
}
