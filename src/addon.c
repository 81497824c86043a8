/*
 * addon.c - the top of the addon: module initialisation and the end of an environment.
 *
 * At init: the process-wide libcurl setup (once, whatever the number of environments:
 * worker threads load the addon too), the environment's state (napi/jsenv.h), and the
 * registration of every native function the shim calls (lib/native.js). When the
 * environment ends (process exit or a worker ending), its async cleanup hook closes that
 * state: live operations stop without calling JavaScript, exec tasks end, libcurl's
 * handles close, and the hook is removed once the last libuv handle is gone.
 *
 * Every layer registers its own entry points (a *_register function beside them); this
 * file only calls those. Owns nothing. Nothing includes this file.
 */
#include <curl/curl.h>
#include <stdlib.h>
#include <uv.h>

#include "base/trace.h"
#include "lifecycle/build.h"
#include "lifecycle/client.h"
#include "lifecycle/create.h"
#include "lifecycle/fork.h"
#include "lifecycle/lifetime.h"
#include "lifecycle/pull.h"
#include "lifecycle/remove.h"
#include "lifecycle/resume.h"
#include "lifecycle/sandboxes.h"
#include "lifecycle/stats.h"
#include "napi/exports.h"
#include "napi/jsenv.h"
#include "napi/module.h"
#include "napi/op.h"
#include "napi/values.h"
#include "runtime/engine_files.h"
#include "runtime/table.h"

/* Process-wide, once: libcurl's global state and the trace flag. */
static uv_once_t global_once = UV_ONCE_INIT;
static CURLcode global_status = CURLE_FAILED_INIT;

static void global_init(void) {
  global_status = curl_global_init(CURL_GLOBAL_DEFAULT);
  trace_init();
}

static void on_closed(void *arg) { napi_remove_async_cleanup_hook((napi_async_cleanup_hook_handle)arg); }

static void on_env_cleanup(napi_async_cleanup_hook_handle handle, void *arg) { jsenv_close(arg, on_closed, handle); }

static napi_value init(napi_env env, napi_value exports) {
  uv_once(&global_once, global_init);
  if (global_status != CURLE_OK) {
    napi_throw_error(env, NULL, "libcurl could not be initialised.");
    return NULL;
  }
  jsenv_t *js = jsenv_new(env);
  if (js == NULL) return NULL; /* jsenv_new threw and undid itself */
  if (napi_add_async_cleanup_hook(env, on_env_cleanup, js, NULL) != napi_ok) {
    /* Nothing will ever close it: close it now (no operation exists yet). */
    jsenv_close(js, NULL, NULL);
    return nu_throw_status(env, "napi_add_async_cleanup_hook");
  }
  module_register(env, exports);
  op_register(env, exports);
  client_register(env, exports);
  pull_register(env, exports);
  create_register(env, exports);
  resume_register(env, exports);
  remove_register(env, exports);
  build_register(env, exports);
  lifetime_register(env, exports);
  sandboxes_register(env, exports);
  stats_register(env, exports);
  fork_register(env, exports);
  runtime_register(env, exports);
  files_register(env, exports);
  exports_text_register(env, exports);
#ifdef ANVIA_TEST_EXPORTS
  exports_codec_register(env, exports);
#endif
  return exports;
}

NAPI_MODULE_INIT() { return init(env, exports); }
