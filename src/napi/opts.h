/*
 * opts.h - createSandbox options: read from JavaScript, validated exactly as the
 * original's validateCreateOptions (same order, classes and messages), and copied into a
 * plain C snapshot that the rest of the lifecycle uses.
 *
 * Owns: nothing beyond what it returns: the create_opts_t it fills (codec/spec.h) is the
 * caller's. Reading the options is the only place the caller's objects are touched, so
 * later changes to them cannot reach a sandbox being created.
 */
#ifndef SBX_OPTS_H
#define SBX_OPTS_H

#include <node_api.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "codec/spec.h"
#include "napi/args.h"

/*
 * Reads and validates; returns 0, or -1 with err set (nothing to free then). *late is
 * then NULL, or an error the operation must fail with once started, before any I/O
 * (op_fail_at_start): what the original found only when it began, in its order.
 */
int create_opts_read(napi_env env, napi_value options, create_opts_t *out, napi_value *late, err_t *err);
/* copyStringRecord(value, name): undefined -> empty. `hit` (optional) learns the first
 * entry holding a NUL byte in its key or value (napi/args.h). */
int read_string_record(napi_env env, napi_value v, const char *name, kv_list_t *out, nul_hit_t *hit, err_t *err);
/*
 * An env (exec's, startProcess's, createSandbox's) must not set ANVIA_SANDBOX_EXEC_ID
 * (EXEC_MARKER_ENV, engine/exec.h): every command runs with it set to its own id, and its
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
