/*
 * api.h - the N-API entry points each module exposes, registered by addon.c.
 *
 * Owns: nothing. The JavaScript shim (lib/native.js) is the only caller.
 */
#ifndef SBX_API_H
#define SBX_API_H

#include <node_api.h>

/* op.c */
napi_value op_js_start(napi_env env, napi_callback_info info);
napi_value op_js_cancel(napi_env env, napi_callback_info info);
napi_value op_js_control(napi_env env, napi_callback_info info);

/* client.c */
napi_value client_js_new(napi_env env, napi_callback_info info);
napi_value client_js_prepare_pull(napi_env env, napi_callback_info info);
napi_value client_js_prepare_create(napi_env env, napi_callback_info info);
napi_value client_js_prepare_resume(napi_env env, napi_callback_info info);
napi_value client_js_resolve_endpoint(napi_env env, napi_callback_info info);

/* exports_text.c: a text page as the object readTextFilePage resolves with. */
struct text_page;
napi_value text_page_to_js(napi_env env, const struct text_page *page);

/* Registration hooks of modules that export many small functions. */
void exports_text_register(napi_env env, napi_value exports);
void exports_codec_register(napi_env env, napi_value exports);
void sandbox_register(napi_env env, napi_value exports);
void files_register(napi_env env, napi_value exports);

#endif
