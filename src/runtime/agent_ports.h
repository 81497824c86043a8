/*
 * agent_ports.h - waitForPort through the in-sandbox agent (agent_ports.c): one request,
 * the agent polls /proc/net/tcp itself; the engine path as fallback (agent_op.h).
 */
#ifndef SBX_AGENT_PORTS_H
#define SBX_AGENT_PORTS_H

#include <node_api.h>
#include <stddef.h>

#include "sandbox/sandbox.h"

napi_value agent_ports_prepare(napi_env env, sandbox_t *sb, napi_value *argv);

#endif
