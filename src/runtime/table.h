/*
 * table.h - the one interface the runtime operations go through.
 *
 * A sandbox's transport (sandbox_t.transport) says how its runtime operations are carried
 * out; transport_table (transport.c) turns it into the table a call goes through. The
 * JavaScript entry points (native.prepareExec, prepareReadFile,
 * ...) are registered once, in dispatch.c; each finds the sandbox named by its first
 * argument and calls that sandbox's entry with the arguments as JavaScript passed them
 * (argv[0] the sandbox token, argv[1] the options, then the extras; missing ones
 * undefined). An entry returns what the JavaScript call returns: an operation token
 * (napi/op.h) for the asynchronous operations, a value for the registry reads.
 *
 * A table is a transport: its entries, the backends of its tree transfers and the carrier
 * of its managed processes. Two: engine_runtime_ops (engine_table.c), the Engine API's
 * exec and archive endpoints and the scripts the original also ran in the container; and
 * agent_runtime_ops (agent_table.c), the in-sandbox agent. Where the agent cannot run, a
 * call goes to the first: before it is made when that is already known
 * (transport_table), or from the agent operation when it finds out (agent_op.h), which
 * then carries on with the engine table's row, backend or carrier. A new operation is one
 * more row in each; every row of both is filled.
 *
 * Owns: nothing.
 */
#ifndef SBX_TABLE_H
#define SBX_TABLE_H

#include <node_api.h>
#include <stddef.h>

#include "sandbox/sandbox.h"

#define RUNTIME_MAX_ARGS 4

typedef struct tree_import_backend tree_import_backend_t;
typedef struct tree_export_backend tree_export_backend_t;
typedef struct proc_carrier proc_carrier_t;

/* argv holds RUNTIME_MAX_ARGS values, undefined where the call passed fewer. */
typedef napi_value (*runtime_entry_fn)(napi_env env, sandbox_t *sb, napi_value *argv);

typedef struct runtime_ops {
  const char *name;
  runtime_entry_fn exec;              /* exec and execStream: (sandbox, options) */
  runtime_entry_fn read_file;         /* (sandbox, options) */
  runtime_entry_fn write_file;        /* (sandbox, options, isText) */
  runtime_entry_fn list_files;        /* (sandbox, options) */
  runtime_entry_fn start_process;     /* (sandbox, options) */
  runtime_entry_fn stop_process;      /* (sandbox, options) */
  runtime_entry_fn dispose_processes; /* (sandbox): stop() and destroy() end them all */
  runtime_entry_fn list_processes;    /* (sandbox) -> array, synchronous */
  runtime_entry_fn process_logs;      /* (sandbox, processId, tailBytes) -> logs, synchronous */
  runtime_entry_fn wait_for_port;     /* (sandbox, options) */
  runtime_entry_fn watch_files;       /* (sandbox, options); the engine's refuses (agent_watch.h) */
  runtime_entry_fn terminal;          /* (sandbox, options, action); the engine's refuses (agent_term.h) */
  /* How importTree and exportTree move entries: tree_front.c runs the transfer (the JS
   * entries, the checks, the queue), the backend carries its entries (tree_front.h). */
  const tree_import_backend_t *tree_import;
  const tree_export_backend_t *tree_export;
  /* How a managed process is launched, checked and stopped (proc_registry.h): the record
   * keeps the carrier that started it, so stopping and listing go the same way. */
  const proc_carrier_t *procs;
} runtime_ops_t;

/* The Engine API implementation (engine_table.c). */
extern const runtime_ops_t engine_runtime_ops;
/* Through the in-sandbox agent, the engine's implementation as fallback (agent_table.c). */
extern const runtime_ops_t agent_runtime_ops;

/* The table a call on `sb` goes through (transport.c). */
const runtime_ops_t *transport_table(sandbox_t *sb);
/* "engine", "auto", "agent" -> transport_t; -1 for anything else. */
int transport_parse(const char *name);

/* Registers the JavaScript entry points that dispatch through a sandbox's table. */
void runtime_register(napi_env env, napi_value exports);

#endif
