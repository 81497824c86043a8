/*
 * exec_op.h - exec and execStream on the engine path: the original's exec options read
 * into an exec task's spec, and the operation that runs the task for JavaScript.
 */
#ifndef SBX_EXEC_OP_H
#define SBX_EXEC_OP_H

#include <node_api.h>
#include <stddef.h>

#include "base/err.h"
#include "engine/exec.h"
#include "sandbox/sandbox.h"

/*
 * Reads the original's exec options (validateExecOptions, same order and messages) into
 * a spec for `sb`: workdir from cwd, env, timeout (default: the sandbox's commandTimeoutMs)
 * and output bound (the sandbox's maxOutputBytes). Returns 0 or -1 with err set.
 */
int exec_spec_from_js(napi_env env, napi_value options, sandbox_t *sb, exec_spec_t *spec, err_t *err);
/* native.prepareExec(sandbox, options) -> token (through the runtime table). */
napi_value exec_prepare(napi_env env, sandbox_t *sb, napi_value *argv, size_t argc);

#endif
