/*
 * exec_op.h - exec and execStream on the engine path: the original's exec options read
 * into an exec task's spec, and the operation that runs the task for JavaScript.
 */
#ifndef SBX_EXEC_OP_H
#define SBX_EXEC_OP_H

#include <node_api.h>
#include <stddef.h>

#include "base/err.h"
#include "engine/exec_task.h"
#include "napi/op.h"
#include "sandbox/sandbox.h"

/*
 * Reads the original's exec options (validateExecOptions, same order and messages) into
 * a spec for `sb`: workdir from cwd, env, timeout (default: the sandbox's commandTimeoutMs)
 * and output bound (the sandbox's maxOutputBytes). Returns 0 or -1 with err set. On 0,
 * *late is NULL or the error the operation must fail with once started (op_fail_at_start):
 * Node's TypeError for the first argument of the original's `docker exec` holding a NUL.
 */
int exec_spec_from_js(napi_env env, napi_value options, sandbox_t *sb, exec_spec_t *spec, napi_value *late,
                      err_t *err);
/* The engine's exec operation for a spec read already (taken: *spec is left empty); not
 * yet a token (for op_delegate, or op_prepared). NULL when out of memory. */
op_t *exec_engine_op(jsenv_t *js, sandbox_t *sb, exec_spec_t *spec);
/* native.prepareExec(sandbox, options) -> token (through the runtime table). */
napi_value exec_prepare(napi_env env, sandbox_t *sb, napi_value *argv);

#endif
