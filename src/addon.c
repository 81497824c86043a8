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
 * Owns: the module's registration tables. Nothing includes this file.
 */
#include <curl/curl.h>
#include <stdlib.h>
#include <uv.h>

#include "base/trace.h"
#include "engine/agent_image.h"
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
#include "napi/convert.h"
#include "napi/exports.h"
#include "napi/jsenv.h"
#include "napi/op.h"
#include "napi/values.h"
#include "runtime/files.h"
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

/* native.init(DockerSandboxError[, nullByteArgumentError]): the class every engine error
 * is built with, and the builder of Node's TypeError for a NUL byte in a command's
 * argument (lib/errors.js; without it, napi/args.c builds a plain one). */
static napi_value js_init(napi_env env, napi_callback_info info) {
  jsenv_t *js = jsenv_get(env);
  size_t argc = 2;
  napi_value argv[2] = {NULL, NULL};
  NU_CALL(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 1 || nu_typeof(env, argv[0]) != napi_function) {
    napi_throw_type_error(env, NULL, "init expects the DockerSandboxError class.");
    return NULL;
  }
  if (js->error_ctor) napi_delete_reference(env, js->error_ctor);
  js->error_ctor = NULL;
  NU_CALL(env, napi_create_reference(env, argv[0], 1, &js->error_ctor));
  if (js->null_byte_error) napi_delete_reference(env, js->null_byte_error);
  js->null_byte_error = NULL;
  if (argc > 1 && nu_typeof(env, argv[1]) == napi_function)
    NU_CALL(env, napi_create_reference(env, argv[1], 1, &js->null_byte_error));
  return nu_undefined(env);
}

/* native.setAgentDir(dir): where the in-sandbox agent's binaries are
 * (<dir>/<arch>/anvia-agent). */
static napi_value js_set_agent_dir(napi_env env, napi_callback_info info) {
  jsenv_t *js = jsenv_get(env);
  size_t argc = 1;
  napi_value argv[1] = {NULL};
  NU_CALL(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  char *dir = argc > 0 ? nu_strdup(env, argv[0]) : NULL;
  if (dir == NULL) {
    napi_throw_type_error(env, NULL, "setAgentDir expects a directory.");
    return NULL;
  }
  int rc = agent_images_set_dir(js->io, dir);
  free(dir);
  if (rc != 0) {
    napi_throw_error(env, NULL, "Out of memory.");
    return NULL;
  }
  return nu_undefined(env);
}

static const napi_property_descriptor ENTRIES[] = {
    {"setAgentDir", NULL, js_set_agent_dir, NULL, NULL, NULL, napi_default, NULL},
    {"init", NULL, js_init, NULL, NULL, NULL, napi_default, NULL},
    {"start", NULL, op_js_start, NULL, NULL, NULL, napi_default, NULL},
    {"cancel", NULL, op_js_cancel, NULL, NULL, NULL, napi_default, NULL},
    {"control", NULL, op_js_control, NULL, NULL, NULL, napi_default, NULL},
    {"clientNew", NULL, client_js_new, NULL, NULL, NULL, napi_default, NULL},
    {"preparePull", NULL, client_js_prepare_pull, NULL, NULL, NULL, napi_default, NULL},
    {"prepareCreate", NULL, client_js_prepare_create, NULL, NULL, NULL, napi_default, NULL},
    {"prepareResume", NULL, client_js_prepare_resume, NULL, NULL, NULL, napi_default, NULL},
    {"resolveEndpoint", NULL, client_js_resolve_endpoint, NULL, NULL, NULL, napi_default, NULL},
};

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
  if (napi_define_properties(env, exports, sizeof(ENTRIES) / sizeof(ENTRIES[0]), ENTRIES) != napi_ok)
    return nu_throw_status(env, "napi_define_properties");
  remove_register(env, exports);
  build_register(env, exports);
  lifetime_register(env, exports);
  sandboxes_register(env, exports);
  stats_register(env, exports);
  fork_register(env, exports);
  runtime_register(env, exports);
  files_register(env, exports);
  exports_text_register(env, exports);
  exports_codec_register(env, exports);
  return exports;
}

NAPI_MODULE_INIT() { return init(env, exports); }
