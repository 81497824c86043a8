/*
 * remove.c - the single-request lifecycle operations the handle's state machine
 * (lib/handle.js) drives: stop the container, remove it, remove its volume; and whether
 * the sandbox owns its volume.
 *
 * Owns: each operation owns its one request until it settles.
 */
#include "lifecycle/remove.h"

#include <stdlib.h>
#include <string.h>

#include "napi/convert.h"
#include "napi/op.h"
#include "napi/values.h"
#include "runtime/agent_op.h"

typedef enum { REMOVE_STOP = 1, REMOVE_CONTAINER, REMOVE_VOLUME } remove_kind_t;

typedef struct remove_op {
  op_t op;
  remove_kind_t kind;
  http_req_t *req;
} remove_op_t;

/* A failed removal is "Unable to remove ...", with the engine's details kept. */
static void wrap_removal_error(remove_kind_t kind, err_t *err) {
  if (err->code == NULL || strcmp(err->code, CODE_DOCKER_COMMAND_FAILED) != 0) return;
  err_t wrapped = ERR_INIT;
  err_sandbox(&wrapped, CODE_DOCKER_COMMAND_FAILED, "%s",
              kind == REMOVE_CONTAINER ? "Unable to remove Docker sandbox." : "Unable to remove Docker sandbox volume.");
  err_set_details(&wrapped, err->details ? json_incref(err->details) : NULL);
  err_move(err, &wrapped);
}

static void on_done(http_req_t *req, void *ud) {
  remove_op_t *op = ud;
  op->req = NULL;
  err_t err = ERR_INIT;
  if (op->kind == REMOVE_STOP) {
    /* 304: already stopped. */
    if (!http_req_ok(req) && http_req_answer(req) != 304) http_req_error(req, &err);
  } else if (!http_req_ok(req) && !http_req_not_found(req)) {
    http_req_error(req, &err);
    wrap_removal_error(op->kind, &err);
  }
  http_req_free(req);
  op_settle(&op->op, &err);
}

static void remove_start(op_t *o) {
  remove_op_t *op = (remove_op_t *)o;
  sandbox_t *s = o->sb;
  err_t err = ERR_INIT;
  /* Stop and destroy end the sandbox's agent first (its commands end with it). */
  if (op->kind != REMOVE_VOLUME) agent_op_shutdown(s);
  char *esc = url_escape(op->kind == REMOVE_VOLUME ? s->volume_name : s->container_name);
  if (esc == NULL) goto oom;
  switch (op->kind) {
    case REMOVE_STOP: op->req = http_req_new(s->eng, "POST", "/containers/%s/stop", esc); break;
    case REMOVE_CONTAINER: op->req = http_req_new(s->eng, "DELETE", "/containers/%s?force=1", esc); break;
    case REMOVE_VOLUME: op->req = http_req_new(s->eng, "DELETE", "/volumes/%s", esc); break;
  }
  free(esc);
  if (op->req == NULL) goto oom;
  if (http_req_start(op->req, on_done, op, &err) == 0) return;
  http_req_free(op->req);
  op->req = NULL;
  goto fail;
oom:
  err_oom(&err);
fail:
  op_settle(o, &err);
}

static void remove_stop(op_t *o) {
  remove_op_t *op = (remove_op_t *)o;
  http_req_free(op->req);
  op->req = NULL;
}

static void remove_destroy(op_t *o) { http_req_free(((remove_op_t *)o)->req); }

static const op_vtable_t remove_vt = {.name = "sandboxLifecycle",
    .start = remove_start, .stop = remove_stop, .destroy = remove_destroy};

static napi_value prepare(napi_env env, napi_callback_info info, remove_kind_t kind) {
  sandbox_t *s = convert_sandbox_call(env, info, NULL);
  if (s == NULL) return NULL;
  remove_op_t *op = op_prepare(env, &remove_vt, sizeof(*op), s);
  if (op == NULL) return NULL;
  op->kind = kind;
  return op_prepared(&op->op, NULL);
}

static napi_value js_prepare_stop_container(napi_env env, napi_callback_info info) {
  return prepare(env, info, REMOVE_STOP);
}
static napi_value js_prepare_remove_container(napi_env env, napi_callback_info info) {
  return prepare(env, info, REMOVE_CONTAINER);
}
static napi_value js_prepare_remove_volume(napi_env env, napi_callback_info info) {
  return prepare(env, info, REMOVE_VOLUME);
}

/* native.sandboxOwnsVolume(sandbox) */
static napi_value js_owns_volume(napi_env env, napi_callback_info info) {
  sandbox_t *s = convert_sandbox_call(env, info, NULL);
  if (s == NULL) return NULL;
  return nu_bool(env, s->owns_volume);
}

void remove_register(napi_env env, napi_value exports) {
  napi_property_descriptor fns[] = {
      {"prepareStopContainer", NULL, js_prepare_stop_container, NULL, NULL, NULL, napi_default, NULL},
      {"prepareRemoveContainer", NULL, js_prepare_remove_container, NULL, NULL, NULL, napi_default, NULL},
      {"prepareRemoveVolume", NULL, js_prepare_remove_volume, NULL, NULL, NULL, napi_default, NULL},
      {"sandboxOwnsVolume", NULL, js_owns_volume, NULL, NULL, NULL, napi_default, NULL},
  };
  napi_define_properties(env, exports, sizeof(fns) / sizeof(fns[0]), fns);
}
