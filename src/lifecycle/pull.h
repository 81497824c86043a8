/*
 * pull.h - pullImage: POST /images/create, with the engine's progress stream read to the
 * end (codec/progress.h) and any error reported inside it turned into a rejection.
 */
#ifndef SBX_PULL_H
#define SBX_PULL_H

#include <node_api.h>

/* Registers native.preparePull(client, options) -> operation token. */
void pull_register(napi_env env, napi_value exports);

#endif
