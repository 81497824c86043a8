/*
 * agent_procs.h - managed processes through the in-sandbox agent (agent_procs.c): the
 * agent table's startProcess, whose processes are then stopped, listed and logged by the
 * shared registry (proc.h) through the agent's carrier.
 */
#ifndef SBX_AGENT_PROCS_H
#define SBX_AGENT_PROCS_H

#include <node_api.h>
#include <stddef.h>

#include "runtime/proc_registry.h"
#include "sandbox/sandbox.h"

napi_value agent_procs_prepare_start(napi_env env, sandbox_t *sb, napi_value *argv);
/* Managed processes through the agent, the engine's carrier where the agent is gone. */
extern const proc_carrier_t agent_procs_carrier;

#endif
