/*
 * proc.h - managed processes on the engine path: the original's DockerProcessManager.
 * The entries of the runtime table (table.h) for startProcess, stopProcess, the disposal
 * of every process when the sandbox stops, listProcesses and readProcessLogs.
 *
 * The files behind it, one section each:
 *   proc_registry.c  the registry of one sandbox, its records, their output and marker
 *   proc_start.c     starting: the original's launcher and wrapper, the marker handshake
 *   proc_stop.c      stopping one process or all of them (TERM, grace, KILL)
 *   proc_query.c     listing and logs (synchronous)
 */
#ifndef SBX_PROC_H
#define SBX_PROC_H

#include <node_api.h>
#include <stddef.h>

#include "sandbox/sandbox.h"

napi_value proc_prepare_start(napi_env env, sandbox_t *sb, napi_value *argv, size_t argc);
napi_value proc_prepare_stop(napi_env env, sandbox_t *sb, napi_value *argv, size_t argc);
napi_value proc_prepare_dispose(napi_env env, sandbox_t *sb, napi_value *argv, size_t argc);
napi_value proc_list(napi_env env, sandbox_t *sb, napi_value *argv, size_t argc);
napi_value proc_logs(napi_env env, sandbox_t *sb, napi_value *argv, size_t argc);

#endif
