/*
 * runtime_ops.h - the one interface the runtime operations go through.
 *
 * A sandbox carries a table (sandbox_t.ops) saying how its runtime operations are
 * carried out. The JavaScript entry points (native.prepareExec, prepareReadFile, ...) are
 * registered once, in runtime_ops.c; each finds the sandbox named by its first argument
 * and calls that sandbox's entry with the arguments as JavaScript passed them (argv[0]
 * the sandbox token, argv[1] the options, then the extras; missing ones undefined). An
 * entry returns what the JavaScript call returns: an operation token (op.h) for the
 * asynchronous operations, a value for the registry reads.
 *
 * There is one table today, engine_runtime_ops: the Engine API (exec and archive
 * endpoints, and the scripts the original also ran in the container), installed by
 * sandbox_new. Another way of carrying the operations out (an in-container helper
 * fed over one long-lived exec, say) is another table chosen when the sandbox is made;
 * the shim and everything that calls it stay as they are.
 *
 * Owns: nothing.
 */
#ifndef SBX_RUNTIME_OPS_H
#define SBX_RUNTIME_OPS_H

#include <node_api.h>
#include <stddef.h>

#include "sandbox.h"

#define RUNTIME_MAX_ARGS 4

typedef napi_value (*runtime_entry_fn)(napi_env env, sandbox_t *sb, napi_value *argv, size_t argc);

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
} runtime_ops_t;

/* The Engine API implementation (exec_op.c, files.c, listing.c, procmgr.c, ports.c). */
extern const runtime_ops_t engine_runtime_ops;

napi_value exec_prepare(napi_env env, sandbox_t *sb, napi_value *argv, size_t argc);
napi_value files_prepare_read(napi_env env, sandbox_t *sb, napi_value *argv, size_t argc);
napi_value files_prepare_write(napi_env env, sandbox_t *sb, napi_value *argv, size_t argc);
napi_value listing_prepare(napi_env env, sandbox_t *sb, napi_value *argv, size_t argc);
napi_value procmgr_prepare_start(napi_env env, sandbox_t *sb, napi_value *argv, size_t argc);
napi_value procmgr_prepare_stop(napi_env env, sandbox_t *sb, napi_value *argv, size_t argc);
napi_value procmgr_prepare_dispose(napi_env env, sandbox_t *sb, napi_value *argv, size_t argc);
napi_value procmgr_list(napi_env env, sandbox_t *sb, napi_value *argv, size_t argc);
napi_value procmgr_logs(napi_env env, sandbox_t *sb, napi_value *argv, size_t argc);
napi_value ports_prepare_wait(napi_env env, sandbox_t *sb, napi_value *argv, size_t argc);

/* Registers the JavaScript entry points that dispatch through the table. */
void runtime_ops_register(napi_env env, napi_value exports);

#endif
