/*
 * tree_engine.h - importTree and exportTree on the engine path: the engine table's rows
 * and the backends behind the front of tree_front.h (tree_engine.c says how each works and why).
 */
#ifndef SBX_TREE_ENGINE_H
#define SBX_TREE_ENGINE_H

#include <node_api.h>
#include <stddef.h>

#include "runtime/tree_front.h"

extern const tree_import_backend_t tree_engine_import_backend;
extern const tree_export_backend_t tree_engine_export_backend;

/* native.prepareImportTree(sandbox, options) and prepareExportTree(sandbox, selection, options). */

#endif
