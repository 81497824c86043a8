/*
 * proc.h - managed processes: the original's DockerProcessManager. The entries of the
 * runtime table (table.h) for startProcess, stopProcess, the disposal of every process
 * when the sandbox stops, listProcesses and readProcessLogs, and the start operation the
 * agent's table builds on (agent_procs.c).
 *
 * The files behind it, one section each:
 *   proc_registry.c  the registry of one sandbox, its records, their output and marker
 *   proc_start.c     starting: the original's launcher and wrapper, the marker handshake
 *   proc_stop.c      stopping one process or all of them (TERM, grace, KILL)
 *   proc_query.c     listing and logs (synchronous)
 *   proc_engine.c    the engine's carrier: the launch as an exec, the group scripts
 */
#ifndef SBX_PROC_H
#define SBX_PROC_H

#include <node_api.h>
#include <stddef.h>

#include "base/err.h"
#include "codec/spec.h"
#include "napi/op.h"
#include "sandbox/sandbox.h"

typedef struct proc_carrier proc_carrier_t;

/* startProcess's options, validated (the original's order and messages). */
typedef struct proc_start_req {
  char *command;
  char **args;
  size_t nargs;
  char *cwd_raw; /* as given, or NULL */
  char *workdir; /* the absolute container path it runs in */
  kv_list_t env;
} proc_start_req_t;

/* Validates `options` into `req`. 0, or -1 with the error in err (thrown by the caller).
 * *late: an error the original raised only once the call ran (a NUL in an argument),
 * for op_fail_at_start; NULL when none. */
int proc_start_req_from_js(napi_env env, sandbox_t *sb, napi_value options, proc_start_req_t *req, napi_value *late,
                           err_t *err);
void proc_start_req_free(proc_start_req_t *req);
/* What a start refuses before anything is sent (the manager disposed, a blank command):
 * -1 with err set, else 0. */
int proc_start_refused(sandbox_t *sb, const proc_start_req_t *req, err_t *err);
/* A start operation for `req` (its contents taken), its process carried by `carrier`,
 * for op_delegate. NULL when out of memory. */
op_t *proc_start_op(jsenv_t *js, sandbox_t *sb, proc_start_req_t *req, const proc_carrier_t *carrier);

napi_value proc_prepare_start(napi_env env, sandbox_t *sb, napi_value *argv);
napi_value proc_prepare_stop(napi_env env, sandbox_t *sb, napi_value *argv);
napi_value proc_prepare_dispose(napi_env env, sandbox_t *sb, napi_value *argv);
napi_value proc_list(napi_env env, sandbox_t *sb, napi_value *argv);
napi_value proc_logs(napi_env env, sandbox_t *sb, napi_value *argv);

#endif
