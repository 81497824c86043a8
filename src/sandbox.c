/*
 * sandbox.c - the sandbox object, its JavaScript token, and the single-request lifecycle
 * operations the handle's state machine (lib/handle.js) drives: stop the container,
 * remove it, remove its volume.
 */
#include "sandbox.h"

#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "napi_util.h"
#include "op.h"
#include "procmgr.h"
#include "runtime_ops.h"

sandbox_t *sandbox_new(addon_t *a, engine_t *eng) {
  sandbox_t *s = calloc(1, sizeof(*s));
  if (s == NULL) return NULL;
  s->refs = 1;
  s->addon = a;
  s->eng = eng;
  engine_ref(eng);
  s->ops = &engine_runtime_ops; /* the only implementation so far */
  return s;
}

void sandbox_ref(sandbox_t *s) { s->refs++; }

void sandbox_unref(sandbox_t *s) {
  if (s == NULL || --s->refs > 0) return;
  procmgr_free(s->procs);
  engine_unref(s->eng);
  free(s->id);
  free(s->container_name);
  free(s->workdir);
  free(s->volume_name);
  kv_list_free(&s->env);
  free(s->ports);
  free(s->user);
  free(s);
}

static void sandbox_finalize(napi_env env, void *data, void *hint) {
  (void)env;
  (void)hint;
  sandbox_unref(data);
}

sandbox_t *sandbox_from_js(napi_env env, napi_value v) {
  sandbox_t *s = NULL;
  if (nu_typeof(env, v) != napi_external || napi_get_value_external(env, v, (void **)&s) != napi_ok || s == NULL) {
    napi_throw_type_error(env, NULL, "Expected a sandbox handle.");
    return NULL;
  }
  return s;
}

napi_value sandbox_to_js(napi_env env, sandbox_t *s) {
  napi_value o, ext, ports;
  napi_create_object(env, &o);
  sandbox_ref(s);
  if (napi_create_external(env, s, sandbox_finalize, NULL, &ext) != napi_ok) {
    sandbox_unref(s);
    return NULL;
  }
  napi_set_named_property(env, o, "sandbox", ext);
  napi_set_named_property(env, o, "id", nu_string(env, s->id));
  napi_set_named_property(env, o, "workdir", nu_string(env, s->workdir));
  napi_create_array_with_length(env, s->nports, &ports);
  for (size_t i = 0; i < s->nports; i++) {
    napi_value p;
    napi_create_object(env, &p);
    napi_set_named_property(env, p, "containerPort", nu_number(env, s->ports[i].container_port));
    napi_set_named_property(env, p, "host", nu_string(env, "127.0.0.1"));
    napi_set_named_property(env, p, "hostPort", nu_number(env, s->ports[i].host_port));
    napi_set_named_property(env, p, "protocol", nu_string(env, "tcp"));
    napi_set_element(env, ports, (uint32_t)i, p);
  }
  napi_set_named_property(env, o, "publishedPorts", ports);
  return o;
}

/* ---- one request, one answer ---- */

typedef enum { SIMPLE_STOP = 1, SIMPLE_REMOVE_CONTAINER, SIMPLE_REMOVE_VOLUME } simple_kind_t;

typedef struct simple_op {
  op_t op;
  sandbox_t *sb;
  simple_kind_t kind;
  http_req_t *req;
} simple_op_t;

static void on_simple_done(http_req_t *req, void *ud) {
  simple_op_t *op = ud;
  op->req = NULL;
  err_t err;
  err_init(&err);
  int not_found = req->state == HTTP_DONE && req->curl_result == CURLE_OK && req->status == 404;
  int ok = http_req_ok(req);
  if (op->kind == SIMPLE_STOP) {
    /* 304: already stopped. */
    if (!ok && !(req->curl_result == CURLE_OK && req->status == 304)) http_req_error(req, &err);
  } else if (!ok && !not_found) {
    http_req_error(req, &err);
    if (err.code != NULL && strcmp(err.code, CODE_DOCKER_COMMAND_FAILED) == 0) {
      err_t wrapped;
      err_init(&wrapped);
      err_sandbox(&wrapped, CODE_DOCKER_COMMAND_FAILED, "%s",
                  op->kind == SIMPLE_REMOVE_CONTAINER ? "Unable to remove Docker sandbox."
                                                      : "Unable to remove Docker sandbox volume.");
      err_set_details(&wrapped, err.details ? json_incref(err.details) : NULL);
      err_move(&err, &wrapped);
    }
  }
  http_req_free(req);
  if (err_is_set(&err)) op_reject(&op->op, &err);
  else op_resolve(&op->op);
  op_release(&op->op);
}

