/*
 * build.c - native.prepareBuildImage (see build.h): the options read, the context read
 * into an archive (engine/build_task.h), the build task started and its output handed to the
 * operation's event callback.
 *
 * Owns: a build op owns its engine reference, its archive (until the task takes it), the
 * task and the image id the task reported.
 */
#include "lifecycle/build.h"

#include <stdlib.h>
#include <string.h>

#include "codec/buildmsg.h"
#include "engine/build_task.h"
#include "lifecycle/client.h"
#include "napi/args.h"
#include "napi/convert.h"
#include "napi/op.h"
#include "napi/values.h"

typedef struct build_op {
  op_t op;
  engine_t *eng;
  buf_t archive;
  char *tag;
  build_task_t *task;
  char *image_id;
} build_op_t;

static void on_output(void *ud, const uint8_t *data, size_t len) {
  build_op_t *op = ud;
  if (!op_has_events(&op->op)) return;
  jsenv_t *js = op->op.js;
  jsenv_scope_t s;
  if (jsenv_enter(js, &s) != 0) return;
  napi_value argv[2] = {nu_string(js->env, "stdout"), nu_uint8array(js->env, data, len)};
  op_emit(&op->op, 2, argv); /* may cancel, and free, the op: nothing of it after this */
  jsenv_leave(js, &s);
}

static void on_done(void *ud, err_t *err, const char *image_id) {
  build_op_t *op = ud;
  build_task_free(op->task); /* freed once this callback returns */
  op->task = NULL;
  err_t e = ERR_INIT;
  if (err != NULL) err_move(&e, err);
  else if (image_id != NULL && (op->image_id = strdup(image_id)) == NULL) err_oom(&e);
  op_settle(&op->op, &e);
}

static const build_task_cbs_t task_cbs = {.on_output = on_output, .on_done = on_done};

static napi_value build_result(op_t *o) {
  build_op_t *op = (build_op_t *)o;
  napi_env env = o->js->env;
  napi_value r;
  if (napi_create_object(env, &r) != napi_ok) return NULL;
  napi_set_named_property(env, r, "imageId", op->image_id ? nu_string(env, op->image_id) : nu_null(env));
  return r;
}

static void build_start(op_t *o) {
  build_op_t *op = (build_op_t *)o;
  err_t err = ERR_INIT;
  op->task = build_task_start(op->eng, op->tag, &op->archive, &task_cbs, op, &err);
  if (op->task == NULL) op_settle(o, &err);
}

static void build_stop(op_t *o) {
  build_op_t *op = (build_op_t *)o;
  build_task_free(op->task);
  op->task = NULL;
}

static void build_destroy(op_t *o) {
  build_op_t *op = (build_op_t *)o;
  build_task_free(op->task);
  buf_free(&op->archive);
  engine_unref(op->eng);
  free(op->tag);
  free(op->image_id);
}

static const op_vtable_t build_vt = {.name = "buildImage",
    .start = build_start, .stop = build_stop, .result = build_result, .destroy = build_destroy};

/* native.prepareBuildImage(client, { context, files, tag }) -> token. */
static napi_value js_prepare_build(napi_env env, napi_callback_info info) {
  napi_value o;
  client_t *c = client_call(env, info, &o);
  if (c == NULL) return NULL;
  err_t err = ERR_INIT;
  napi_value context = nu_get(env, o, "context"), tag = nu_get(env, o, "tag"), files = nu_get(env, o, "files");
  if (!nu_is_record(env, o)) err_type(&err, "options must be an object.");
  else if (!nu_is_nonempty_string(env, context)) err_type(&err, "context must be a non-empty string.");
  else if (!nu_is_nonempty_string(env, tag)) err_type(&err, "tag must be a non-empty string.");
  else if (!nu_is_array(env, files)) err_type(&err, "files must be an array of file names.");
  if (err_is_set(&err)) return convert_throw_err(jsenv_get(env), &err);

  build_op_t *op = op_prepare(env, &build_vt, sizeof(*op), NULL);
  if (op == NULL) return NULL;
  op->eng = c->eng;
  engine_ref(c->eng);
  buf_init(&op->archive, 0);
  char **names = NULL;
  size_t count = 0;
  nul_hit_t nul = {0};
  char *dir = nu_strdup(env, context);
  op->tag = nu_strdup(env, tag);
  if (dir == NULL || op->tag == NULL) err_oom(&err);
  else if (args_has_nul(env, context) || args_has_nul(env, tag)) err_type(&err, "context and tag must not hold NUL bytes.");
  else if (args_string_array(env, files, &names, &count, &nul, &err) != 0) { /* err set */
  } else if (nul.found) err_type(&err, "files must not hold NUL bytes.");
  else build_context_read(dir, names, count, &op->archive, &err);
  args_string_array_free(names, count);
  free(dir);
  return op_prepared(&op->op, &err);
}

void build_register(napi_env env, napi_value exports) {
  napi_property_descriptor fns[] = {
      {"prepareBuildImage", NULL, js_prepare_build, NULL, NULL, NULL, napi_default, NULL},
  };
  napi_define_properties(env, exports, sizeof(fns) / sizeof(fns[0]), fns);
}
