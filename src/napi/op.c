/*
 * op.c - operation tokens, promises and settlement (see op.h).
 */
#include "napi/op.h"

#include <stdlib.h>
#include <string.h>

#include "napi/token.h"
#include "napi/convert.h"
#include "napi/jsenv.h"
#include "napi/values.h"

struct op_handle {
  op_t *op;
};

static void op_teardown_all(jsenv_t *js);

static void op_unlink(op_t *op) {
  jsenv_t *js = op->js;
  if (op->prev) op->prev->next = op->next;
  else if (js->ops == op) js->ops = op->next;
  if (op->next) op->next->prev = op->prev;
  op->prev = op->next = NULL;
}

static void op_free(op_t *op) {
  if (op->holds > 0 && !op->teardown) {
    op->free_pending = 1; /* op_unhold frees it */
    return;
  }
  op_unlink(op);
  if (op->handle) op->handle->op = NULL;
  op_t *parent = op->parent;
  if (parent) parent->delegate = NULL;
  if (op->delegate) op->delegate->parent = NULL;
  napi_env env = op->js->env;
  if (!op->js->closing) {
    if (op->cancel_reason) napi_delete_reference(env, op->cancel_reason);
    if (op->on_event) napi_delete_reference(env, op->on_event);
    if (op->start_error) napi_delete_reference(env, op->start_error);
  }
  if (op->vt->destroy) op->vt->destroy(op);
  sandbox_unref(op->sb);
  free(op);
  /* A parent settled by this delegate was waiting only for it. */
  if (parent != NULL && parent->settled && parent->released && !parent->teardown) op_free(parent);
}

void *op_new(jsenv_t *js, const op_vtable_t *vt, size_t size, sandbox_t *sb) {
  op_t *op = calloc(1, size);
  if (op == NULL || jsenv_on_teardown(js, op_teardown_all) != 0) {
    free(op);
    return NULL;
  }
  op->vt = vt;
  op->js = js;
  op->sb = sb;
  if (sb) sandbox_ref(sb);
  op->next = js->ops;
  if (js->ops) js->ops->prev = op;
  js->ops = op;
  return op;
}

void *op_prepare(napi_env env, const op_vtable_t *vt, size_t size, sandbox_t *sb) {
  jsenv_t *js = jsenv_get(env);
  op_t *op = op_new(js, vt, size, sb);
  if (op == NULL) {
    err_t err = ERR_INIT;
    err_oom(&err);
    convert_throw_err(js, &err);
  }
  return op;
}

void op_discard(op_t *op) {
  if (op != NULL) op_free(op);
}

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

napi_value op_prepared(op_t *op, err_t *err) {
  jsenv_t *js = op->js;
  op_handle_t *h = NULL;
  napi_value token = NULL;
  if (err != NULL && err_is_set(err)) goto fail;
  h = calloc(1, sizeof(*h));
  if (h == NULL) goto oom;
  h->op = op;
  op->handle = h;
  token = token_wrap(js->env, TOKEN_OP, h, token_finalize);
  if (token == NULL) {
    op->handle = NULL;
    free(h);
    op_free(op);
    return NULL; /* token_wrap threw */
  }
  return token;
oom:
  err_oom(err);
fail:
  op_free(op);
  return convert_throw_err(js, err);
}

int op_fail_at_start(op_t *op, napi_value error, err_t *err) {
  napi_env env = op->js->env;
  if (op->start_error) napi_delete_reference(env, op->start_error);
  op->start_error = NULL;
  if (error == NULL || napi_create_reference(env, error, 1, &op->start_error) != napi_ok) return err_oom(err);
  return 0;
}

static napi_value start_error_value(op_t *op) {
  napi_value v = NULL;
  napi_get_reference_value(op->js->env, op->start_error, &v);
  return v;
}

void op_hold(op_t *op) { op->holds++; }

void op_unhold(op_t *op) {
  if (--op->holds == 0 && op->free_pending) op_free(op);
}

