/*
 * tree_agent.h - importTree and exportTree through the in-sandbox agent: the agent
 * table's rows and the backends behind the front of tree_front.h (tree_agent.c says how they
 * work), with the engine's backends (tree_engine.h) as fallback where the agent cannot run.
 */
#ifndef SBX_TREE_AGENT_H
#define SBX_TREE_AGENT_H

#include <node_api.h>
#include <stddef.h>

#include "runtime/tree_front.h"

/* native.prepareImportTree(sandbox, options) and prepareExportTree(sandbox, selection, options). */
napi_value tree_agent_prepare_import(napi_env env, sandbox_t *sb, napi_value *argv);
napi_value tree_agent_prepare_export(napi_env env, sandbox_t *sb, napi_value *argv);

#endif
