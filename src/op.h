/*
 * op.h - one asynchronous operation seen from JavaScript: prepared, started, maybe
 * cancelled, settled exactly once, then freed.
 *
 * Owns: an op_t owns its promise's deferred, the abort reason it was cancelled with,
 * an optional event callback, and (through its vtable) the operation's own state.
 *
 * The JavaScript side sees an op as an opaque token: native.prepareX() validates and
 * returns it, native.start(token) returns the promise, native.cancel(token, reason)
 * stops it. The token is a small handle that forgets the op when the op is freed, so a
 * late cancel or a garbage-collected token is always safe.
 */
#ifndef SBX_OP_H
#define SBX_OP_H

#include <node_api.h>

#include "addon.h"
#include "err.h"

typedef struct op op_t;

typedef struct op_vtable {
  const char *name;
  /* Begins the work. Runs in a JavaScript call. */
  void (*start)(op_t *op);
  /*
   * Stops the work after native.cancel() (or environment teardown, op->teardown set).
   * Must settle the op (usually op_reject_cancelled) unless tearing down, and call
   * op_release once nothing it owns is pending.
   */
  void (*cancel)(op_t *op);
  /* Builds the resolution value. Runs with a JavaScript scope open. */
  napi_value (*result)(op_t *op);
  /* Frees the op-specific part. The op struct itself is freed by op.c. */
  void (*destroy)(op_t *op);
  /* Optional: flow control from JavaScript (OP_PAUSE / OP_RESUME). */
  void (*control)(op_t *op, int command);
} op_vtable_t;

enum { OP_RESUME = 0, OP_PAUSE = 1 };

typedef struct op_handle op_handle_t;

struct op {
  const op_vtable_t *vt;
  addon_t *addon;
  napi_deferred deferred;
  op_handle_t *handle;
  napi_ref cancel_reason;
  napi_ref on_event;
  int started;
  int settled;
  int cancelled;
  int teardown;
  int released;
  op_t *prev, *next;
};

/* Allocates `size` bytes (an op_t first member), registers it with the addon. */
op_t *op_alloc(addon_t *a, const op_vtable_t *vt, size_t size);
/* Frees an op that was never handed out as a token. */
void op_discard(op_t *op);
/* Wraps the op in a token for JavaScript; the token frees an op never started. */
napi_value op_token(op_t *op);
op_t *op_from_token(napi_env env, napi_value token);

/* Settling. Safe from libuv callbacks (they open a scope) and from JS calls. */
void op_resolve(op_t *op);
void op_reject(op_t *op, err_t *err);
void op_reject_cancelled(op_t *op);
/* Rejects with a value built by `build` inside an open scope (e.g. an AggregateError). */
void op_reject_build(op_t *op, napi_value (*build)(op_t *op));
/* The abort reason given to native.cancel(); a JavaScript scope must be open. */
napi_value op_cancel_reason(op_t *op);
/* Calls the op's event callback with argv (scope must be open: use op_emit_begin). */
void op_emit(op_t *op, size_t argc, napi_value *argv);
/* The op has nothing pending: frees it once settled (or at once when tearing down). */
void op_release(op_t *op);

/* Cancels every live op (environment teardown): no JavaScript is called. */
void op_teardown_all(addon_t *a);

/* N-API entry points: start(token[, onEvent]) and cancel(token, reason). */
napi_value op_js_start(napi_env env, napi_callback_info info);
napi_value op_js_cancel(napi_env env, napi_callback_info info);
/* native.control(token, command) */
napi_value op_js_control(napi_env env, napi_callback_info info);

#endif
