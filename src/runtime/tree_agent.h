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
extern const tree_import_backend_t tree_agent_import_backend;
extern const tree_export_backend_t tree_agent_export_backend;

#endif
