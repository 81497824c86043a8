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
#include "codec/spec.h"
#include "sandbox/sandbox.h"

/* The options object of a runtime entry's (sandbox, options, ...) (runtime_ops.h), or
 * NULL with the original's TypeError "options must be an object." pending. */
napi_value args_options(napi_env env, napi_value *argv);
/* normalizeSandboxPath(value, { allowRoot }) of a JS value, NULs kept, within the bounds of
 * a path argument (paths_argument); a non-string is a TypeError "<name> must be a
 * string.". */
char *args_sandbox_path(napi_env env, napi_value v, const char *name, int allow_root, err_t *err);
/*
 * Where strings read from JavaScript held a NUL byte: the first one, as the JavaScript
 * string itself (valid while the native call runs). For a record merged under `base`
 * ({...base, ...record}, as startProcess's env under the sandbox's), `index` is the
 * entry's place in the merged record, and the first is the first in that order.
 */
typedef struct nul_hit {
  const kv_list_t *base; /* in, optional */
  int found;
  size_t index;     /* the array item's index, the record entry's place */
  napi_value key;   /* a record entry's key (NULL for an array item) */
  napi_value value; /* the item, or the entry's value */
} nul_hit_t;
void args_nul_hit_note(nul_hit_t *hit, size_t index, napi_value key, napi_value value);

/* undefined (nothing) or an array of strings, copied; else "args must contain only
 * strings.". `hit` (optional) learns the first item holding a NUL byte. */
int args_string_array(napi_env env, napi_value v, char ***out, size_t *count, nul_hit_t *hit, err_t *err);
void args_string_array_free(char **list, size_t count);

/*
 * The original handed commands, their arguments, env pairs, labels and the user to the
 * docker CLI as one argument array, and Node's spawn refused any argument holding a NUL
 * byte with its own TypeError naming the argument's position (it never ran). Here the
 * same arguments reach the engine as JSON strings, where a NUL would cut them short, so
 * the same error is raised instead: an argv_nul_t finds the argument the original's
 * spawn would have stopped at (the lowest position holding a NUL) as the arguments are
 * read; args_argv_nul_error builds the error (lib/errors.js's nullByteArgumentError, handed to
 * native.init), to be raised where the original raised it (op_fail_at_start).
 */
typedef struct argv_nul {
  int found;
  size_t pos;       /* in the original's docker argument array */
  napi_value value; /* that argument, as a JavaScript string */
} argv_nul_t;
/* Keeps (pos, value) when value holds a NUL and comes before what was kept. */
void args_argv_nul_note(napi_env env, argv_nul_t *n, size_t pos, napi_value value);
/* The same for a hit: its value, or `${key}=${value}` for a record entry, at `pos`. */
void args_argv_nul_note_hit(napi_env env, argv_nul_t *n, size_t pos, const nul_hit_t *hit);
/* Node's TypeError for n's argument; NULL (and err set) when out of memory. */
napi_value args_argv_nul_error(napi_env env, const argv_nul_t *n, err_t *err);
/* Whether a JavaScript string holds a NUL (0 for any other value). */
int args_has_nul(napi_env env, napi_value v);

#endif
