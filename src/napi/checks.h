/*
 * checks.h - the checks the original's validators make on arguments (assertSandboxId,
 * assertNonEmptyString, the safe-integer checks, copyStringRecord, the reserved
 * environment name), with the original's classes and messages; the runtime operations
 * and the lifecycle both use them.
 *
 * Owns: nothing beyond what it returns (a kv_list_t read is the caller's).
 */
#ifndef SBX_CHECKS_H
#define SBX_CHECKS_H

#include <node_api.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "codec/spec.h"
#include "napi/args.h"

/* copyStringRecord(value, name): undefined -> empty. `hit` (optional) learns the first
 * entry holding a NUL byte in its key or value (napi/args.h). */
int check_string_record(napi_env env, napi_value v, const char *name, kv_list_t *out, nul_hit_t *hit, err_t *err);
/*
 * An env (exec's, startProcess's, createSandbox's) must not set ANVIA_SANDBOX_EXEC_ID
 * (EXEC_MARKER_ENV, engine/exec_task.h): every command runs with it set to its own id, and its
 * timeout or abort ends the processes carrying that id. A TypeError "Environment variable
 * is reserved: ANVIA_SANDBOX_EXEC_ID", as the original's "Docker label is reserved: ...".
 */
int check_env_not_reserved(const kv_list_t *env, err_t *err);
/* assertSandboxId: a TypeError unless v is a string matching the pattern. */
int check_sandbox_id(napi_env env, napi_value v, err_t *err);
/* assertNonEmptyString(value, name) */
int check_nonempty_string(napi_env env, napi_value v, const char *name, err_t *err);
int check_positive_safe_integer(napi_env env, napi_value v, const char *name, int64_t *out, err_t *err);
int check_nonnegative_safe_integer(napi_env env, napi_value v, const char *name, int64_t *out, err_t *err);

#endif
