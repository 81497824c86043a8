/*
 * agent_term.h - terminals through the in-sandbox agent (agent_term.c): the runtime
 * table's `terminal` row, one entry for every call on a terminal. When the agent cannot
 * run ("auto"), the same request goes to the engine path's terminals (engine_term.h).
 */
#ifndef SBX_AGENT_TERM_H
#define SBX_AGENT_TERM_H

#include <node_api.h>
#include <stddef.h>

#include "sandbox/sandbox.h"

/* native.prepareTerminal(sandbox, options, action) -> token; action is one of "start",
 * "attach", "write", "output", "wait", "resize", "signal", "list" (agent_term.c). */
napi_value agent_term_prepare(napi_env env, sandbox_t *sb, napi_value *argv);
/* Terminals this handle started and not known to have ended (they count as processes). */
size_t agent_term_live(sandbox_t *sb);

#endif