void op_release(op_t *op) {
  op->released = 1;
  if (op->settled || op->teardown) op_free(op);
}


void op_delegate(op_t *parent, op_t *child) {
  /* No JavaScript value is touched here (this may run from a libuv callback): the child
   * uses its parent's event callback and abort reason (op_emit, op_cancel_reason). */
  parent->delegate = child;
  child->parent = parent;
  child->started = 1;
  child->cancelled = parent->cancelled;
  child->vt->start(child);
}


/* The parent of a delegate settles with the value its delegate built (a scope is open);
 * it has nothing else pending, so it is released too. */
static void settle_parent(op_t *parent, int ok, napi_value v) {
  if (parent->settled || parent->teardown) return;
  napi_env env = parent->js->env;
  if (ok) napi_resolve_deferred(env, parent->deferred, v);
  else napi_reject_deferred(env, parent->deferred, v);
  parent->deferred = NULL;
  parent->settled = 1;
  parent->released = 1; /* freed with its delegate (op_free) */
}

/*
 * Every settlement: open a scope, build the value (`value`, else `build(op)`, else the
 * error of `err`), resolve or reject, close the scope, free the op if it was released.
 */
static void settle(op_t *op, int ok, napi_value (*build)(op_t *op), err_t *err, int use_reason) {
  jsenv_t *js = op->js;
  jsenv_scope_t s;
  if (op->settled || op->teardown || js->closing || jsenv_enter(js, &s) != 0) {
    if (err) err_clear(err);
    return;
  }
  napi_env env = js->env;
  napi_value v;
  if (use_reason) v = op_cancel_reason(op);
  else if (err) v = convert_error_value(js, err);
  else if (build) v = build(op);
  else v = nu_undefined(env);
  if (err) err_clear(err);
  if (v == NULL) {
    /* The builder threw (out of memory): reject with that. */
    napi_value ex = NULL;
    napi_get_and_clear_last_exception(env, &ex);
    v = ex ? ex : nu_undefined(env);
    ok = 0;
  }
  op_t *parent = op->parent;
  if (parent != NULL) {
    /* A delegate settles the op it works for, with its own value. */
    settle_parent(parent, ok, v);
  } else {
    if (ok) napi_resolve_deferred(env, op->deferred, v);
    else napi_reject_deferred(env, op->deferred, v);
    op->deferred = NULL;
  }
  op->settled = 1;
  int free_now = op->released;
  jsenv_leave(js, &s);
  if (free_now) op_free(op);
}

static void op_resolve(op_t *op) { settle(op, 1, op->vt->result, NULL, 0); }
static void op_reject(op_t *op, err_t *err) { settle(op, 0, NULL, err, 0); }
void op_reject_cancelled(op_t *op) { settle(op, 0, NULL, NULL, 1); }
void op_reject_build(op_t *op, napi_value (*build)(op_t *op)) { settle(op, 0, build, NULL, 0); }

void op_settle(op_t *op, err_t *err) {
  if (err != NULL && err_is_set(err)) op_reject(op, err);
  else op_resolve(op);
  op_release(op);
}

/* The reason native.cancel() was given, or undefined. Scope must be open. */
napi_value op_cancel_reason(op_t *op) {
  napi_env env = op->js->env;
  napi_value holder = NULL;
  napi_ref reason = op->cancel_reason ? op->cancel_reason : op->parent ? op->parent->cancel_reason : NULL;
  if (reason) napi_get_reference_value(env, reason, &holder);
  return holder ? nu_get(env, holder, "reason") : nu_undefined(env);
}

int op_has_events(const op_t *op) { return op->on_event != NULL || (op->parent != NULL && op->parent->on_event != NULL); }

