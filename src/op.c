/*
 * op.c - operation tokens, promises and settlement (see op.h).
 */
#include "op.h"

#include <stdlib.h>
#include <string.h>

#include "napi_util.h"

struct op_handle {
  op_t *op;
};

op_t *op_alloc(addon_t *a, const op_vtable_t *vt, size_t size) {
  op_t *op = calloc(1, size);
  if (op == NULL) return NULL;
  op->vt = vt;
  op->addon = a;
  op->next = a->ops;
  if (a->ops) a->ops->prev = op;
  a->ops = op;
  return op;
}

static void op_unlink(op_t *op) {
  addon_t *a = op->addon;
  if (op->prev) op->prev->next = op->next;
  else if (a->ops == op) a->ops = op->next;
  if (op->next) op->next->prev = op->prev;
  op->prev = op->next = NULL;
}

static void op_free(op_t *op) {
  op_unlink(op);
  if (op->handle) op->handle->op = NULL;
  napi_env env = op->addon->env;
  if (!op->addon->closing) {
    if (op->cancel_reason) napi_delete_reference(env, op->cancel_reason);
    if (op->on_event) napi_delete_reference(env, op->on_event);
  }
  if (op->vt->destroy) op->vt->destroy(op);
  free(op);
}

void op_discard(op_t *op) { op_free(op); }

static void token_finalize(napi_env env, void *data, void *hint) {
  (void)env;
  (void)hint;
  op_handle_t *h = data;
  op_t *op = h->op;
  if (op != NULL) {
    op->handle = NULL;
    /* Never started: nobody else will free it. */
    if (!op->started) op_free(op);
  }
  free(h);
}

napi_value op_token(op_t *op) {
  napi_env env = op->addon->env;
  op_handle_t *h = calloc(1, sizeof(*h));
  if (h == NULL) {
    op_free(op);
    napi_throw_error(env, NULL, "Out of memory.");
    return NULL;
  }
  h->op = op;
  op->handle = h;
  napi_value ext;
  if (napi_create_external(env, h, token_finalize, NULL, &ext) != napi_ok) {
    op->handle = NULL;
    free(h);
    op_free(op);
    return nu_throw_status(env, "napi_create_external");
  }
  return ext;
}

op_t *op_from_token(napi_env env, napi_value token) {
  if (nu_typeof(env, token) != napi_external) return NULL;
  op_handle_t *h = NULL;
  napi_get_value_external(env, token, (void **)&h);
  return h ? h->op : NULL;
}

void op_release(op_t *op) {
  op->released = 1;
  if (op->settled || op->teardown) op_free(op);
}

static void settle(op_t *op, napi_value value, int ok) {
  napi_env env = op->addon->env;
  if (ok) napi_resolve_deferred(env, op->deferred, value);
  else napi_reject_deferred(env, op->deferred, value);
  op->deferred = NULL;
  op->settled = 1;
}

void op_resolve(op_t *op) {
  if (op->settled || op->teardown || op->addon->closing) return;
  js_scope_t s;
  if (js_enter(op->addon, &s) != 0) return;
  napi_value v = op->vt->result ? op->vt->result(op) : nu_undefined(op->addon->env);
  if (v == NULL) {
    /* The result builder threw (out of memory): reject with that. */
    napi_value ex = NULL;
    napi_get_and_clear_last_exception(op->addon->env, &ex);
    settle(op, ex ? ex : nu_undefined(op->addon->env), 0);
  } else {
    settle(op, v, 1);
  }
  int free_now = op->released;
  js_leave(op->addon, &s);
  if (free_now) op_free(op);
}

void op_reject(op_t *op, err_t *err) {
  if (op->settled || op->teardown || op->addon->closing) {
    err_clear(err);
    return;
  }
  js_scope_t s;
  if (js_enter(op->addon, &s) != 0) {
    err_clear(err);
    return;
  }
  napi_value e = nu_error_value(op->addon, err);
  err_clear(err);
  settle(op, e, 0);
  int free_now = op->released;
  js_leave(op->addon, &s);
  if (free_now) op_free(op);
}

