/*
 * agent_watch.h - watchFiles: changes beneath a sandbox directory, as they happen, through
 * the in-sandbox agent's WATCH request (agent/PROTOCOL.md). The engine has no way to watch
 * a container's files, so the engine's table refuses the call (agent_watch_engine_prepare) and
 * an agent that cannot run is a clear invalid_state error, never a silent fallback.
 */
#ifndef SBX_AGENT_WATCH_H
#define SBX_AGENT_WATCH_H

#include <node_api.h>

#include "sandbox/sandbox.h"

/* native.prepareWatchFiles(sandbox, options) -> token; its events are
 * (type, path, kind): "create" | "modify" | "delete" | "rename" | "overflow". */
napi_value agent_watch_prepare(napi_env env, sandbox_t *sb, napi_value *argv);
/* The engine table's row: the options are checked as the agent's are, then the call is
 * refused with invalid_state. */
napi_value agent_watch_engine_prepare(napi_env env, sandbox_t *sb, napi_value *argv);

#endif