void op_emit(op_t *op, size_t argc, napi_value *argv) {
  napi_ref on_event = op->on_event ? op->on_event : op->parent ? op->parent->on_event : NULL;
  if (on_event == NULL || op->js->closing) return;
  napi_env env = op->js->env;
  napi_value fn, recv;
  napi_get_reference_value(env, on_event, &fn);
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

/* A started op is cancelled: its own cancel, or its stop and then the rejection with the
 * abort reason (nothing when tearing down) and the release. */
static void op_stop(op_t *op) {
  if (op->vt->cancel) {
    op->vt->cancel(op);
    return;
  }
  if (op->vt->stop) op->vt->stop(op);
  op_reject_cancelled(op);
  op_release(op);
}

/* The environment ends: every live op is stopped without calling JavaScript. */
static void op_teardown_all(jsenv_t *js) {
  while (js->ops) {
    op_t *op = js->ops;
    op->teardown = 1;
    op->cancelled = 1;
    if (op->started) {
      op_stop(op);
      /* A cancel must release; make sure the list shrinks regardless. */
      if (js->ops == op) op_free(op);
    } else {
      op_free(op);
    }
  }
}

static napi_value op_js_start(napi_env env, napi_callback_info info) {
  napi_value on_event;
  op_handle_t *h = token_call(env, info, TOKEN_OP, &on_event);
  if (h == NULL) return NULL; /* TypeError thrown */
  op_t *op = h->op;
  if (op == NULL || op->started) {
    napi_throw_error(env, NULL, "Operation token is not valid.");
    return NULL;
  }
  if (nu_typeof(env, on_event) == napi_function) {
    NU_CALL(env, napi_create_reference(env, on_event, 1, &op->on_event));
  }
  napi_value promise;
  NU_CALL(env, napi_create_promise(env, &op->deferred, &promise));
  op->started = 1;
  if (op->start_error) {
    op_reject_build(op, start_error_value);
    op_release(op);
  } else {
    op->vt->start(op);
  }
  return promise;
}

static napi_value op_js_cancel(napi_env env, napi_callback_info info) {
  napi_value argv[2];
  int argc = nu_args(env, info, argv, 2);
  if (argc < 0) return NULL;
  op_handle_t *h = token_unwrap(env, argv[0], TOKEN_OP);
  if (h == NULL) return NULL; /* TypeError thrown */
  op_t *op = h->op;
  if (op == NULL || !op->started || op->settled || op->cancelled) return nu_undefined(env);
  op->cancelled = 1;
  if (argc > 1) {
    /* The reason may be a primitive: keep it inside a holder object we can reference. */
    napi_value holder;
    NU_CALL(env, napi_create_object(env, &holder));
    NU_CALL(env, napi_set_named_property(env, holder, "reason", argv[1]));
    NU_CALL(env, napi_create_reference(env, holder, 1, &op->cancel_reason));
  }
  op_t *target = op->delegate ? op->delegate : op;
  /* Delegated: the delegate stops, and its rejection (this op's reason) settles this op. */
  target->cancelled = 1;
  op_stop(target);
  return nu_undefined(env);
}

static napi_value op_js_control(napi_env env, napi_callback_info info) {
  napi_value command_v;
  op_handle_t *h = token_call(env, info, TOKEN_OP, &command_v);
  if (h == NULL) return NULL; /* TypeError thrown */
  op_t *op = h->op;
  int64_t command = 0;
  if (op != NULL && op->delegate != NULL) op = op->delegate;
  if (op == NULL || !op->started || op->settled || op->cancelled || op->vt->control == NULL) return nu_undefined(env);
  nu_safe_integer(env, command_v, &command);
  op->vt->control(op, (int)command);
  return nu_undefined(env);
}

void op_register(napi_env env, napi_value exports) {
  napi_property_descriptor fns[] = {
      {"start", NULL, op_js_start, NULL, NULL, NULL, napi_default, NULL},
      {"cancel", NULL, op_js_cancel, NULL, NULL, NULL, napi_default, NULL},
      {"control", NULL, op_js_control, NULL, NULL, NULL, napi_default, NULL},
  };
  napi_define_properties(env, exports, sizeof(fns) / sizeof(fns[0]), fns);
}