void op_reject_cancelled(op_t *op) {
  if (op->settled || op->teardown || op->addon->closing) return;
  js_scope_t s;
  if (js_enter(op->addon, &s) != 0) return;
  settle(op, op_cancel_reason(op), 0);
  int free_now = op->released;
  js_leave(op->addon, &s);
  if (free_now) op_free(op);
}

void op_reject_build(op_t *op, napi_value (*build)(op_t *op)) {
  if (op->settled || op->teardown || op->addon->closing) return;
  js_scope_t s;
  if (js_enter(op->addon, &s) != 0) return;
  napi_value v = build(op);
  if (v == NULL) {
    napi_value ex = NULL;
    napi_get_and_clear_last_exception(op->addon->env, &ex);
    v = ex ? ex : nu_undefined(op->addon->env);
  }
  settle(op, v, 0);
  int free_now = op->released;
  js_leave(op->addon, &s);
  if (free_now) op_free(op);
}

/* The reason native.cancel() was given, or undefined. Scope must be open. */
napi_value op_cancel_reason(op_t *op) {
  napi_env env = op->addon->env;
  napi_value holder = NULL;
  if (op->cancel_reason) napi_get_reference_value(env, op->cancel_reason, &holder);
  return holder ? nu_get(env, holder, "reason") : nu_undefined(env);
}

void op_emit(op_t *op, size_t argc, napi_value *argv) {
  if (op->on_event == NULL || op->addon->closing) return;
  napi_env env = op->addon->env;
  napi_value fn, recv;
  napi_get_reference_value(env, op->on_event, &fn);
  if (fn == NULL) return;
  napi_get_undefined(env, &recv);
  napi_value ignored;
  napi_status st = napi_call_function(env, recv, fn, argc, argv, &ignored);
  if (st == napi_pending_exception) {
    /* The shim's callbacks do not throw; if one does, report it as Node would. */
    napi_value ex;
    napi_get_and_clear_last_exception(env, &ex);
    napi_fatal_exception(env, ex);
  }
}

void op_teardown_all(addon_t *a) {
  while (a->ops) {
    op_t *op = a->ops;
    op->teardown = 1;
    op->cancelled = 1;
    if (op->started && op->vt->cancel) {
      op->vt->cancel(op);
      /* cancel() must release; make sure the list shrinks regardless. */
      if (a->ops == op) op_free(op);
    } else {
      op_free(op);
    }
  }
}

napi_value op_js_start(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  NU_CALL(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  op_t *op = argc > 0 ? op_from_token(env, argv[0]) : NULL;
  if (op == NULL || op->started) {
    napi_throw_error(env, NULL, "Operation token is not valid.");
    return NULL;
  }
  if (argc > 1 && nu_typeof(env, argv[1]) == napi_function) {
    NU_CALL(env, napi_create_reference(env, argv[1], 1, &op->on_event));
  }
  napi_value promise;
  NU_CALL(env, napi_create_promise(env, &op->deferred, &promise));
  op->started = 1;
  op->vt->start(op);
  return promise;
}

napi_value op_js_cancel(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  NU_CALL(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  op_t *op = argc > 0 ? op_from_token(env, argv[0]) : NULL;
  if (op == NULL || !op->started || op->settled || op->cancelled) return nu_undefined(env);
  op->cancelled = 1;
  if (argc > 1) {
    /* The reason may be a primitive: keep it inside a holder object we can reference. */
    napi_value holder;
    NU_CALL(env, napi_create_object(env, &holder));
    NU_CALL(env, napi_set_named_property(env, holder, "reason", argv[1]));
    NU_CALL(env, napi_create_reference(env, holder, 1, &op->cancel_reason));
  }
  if (op->vt->cancel) op->vt->cancel(op);
  return nu_undefined(env);
}

napi_value op_js_control(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  NU_CALL(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  op_t *op = argc > 0 ? op_from_token(env, argv[0]) : NULL;
  int64_t command = 0;
  if (op == NULL || !op->started || op->settled || op->cancelled || op->vt->control == NULL) return nu_undefined(env);
  if (argc > 1) nu_safe_integer(env, argv[1], &command);
  op->vt->control(op, (int)command);
  return nu_undefined(env);
}
