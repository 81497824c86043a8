/*
 * client.h - the native side of DockerSandboxClient: which engine it talks to.
 *
 * Owns: a client_t holds a reference to its engine_t. The JavaScript object owns the
 * client_t through an external; sandboxes made through it take their own engine
 * reference, so they outlive the client object if they must.
 */
#ifndef SBX_CLIENT_H
#define SBX_CLIENT_H

#include <node_api.h>

#include "engine/engine.h"

typedef struct client {
  engine_t *eng;
  char *docker_path;
  int transport; /* transport_t (sandbox/sandbox.h): how its sandboxes run their operations */
} client_t;

/* A call of (client[, options]): the client behind the token (from native.clientNew) of its
 * first argument and, when `options` is not NULL, the second (undefined when not passed).
 * NULL with an exception pending (a TypeError for what is not a client's token). */
client_t *client_call(napi_env env, napi_callback_info info, napi_value *options);
/* Registers native.clientNew(options) (validates as the original's constructor, plus
 * `host`) and native.resolveEndpoint(host, env) (endpoint resolution as a pure function,
 * for tests). */
void client_register(napi_env env, napi_value exports);

#endif
