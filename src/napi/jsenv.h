/*
 * jsenv.h - the state of one JavaScript environment (napi_set_instance_data): the I/O
 * context its work runs on, the DockerSandboxError class errors are built with, the
 * async context callbacks from libuv run in, and the scope helpers every call into
 * JavaScript from a libuv callback goes through. Worker threads get their own.
 *
 * Owns: the I/O context (engine/io.h), the references to the error class and to the
 * async resource, and the list of teardown hooks. The live operations are kept here too
 * (`ops`), owned by napi/op.c.
 *
 * Lifetime: jsenv_new() at module init; jsenv_close() when the environment ends: the
 * hooks run (newest first, no JavaScript is called), the references are dropped, the
 * I/O context closes, and once it is gone (every handle closed) the state is freed and
 * `closed` is called.
 */
#ifndef SBX_JSENV_H
#define SBX_JSENV_H

#include <node_api.h>

#include "engine/io.h"

typedef struct jsenv jsenv_t;
typedef void (*jsenv_hook_fn)(jsenv_t *e);

typedef struct jsenv_hook {
  jsenv_hook_fn fn;
  struct jsenv_hook *next;
} jsenv_hook_t;

struct op;

struct jsenv {
  napi_env env;
  io_t *io;
  napi_ref error_ctor;
  napi_ref null_byte_error; /* (position, value) -> Node's TypeError (native.init), or NULL */
  napi_ref resource;
  napi_async_context actx;
  struct op *ops; /* live operations, newest first: owned by napi/op.c */
  jsenv_hook_t *hooks;
  int closing;
  void (*closed)(void *arg);
  void *closed_arg;
};

/* Makes the state and stores it as the environment's instance data. NULL with a
 * JavaScript exception pending on failure (everything made so far undone). */
jsenv_t *jsenv_new(napi_env env);
jsenv_t *jsenv_get(napi_env env);
/* Registers `fn` to run at jsenv_close (once per fn). 0, or -1 when out of memory. */
int jsenv_on_teardown(jsenv_t *e, jsenv_hook_fn fn);
/* Starts the teardown described above. */
void jsenv_close(jsenv_t *e, void (*closed)(void *arg), void *arg);

/*
 * Opens a handle scope and a callback scope, so promises settled and functions called
 * from a libuv callback run their microtasks when the scope closes.
 */
typedef struct js_scope {
  napi_handle_scope hs;
  napi_callback_scope cs;
  int ok;
} jsenv_scope_t;

int jsenv_enter(jsenv_t *e, jsenv_scope_t *s);
void jsenv_leave(jsenv_t *e, jsenv_scope_t *s);

#endif
