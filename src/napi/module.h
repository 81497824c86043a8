/*
 * module.h - the module's own entry points: native.init, which hands the addon the
 * DockerSandboxError class (and Node's NUL-byte TypeError builder), and
 * native.setAgentDir, where the in-sandbox agent's binaries are.
 */
#ifndef SBX_MODULE_H
#define SBX_MODULE_H

#include <node_api.h>

void module_register(napi_env env, napi_value exports);

#endif