static void simple_start(op_t *o) {
  simple_op_t *op = (simple_op_t *)o;
  sandbox_t *s = op->sb;
  err_t err;
  err_init(&err);
  const char *name = op->kind == SIMPLE_REMOVE_VOLUME ? s->volume_name : s->container_name;
  char *esc = url_escape(name);
  if (esc == NULL) goto oom;
  if (op->kind == SIMPLE_STOP) op->req = http_req_new(s->eng, "POST", "/containers/%s/stop", esc);
  else if (op->kind == SIMPLE_REMOVE_CONTAINER) op->req = http_req_new(s->eng, "DELETE", "/containers/%s?force=1", esc);
  else op->req = http_req_new(s->eng, "DELETE", "/volumes/%s", esc);
  free(esc);
  if (op->req == NULL) goto oom;
  if (http_req_start(op->req, on_simple_done, op, &err) == 0) return;
  http_req_free(op->req);
  op->req = NULL;
  goto fail;
oom:
  err_oom(&err);
fail:
  op_reject(o, &err);
  op_release(o);
}

static void simple_cancel(op_t *o) {
  simple_op_t *op = (simple_op_t *)o;
  http_req_free(op->req);
  op->req = NULL;
  op_reject_cancelled(o);
  op_release(o);
}

static void simple_destroy(op_t *o) {
  simple_op_t *op = (simple_op_t *)o;
  http_req_free(op->req);
  sandbox_unref(op->sb);
}

static const op_vtable_t simple_vt = {"sandboxLifecycle", simple_start, simple_cancel, NULL, simple_destroy, NULL};

static napi_value prepare_simple(napi_env env, napi_callback_info info, simple_kind_t kind) {
  size_t argc = 1;
  napi_value argv[1];
  NU_CALL(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  sandbox_t *s = sandbox_from_js(env, argv[0]);
  if (s == NULL) return NULL;
  simple_op_t *op = (simple_op_t *)op_alloc(addon_get(env), &simple_vt, sizeof(simple_op_t));
  if (op == NULL) {
    napi_throw_error(env, NULL, "Out of memory.");
    return NULL;
  }
  op->sb = s;
  sandbox_ref(s);
  op->kind = kind;
  return op_token(&op->op);
}

static napi_value js_prepare_stop_container(napi_env env, napi_callback_info info) {
  return prepare_simple(env, info, SIMPLE_STOP);
}
static napi_value js_prepare_remove_container(napi_env env, napi_callback_info info) {
  return prepare_simple(env, info, SIMPLE_REMOVE_CONTAINER);
}
static napi_value js_prepare_remove_volume(napi_env env, napi_callback_info info) {
  return prepare_simple(env, info, SIMPLE_REMOVE_VOLUME);
}

/* native.sandboxOwnsVolume(sandbox) */
static napi_value js_owns_volume(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  NU_CALL(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  sandbox_t *s = sandbox_from_js(env, argv[0]);
  if (s == NULL) return NULL;
  return nu_bool(env, s->owns_volume);
}

void sandbox_register(napi_env env, napi_value exports) {
  napi_property_descriptor fns[] = {
      {"prepareStopContainer", NULL, js_prepare_stop_container, NULL, NULL, NULL, napi_default, NULL},
      {"prepareRemoveContainer", NULL, js_prepare_remove_container, NULL, NULL, NULL, napi_default, NULL},
      {"prepareRemoveVolume", NULL, js_prepare_remove_volume, NULL, NULL, NULL, napi_default, NULL},
      {"sandboxOwnsVolume", NULL, js_owns_volume, NULL, NULL, NULL, napi_default, NULL},
  };
  napi_define_properties(env, exports, sizeof(fns) / sizeof(fns[0]), fns);
}
