/*
 * op.h - one asynchronous operation seen from JavaScript: prepared, started, maybe
 * cancelled, settled exactly once, then freed.
 *
 * Owns: an op_t owns its promise's deferred, the abort reason it was cancelled with, an
 * optional event callback, a reference to the sandbox it works on (if any), and (through
 * its vtable) the operation's own state.
 *
 * The JavaScript side sees an op as an opaque token: native.prepareX() validates its
 * arguments and returns one (op_prepare ... op_prepared), native.start(token) returns the
 * promise, native.cancel(token, reason) stops it. The token is a small handle that
 * forgets the op when the op is freed, so a late cancel or a garbage-collected token is
 * always safe; it is type-tagged (napi/token.h), so another kind of token is refused.
 *
 * Settling (op_settle, op_reject_cancelled, op_reject_build) is safe from libuv callbacks
 * (a JavaScript scope is opened) and from JavaScript calls.
 */
#ifndef SBX_OP_H
#define SBX_OP_H

#include <node_api.h>

#include "base/err.h"
#include "napi/jsenv.h"
#include "sandbox/sandbox.h"

typedef struct op op_t;

typedef struct op_vtable {
  const char *name;
  /* Begins the work. Runs in a JavaScript call. */
  void (*start)(op_t *op);
  /*
   * Optional: stops the work after native.cancel() or at environment teardown: cancels or
   * frees what is in flight and leaves the op with nothing pending. op.c then rejects the
   * promise with the abort reason (not when tearing down) and releases the op. Most ops
   * stop at once and set only this.
   */
  void (*stop)(op_t *op);
  /*
   * Optional, instead of stop, for an op whose cancellation takes time (a rollback, a
   * flush in progress): called in stop's place (op->teardown set at environment teardown),
   * it must settle the op (usually op_reject_cancelled) unless tearing down, and call
   * op_release once nothing it owns is pending.
   */
  void (*cancel)(op_t *op);
  /* Optional: builds the resolution value (undefined without). Runs with a scope open. */
  napi_value (*result)(op_t *op);
  /* Optional: frees the op-specific part. The op struct itself is freed by op.c. */
  void (*destroy)(op_t *op);
  /* Optional: flow control from JavaScript (OP_PAUSE / OP_RESUME). */
  void (*control)(op_t *op, int command);
} op_vtable_t;

enum { OP_RESUME = 0, OP_PAUSE = 1 };

typedef struct op_handle op_handle_t;

struct op {
  const op_vtable_t *vt;
  jsenv_t *js;
  sandbox_t *sb; /* the sandbox it works on (a reference), or NULL */
  napi_deferred deferred;
  op_handle_t *handle;
  napi_ref cancel_reason;
  napi_ref on_event;
  napi_ref start_error; /* rejects the op when started, before its work: op_fail_at_start */
  int started;
  int settled;
  int cancelled;
  int teardown;
  int released;
  int holds;        /* op_hold: kept (not freed) while above 0 */
  int free_pending; /* freed once the last hold goes */
  op_t *delegate; /* the op this one handed its work to (op_delegate), while it lives */
  op_t *parent;   /* the op this one settles, when it was started as a delegate */
  op_t *prev, *next;
};

/*
 * The start of every prepare: allocates an op of `size` bytes (op_t first, the rest
 * zeroed) for the environment of `env`, bound to `sb` when not NULL. NULL, with the
 * out-of-memory error thrown, when memory runs out.
 */
void *op_prepare(napi_env env, const op_vtable_t *vt, size_t size, sandbox_t *sb);
/* The end of every prepare: the op's token; or, when `err` is set (an argument was
 * refused, or memory ran out filling the op), the op is discarded and err thrown. */
napi_value op_prepared(op_t *op, err_t *err);

/*
 * Makes a prepared op fail as soon as it is started, with `error`, before its own start
 * runs (so nothing is sent): for what the original found only when it began the work
 * (an argument Node refused to hand to the docker CLI, an image name the engine cannot
 * know), checked here while the arguments are read but reported where the original
 * reported it, after the state and abort checks of the shim. 0, or -1 with `err` set
 * (out of memory).
 */
int op_fail_at_start(op_t *op, napi_value error, err_t *err);

/*
 * Hands an op's work to another op made for the same call (a transport falling back to
 * another, say): `child`, prepared but never handed out as a token, is started now; its
 * events go to the parent's event callback, a cancel or flow control of the parent reaches
 * it, and when it settles, the parent settles with the same value (built by the child) and
 * is released. The parent must have nothing else pending. `child` is owned by op.c from
 * here on.
 */
void op_delegate(op_t *parent, op_t *child);
/* Frees an op that was prepared but will never run (the child of a delegation that was
 * not needed). NULL is fine. */
void op_discard(op_t *op);
/* Prepares an op without a token, for op_delegate: op_prepare's twin for operations made
 * inside another operation. NULL when out of memory (nothing thrown). */
void *op_new(jsenv_t *js, const op_vtable_t *vt, size_t size, sandbox_t *sb);

/*
 * Keeps the op's memory valid across a call that can run JavaScript (op_emit: the
 * consumer may cancel, and so settle and release, the op before it returns): freeing is
 * put off until op_unhold. The op may be settled and cancelled meanwhile; check
 * op->settled / op->cancelled after op_emit, before touching its work.
 */
void op_hold(op_t *op);
void op_unhold(op_t *op);

/* Settles with the result (err NULL or empty) or the error, then releases the op. */
void op_settle(op_t *op, err_t *err);
void op_reject_cancelled(op_t *op);
/* Rejects with a value built by `build` inside an open scope (e.g. an AggregateError). */
void op_reject_build(op_t *op, napi_value (*build)(op_t *op));
/* The abort reason given to native.cancel(); a JavaScript scope must be open. */
napi_value op_cancel_reason(op_t *op);
/* 1 when someone listens to the op's events (its own callback, or its parent's). */
int op_has_events(const op_t *op);
/* Calls the op's event callback with argv (scope must be open: use jsenv_enter). */
void op_emit(op_t *op, size_t argc, napi_value *argv);
/* The op has nothing pending: frees it once settled (or at once when tearing down). */
void op_release(op_t *op);

/* Registers native.start(token[, onEvent]), cancel(token, reason), control(token, command). */
void op_register(napi_env env, napi_value exports);

#endif
