/*
 * args.c - argument reading for the runtime's native calls (see args.h).
 */
#include "napi/args.h"

#include <stdlib.h>

#include "napi/convert.h"
#include "napi/jsenv.h"
#include "napi/values.h"
#include "codec/paths.h"

napi_value args_options(napi_env env, napi_value *argv) {
  if (nu_is_record(env, argv[1])) return argv[1];
  err_t err;
  err_init(&err);
  err_type(&err, "options must be an object.");
  nu_throw_err(jsenv_get(env), &err);
  return NULL;
}

char *args_sandbox_path(napi_env env, napi_value v, const char *name, int allow_root, err_t *err) {
  if (nu_typeof(env, v) != napi_string) {
    err_type(err, "%s must be a string.", name);
    return NULL;
  }
  size_t len = 0;
  napi_get_value_string_utf8(env, v, NULL, 0, &len);
  char *raw = malloc(len + 1);
  if (raw == NULL) {
    err_oom(err);
    return NULL;
  }
  napi_get_value_string_utf8(env, v, raw, len + 1, &len);
  char *n = sandbox_path_argument(raw, len, allow_root, err);
  free(raw);
  return n;
}

void args_string_array_free(char **list, size_t count) {
  if (list == NULL) return;
  for (size_t i = 0; i < count; i++) free(list[i]);
  free(list);
}

int args_string_array(napi_env env, napi_value v, char ***out, size_t *count, err_t *err) {
  *out = NULL;
  *count = 0;
  if (nu_is_undefined(env, v)) return 0;
  uint32_t n = 0;
  int ok = nu_is_array(env, v);
  if (ok) napi_get_array_length(env, v, &n);
  for (uint32_t i = 0; ok && i < n; i++) {
    napi_value item;
    napi_get_element(env, v, i, &item);
    if (nu_typeof(env, item) != napi_string) ok = 0;
  }
  if (!ok) return err_type(err, "args must contain only strings.");
  char **list = calloc(n ? n : 1, sizeof(char *));
  if (list == NULL) return err_oom(err);
  for (uint32_t i = 0; i < n; i++) {
    napi_value item;
    napi_get_element(env, v, i, &item);
    list[i] = nu_strdup(env, item);
    if (list[i] == NULL) {
      args_string_array_free(list, i);
      return err_oom(err);
    }
  }
  *out = list;
  *count = n;
  return 0;
}
