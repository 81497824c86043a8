/*
 * resume.h - resumeSandbox: native.prepareResume(client, options) -> operation token.
 */
#ifndef SBX_RESUME_H
#define SBX_RESUME_H

#include <node_api.h>

napi_value client_js_prepare_resume(napi_env env, napi_callback_info info);

#endif
