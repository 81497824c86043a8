/*
 * resume.h - resumeSandbox: native.prepareResume(client, options) -> operation token.
 */
#ifndef SBX_RESUME_H
#define SBX_RESUME_H

#include <node_api.h>

void resume_register(napi_env env, napi_value exports);

#endif
