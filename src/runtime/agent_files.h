/*
 * agent_files.h - readFile, writeFile and listFiles through the in-sandbox agent
 * (agent_files.c): the agent table's rows, with the engine path as fallback (agent_op.h).
 */
#ifndef SBX_AGENT_FILES_H
#define SBX_AGENT_FILES_H

#include <node_api.h>
#include <stddef.h>

#include "sandbox/sandbox.h"

napi_value agent_read_prepare(napi_env env, sandbox_t *sb, napi_value *argv);
napi_value agent_write_prepare(napi_env env, sandbox_t *sb, napi_value *argv);
napi_value agent_list_prepare(napi_env env, sandbox_t *sb, napi_value *argv);

#endif
