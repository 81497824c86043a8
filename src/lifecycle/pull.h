/*
 * pull.h - pullImage: POST /images/create, with the engine's progress stream read to the
 * end (codec/progress.h) and any error reported inside it turned into a rejection.
 */
#ifndef SBX_PULL_H
#define SBX_PULL_H

#include <node_api.h>

/* native.preparePull(client, options) -> operation token. */
napi_value client_js_prepare_pull(napi_env env, napi_callback_info info);

#endif
