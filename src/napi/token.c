/*
 * token.c - type-tagged externals (see token.h).
 */
#include "napi/token.h"

#include "napi/values.h"

/* One random 128-bit tag per kind (fixed: tags only need to differ from each other and
 * from other addons' tags). */
static const napi_type_tag TAGS[TOKEN_KINDS] = {
    [TOKEN_CLIENT] = {0x6a1f3c2e9b7d4a01ULL, 0x8c5e2f1d0b3a9e71ULL},
    [TOKEN_SANDBOX] = {0x2d9b8e4f1c6a7d02ULL, 0x4f7a1e9c3b5d8e62ULL},
    [TOKEN_OP] = {0x91c4e7a2b3d5f603ULL, 0x1e8d6c4b2a9f7e53ULL},
};

static const char *const EXPECTED[TOKEN_KINDS] = {
    [TOKEN_CLIENT] = "Expected a DockerSandboxClient.",
    [TOKEN_SANDBOX] = "Expected a sandbox handle.",
    [TOKEN_OP] = "Expected an operation token.",
};

napi_value token_wrap(napi_env env, token_kind_t kind, void *ptr, napi_finalize finalize) {
  napi_value ext;
  if (napi_create_external(env, ptr, NULL, NULL, &ext) != napi_ok) return NULL;
  if (napi_type_tag_object(env, ext, &TAGS[kind]) != napi_ok) return NULL;
  /* The finalizer is attached last, so a failure above never runs it. */
  if (finalize != NULL && napi_add_finalizer(env, ext, ptr, finalize, NULL, NULL) != napi_ok) return NULL;
  return ext;
}

void *token_unwrap(napi_env env, napi_value value, token_kind_t kind) {
  napi_valuetype t = napi_undefined;
  bool tagged = false;
  void *ptr = NULL;
  if (value != NULL && napi_typeof(env, value, &t) == napi_ok && t == napi_external &&
      napi_check_object_type_tag(env, value, &TAGS[kind], &tagged) == napi_ok && tagged &&
      napi_get_value_external(env, value, &ptr) == napi_ok && ptr != NULL)
    return ptr;
  napi_throw_type_error(env, NULL, EXPECTED[kind]);
  return NULL;
}

void *token_call(napi_env env, napi_callback_info info, token_kind_t kind, napi_value *options) {
  napi_value argv[2];
  if (nu_args(env, info, argv, 2) < 0) return NULL;
  if (options != NULL) *options = argv[1];
  return token_unwrap(env, argv[0], kind);
}
