/*
 * create.h - createSandbox: native.prepareCreate(client, options) -> operation token.
 */
#ifndef SBX_CREATE_H
#define SBX_CREATE_H

#include <node_api.h>

void create_register(napi_env env, napi_value exports);

#endif
