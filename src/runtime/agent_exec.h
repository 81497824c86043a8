/*
 * agent_exec.h - exec and execStream through the in-sandbox agent (agent_exec.c): the
 * agent table's row, with the engine path as fallback (agent_op.h), and the EXEC request
 * other agent operations build from an exec spec (agent_procs.c).
 */
#ifndef SBX_AGENT_EXEC_H
#define SBX_AGENT_EXEC_H

#include <node_api.h>
#include <stddef.h>

#include "engine/agent_conn.h"
#include "engine/exec_task.h"
#include "sandbox/sandbox.h"

napi_value agent_exec_prepare(napi_env env, sandbox_t *sb, napi_value *argv);

/* The agent's EXEC request for `s` (argv, env, workdir as cwd), with `flags`
 * (AW_EXEC_*) and the initial output `window`. The strings are referenced, not copied:
 * keep `s` until the request is sent. 0, or -1 when out of memory. */
typedef struct agent_exec_msg {
  agent_msg_t msg;
  aw_bytes_t *argv, *env;
} agent_exec_msg_t;
int agent_exec_msg_init(agent_exec_msg_t *x, const exec_spec_t *s, uint32_t flags, uint32_t window);
void agent_exec_msg_free(agent_exec_msg_t *x);

#endif
