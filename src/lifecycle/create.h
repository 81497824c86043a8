/*
 * create.h - createSandbox: native.prepareCreate(client, options) -> operation token.
 */
#ifndef SBX_CREATE_H
#define SBX_CREATE_H

#include <node_api.h>

napi_value client_js_prepare_create(napi_env env, napi_callback_info info);

#endif
