/*
 * addon.h - the per-environment state of the addon (napi_set_instance_data), and the
 * scope helpers every callback into JavaScript goes through.
 *
 * Owns: the curl loop, the reference to the DockerSandboxError constructor, the async
 * context used for callbacks from libuv, and the list of live operations (so an
 * environment that shuts down can stop them). Worker threads get their own addon_t.
 */
#ifndef SBX_ADDON_H
#define SBX_ADDON_H

#include <node_api.h>
#include <uv.h>

#include "loop.h"

struct op;
struct exec_task;

typedef struct addon {
  napi_env env;
  uv_loop_t *uv;
  curl_loop_t *curl;
  napi_ref error_ctor;
  napi_ref resource;
  napi_async_context actx;
  struct op *ops;           /* live operations, newest first */
  struct exec_task *tasks;  /* live exec tasks, including ones no operation owns any more */
  int live_handles;         /* uv handles and requests of ours not yet closed */
  int curl_closed;
  int closing;
  napi_async_cleanup_hook_handle cleanup;
} addon_t;

/*
 * Opens a handle scope and a callback scope, so promises settled and functions called
 * from a libuv callback run their microtasks when the scope closes.
 */
typedef struct js_scope {
  napi_handle_scope hs;
  napi_callback_scope cs;
  int ok;
} js_scope_t;

int js_enter(addon_t *a, js_scope_t *s);
void js_leave(addon_t *a, js_scope_t *s);

addon_t *addon_get(napi_env env);

/* Every uv handle or request we open is counted, so the environment's teardown can wait
 * until the last one is closed (Node aborts on a loop with open handles). */
void addon_handle_opened(addon_t *a);
void addon_handle_closed(addon_t *a);

#endif
