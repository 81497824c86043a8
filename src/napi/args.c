/*
 * args.c - argument reading for the runtime's native calls (see args.h).
 */
#include "napi/args.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uchar.h>

#include "napi/convert.h"
#include "napi/jsenv.h"
#include "napi/values.h"
#include "codec/paths.h"

napi_value args_options(napi_env env, napi_value *argv) {
  if (nu_is_record(env, argv[1])) return argv[1];
  err_t err = ERR_INIT;
  err_type(&err, "options must be an object.");
  convert_throw_err(jsenv_get(env), &err);
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
  char *n = paths_argument(raw, len, allow_root, err);
  free(raw);
  return n;
}

void args_string_array_free(char **list, size_t count) {
  if (list == NULL) return;
  for (size_t i = 0; i < count; i++) free(list[i]);
  free(list);
}

void args_nul_hit_note(nul_hit_t *hit, size_t index, napi_value key, napi_value value) {
  if (hit == NULL || (hit->found && hit->index <= index)) return;
  hit->found = 1;
  hit->index = index;
  hit->key = key;
  hit->value = value;
}

int args_has_nul(napi_env env, napi_value v) {
  size_t len = 0;
  char *s = nu_strdup_len(env, v, &len);
  int has = s != NULL && strlen(s) != len;
  free(s);
  return has;
}

void args_argv_nul_note(napi_env env, argv_nul_t *n, size_t pos, napi_value value) {
  if (value == NULL || (n->found && n->pos <= pos) || !args_has_nul(env, value)) return;
  n->found = 1;
  n->pos = pos;
  n->value = value;
}

/* `${key}=${value}` in UTF-16, so the string is exactly the original's (lone surrogates
 * included). NULL when out of memory. */
static napi_value env_pair(napi_env env, napi_value key, napi_value value) {
  size_t klen = 0, vlen = 0;
  if (napi_get_value_string_utf16(env, key, NULL, 0, &klen) != napi_ok ||
      napi_get_value_string_utf16(env, value, NULL, 0, &vlen) != napi_ok)
    return NULL;
  char16_t *buf = malloc((klen + 1 + vlen + 1) * sizeof(char16_t));
  if (buf == NULL) return NULL;
  napi_get_value_string_utf16(env, key, buf, klen + 1, &klen);
  buf[klen] = u'=';
  napi_get_value_string_utf16(env, value, buf + klen + 1, vlen + 1, &vlen);
  napi_value pair = NULL;
  if (napi_create_string_utf16(env, buf, klen + 1 + vlen, &pair) != napi_ok) pair = NULL;
  free(buf);
  return pair;
}

void args_argv_nul_note_hit(napi_env env, argv_nul_t *n, size_t pos, const nul_hit_t *hit) {
  if (!hit->found || (n->found && n->pos <= pos)) return;
  napi_value arg = hit->key ? env_pair(env, hit->key, hit->value) : hit->value;
  if (arg == NULL) return; /* out of memory: the pair is not made, nor the error */
  n->found = 1;
  n->pos = pos;
  n->value = arg;
}

napi_value args_argv_nul_error(napi_env env, const argv_nul_t *n, err_t *err) {
  jsenv_t *js = jsenv_get(env);
  napi_value fn = NULL, result = NULL;
  if (js->null_byte_error) napi_get_reference_value(env, js->null_byte_error, &fn);
  if (fn != NULL) {
    napi_value argv[2] = {nu_number(env, (double)n->pos), n->value}, recv;
    napi_get_undefined(env, &recv);
    if (napi_call_function(env, recv, fn, 2, argv, &result) != napi_ok) {
      napi_value ignored;
      napi_get_and_clear_last_exception(env, &ignored);
      result = NULL;
    }
  }
  if (result == NULL) {
    /* No builder (a binary loaded without the shim): Node's code and message, without
     * the received value. */
    char msg[128];
    snprintf(msg, sizeof(msg), "The argument 'args[%zu]' must be a string without null bytes.", n->pos);
    if (napi_create_type_error(env, nu_string(env, "ERR_INVALID_ARG_VALUE"), nu_string(env, msg), &result) != napi_ok)
      result = NULL;
  }
  if (result == NULL) err_oom(err);
  return result;
}

int args_string_array(napi_env env, napi_value v, char ***out, size_t *count, nul_hit_t *hit, err_t *err) {
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
    size_t len = 0;
    list[i] = nu_strdup_len(env, item, &len);
    if (list[i] == NULL) {
      args_string_array_free(list, i);
      return err_oom(err);
    }
    if (strlen(list[i]) != len) args_nul_hit_note(hit, i, NULL, item);
  }
  *out = list;
  *count = n;
  return 0;
}
