/*
 * token.h - the native objects JavaScript holds (a client, a sandbox, an operation) as
 * type-tagged externals (napi_type_tag_object), so a token of one kind passed where
 * another is expected is refused with a TypeError instead of being read as the wrong
 * struct.
 *
 * Owns: nothing; the pointer inside a token is owned as its creator says (its finalizer).
 */
#ifndef SBX_TOKEN_H
#define SBX_TOKEN_H

#include <node_api.h>

typedef enum token_kind { TOKEN_CLIENT = 0, TOKEN_SANDBOX, TOKEN_OP, TOKEN_KINDS } token_kind_t;

/* An external holding `ptr`, tagged as `kind`; `finalize` runs when it is collected.
 * NULL with an exception pending on failure (then `finalize` is not called). */
napi_value token_wrap(napi_env env, token_kind_t kind, void *ptr, napi_finalize finalize);
/* The pointer in a token of `kind`, or NULL with a TypeError pending ("Expected a ..."). */
void *token_unwrap(napi_env env, napi_value value, token_kind_t kind);
/* A call of (token[, options]): the pointer in its first argument's token of `kind` and,
 * when `options` is not NULL, its second argument (undefined when not passed). NULL with
 * an exception pending. */
void *token_call(napi_env env, napi_callback_info info, token_kind_t kind, napi_value *options);

#endif
