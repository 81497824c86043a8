/*
 * ports.h - waitForPort on the engine path: the original's /proc/net/tcp probe, run in
 * the container every intervalMs until something listens or the time is up.
 */
#ifndef SBX_PORTS_H
#define SBX_PORTS_H

#include <node_api.h>
#include <stddef.h>

#include "sandbox/sandbox.h"

napi_value ports_prepare_wait(napi_env env, sandbox_t *sb, napi_value *argv, size_t argc);

#endif
