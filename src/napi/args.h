/*
 * args.h - reading the arguments of the runtime's native.prepareX(sandbox, options, ...)
 * calls once runtime_ops.c has found the sandbox: the options object (the original's
 * "options must be an object."), sandbox paths and string arrays, with the original's
 * messages.
 *
 * Owns: nothing; strings and arrays returned are the caller's.
 */
#ifndef SBX_ARGS_H
#define SBX_ARGS_H

#include <node_api.h>

#include "base/err.h"
#include "sandbox/sandbox.h"

/* The options object of a runtime entry's (sandbox, options, ...) (runtime_ops.h), or
 * NULL with the original's TypeError "options must be an object." pending. */
napi_value args_options(napi_env env, napi_value *argv);
/* normalizeSandboxPath(value, { allowRoot }) of a JS value, NULs kept, within the bounds of
 * a path argument (sandbox_path_argument); a non-string is a TypeError "<name> must be a
 * string.". */
char *args_sandbox_path(napi_env env, napi_value v, const char *name, int allow_root, err_t *err);
/* undefined (nothing) or an array of strings, copied; else "args must contain only strings.". */
int args_string_array(napi_env env, napi_value v, char ***out, size_t *count, err_t *err);
void args_string_array_free(char **list, size_t count);

#endif
