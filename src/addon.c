/*
 * addon.c - module initialisation: per-environment state, the environment cleanup hook,
 * and the registration of every native function. Nothing else lives here.
 */
#include "addon.h"

#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "napi_util.h"
#include "exec.h"
#include "op.h"
#include "runtime_ops.h"
#include "trace.h"

int js_enter(addon_t *a, js_scope_t *s) {
  s->ok = 0;
  if (a->closing) return -1;
  if (napi_open_handle_scope(a->env, &s->hs) != napi_ok) return -1;
  napi_value resource = NULL;
  napi_get_reference_value(a->env, a->resource, &resource);
  if (resource == NULL || napi_open_callback_scope(a->env, resource, a->actx, &s->cs) != napi_ok) {
    napi_close_handle_scope(a->env, s->hs);
    return -1;
  }
  s->ok = 1;
  return 0;
}

void js_leave(addon_t *a, js_scope_t *s) {
  if (!s->ok) return;
  napi_close_callback_scope(a->env, s->cs);
  napi_close_handle_scope(a->env, s->hs);
  s->ok = 0;
}

addon_t *addon_get(napi_env env) {
  addon_t *a = NULL;
  napi_get_instance_data(env, (void **)&a);
  return a;
}

/* The teardown is complete once libcurl's handles and every handle of ours are closed. */
static void maybe_finish_teardown(addon_t *a) {
  if (!a->closing || !a->curl_closed || a->live_handles > 0) return;
  napi_async_cleanup_hook_handle h = a->cleanup;
  free(a);
  if (h != NULL) napi_remove_async_cleanup_hook(h);
}

void addon_handle_opened(addon_t *a) { a->live_handles++; }

void addon_handle_closed(addon_t *a) {
  a->live_handles--;
  maybe_finish_teardown(a);
}

static void on_curl_closed(void *arg) {
  addon_t *a = arg;
  a->curl_closed = 1;
  maybe_finish_teardown(a);
}

/*
 * The environment is going away (process exit or a worker ending): stop every operation
 * without calling JavaScript, end every exec task (managed processes included), then close
 * libcurl's handles. Finalizers of JavaScript objects may run after this and must only
 * touch their own memory.
 */
static void on_env_cleanup(napi_async_cleanup_hook_handle handle, void *arg) {
  addon_t *a = arg;
  a->cleanup = handle;
  a->closing = 1;
  op_teardown_all(a);
  exec_tasks_teardown(a);
  napi_delete_reference(a->env, a->error_ctor);
  napi_delete_reference(a->env, a->resource);
  napi_async_destroy(a->env, a->actx);
  curl_loop_close(a->curl, on_curl_closed, a);
}

/* native.init(DockerSandboxError): the class every engine error is built with. */
static napi_value js_init(napi_env env, napi_callback_info info) {
  addon_t *a = addon_get(env);
  size_t argc = 1;
  napi_value argv[1];
  NU_CALL(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 1 || nu_typeof(env, argv[0]) != napi_function) {
    napi_throw_type_error(env, NULL, "init expects the DockerSandboxError class.");
    return NULL;
  }
  if (a->error_ctor) napi_delete_reference(env, a->error_ctor);
  NU_CALL(env, napi_create_reference(env, argv[0], 1, &a->error_ctor));
  return nu_undefined(env);
}

static void instance_finalize(napi_env env, void *data, void *hint) {
  (void)env;
  (void)data;
  (void)hint;
  /* The async cleanup hook owns the teardown; nothing left to do here. */
}

static napi_value init(napi_env env, napi_value exports) {
  static int curl_ready = 0;
  if (!curl_ready) {
    /* Process-wide, once: libcurl's global state (the only global besides this flag). */
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
      napi_throw_error(env, NULL, "libcurl could not be initialised.");
      return NULL;
    }
    curl_ready = 1;
    trace_init();
  }
  addon_t *a = calloc(1, sizeof(*a));
  if (a == NULL) {
    napi_throw_error(env, NULL, "Out of memory.");
    return NULL;
  }
  a->env = env;
  if (napi_get_uv_event_loop(env, &a->uv) != napi_ok) goto fail;
  a->curl = curl_loop_new(a->uv);
  if (a->curl == NULL) goto fail;
  napi_value resource, name;
  if (napi_create_object(env, &resource) != napi_ok) goto fail;
  if (napi_create_reference(env, resource, 1, &a->resource) != napi_ok) goto fail;
  name = nu_string(env, "anvia.sandbox");
  if (napi_async_init(env, resource, name, &a->actx) != napi_ok) goto fail;
  if (napi_set_instance_data(env, a, instance_finalize, NULL) != napi_ok) goto fail;
  if (napi_add_async_cleanup_hook(env, on_env_cleanup, a, NULL) != napi_ok) goto fail;

  napi_property_descriptor fns[] = {
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
  if (napi_define_properties(env, exports, sizeof(fns) / sizeof(fns[0]), fns) != napi_ok) return NULL;
  sandbox_register(env, exports);
  runtime_ops_register(env, exports);
  files_register(env, exports);
  exports_text_register(env, exports);
  exports_codec_register(env, exports);
  return exports;
fail:
  if (a->curl) curl_loop_close(a->curl, NULL, NULL);
  free(a);
  return nu_throw_status(env, "addon init");
}

NAPI_MODULE_INIT() { return init(env, exports); }
