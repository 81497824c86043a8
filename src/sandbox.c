/* sandbox.c - placeholder while the lifecycle is written. */
#include <node_api.h>
#include "api.h"
napi_value client_js_prepare_create(napi_env env, napi_callback_info info) { (void)info; napi_throw_error(env, NULL, "createSandbox is being written"); return NULL; }
napi_value client_js_prepare_resume(napi_env env, napi_callback_info info) { (void)info; napi_throw_error(env, NULL, "resumeSandbox is being written"); return NULL; }
void sandbox_register(napi_env env, napi_value exports) { (void)env; (void)exports; }
