/*
 * checks.c - the argument checks the original's validators make, shared by the runtime
 * operations and the lifecycle (see checks.h).
 */
#include "napi/checks.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "napi/args.h"
#include "napi/convert.h"
#include "napi/values.h"
#include "codec/names.h"
#include "engine/exec_task.h"

int check_sandbox_id(napi_env env, napi_value v, err_t *err) {
  char *s = nu_strdup(env, v);
  size_t len = 0;
  if (s) napi_get_value_string_utf8(env, v, NULL, 0, &len);
  int ok = s != NULL && strlen(s) == len && spec_id_valid(s);
  free(s);
  if (!ok) return err_type(err, "Sandbox id must be 1-63 lowercase letters, numbers, dots, underscores, or hyphens.");
  return 0;
}

int check_nonempty_string(napi_env env, napi_value v, const char *name, err_t *err) {
  if (!nu_is_nonempty_string(env, v)) return err_type(err, "%s must be a non-empty string.", name);
  return 0;
}

int check_positive_safe_integer(napi_env env, napi_value v, const char *name, int64_t *out, err_t *err) {
  int64_t x = 0;
  if (!nu_safe_integer(env, v, &x) || x <= 0) return err_range(err, "%s must be a positive safe integer.", name);
  if (out) *out = x;
  return 0;
}

int check_nonnegative_safe_integer(napi_env env, napi_value v, const char *name, int64_t *out, err_t *err) {
  int64_t x = 0;
  if (!nu_safe_integer(env, v, &x) || x < 0) return err_range(err, "%s must be a non-negative safe integer.", name);
  if (out) *out = x;
  return 0;
}

static int env_key_valid(const char *k) {
  if (!((k[0] >= 'A' && k[0] <= 'Z') || (k[0] >= 'a' && k[0] <= 'z') || k[0] == '_')) return 0;
  for (const char *p = k + 1; *p; p++) {
    char c = *p;
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return 0;
  }
  return 1;
}

/* Where the entry with key `k` lands in {...base, ...record}: its place in base, else after
 * base and the record's earlier keys that base lacks (`fresh` of them). */
static size_t merged_place(const kv_list_t *base, const char *k, size_t *fresh) {
  for (size_t i = 0; i < base->count; i++)
    if (strcmp(base->items[i].key, k) == 0) return i;
  return base->count + (*fresh)++;
}

int check_string_record(napi_env env, napi_value v, const char *name, kv_list_t *out, nul_hit_t *hit, err_t *err) {
  memset(out, 0, sizeof(*out));
  if (nu_is_undefined(env, v)) return 0;
  if (!nu_is_record(env, v)) return err_type(err, "%s must be an object.", name);
  nu_keys_t keys;
  if (nu_keys(env, v, &keys) != 0) return err_oom(err);
  if (keys.count > 0) {
    out->items = calloc(keys.count, sizeof(kv_t));
    if (out->items == NULL) return err_oom(err);
  }
  size_t fresh = 0;
  for (uint32_t i = 0; i < keys.count; i++) {
    napi_value key = nu_key_at(env, &keys, i);
    size_t klen = 0, vlen = 0;
    char *k = nu_strdup_len(env, key, &klen);
    napi_value item;
    napi_get_property(env, v, key, &item);
    if (k == NULL) goto oom;
    if (nu_typeof(env, item) != napi_string) {
      err_type(err, "%s.%s must be a string.", name, k);
      free(k);
      goto fail;
    }
    /* A NUL is no letter, digit or underscore: such a name is invalid as a whole. */
    if (strcmp(name, "env") == 0 && (!env_key_valid(k) || strlen(k) != klen)) {
      err_type(err, "Invalid environment variable name: %s", k);
      free(k);
      goto fail;
    }
    out->items[out->count].key = k;
    out->items[out->count].value = nu_strdup_len(env, item, &vlen);
    out->count++;
    if (out->items[out->count - 1].value == NULL) goto oom;
    if (hit != NULL) {
      size_t place = hit->base ? merged_place(hit->base, k, &fresh) : i;
      if (strlen(k) != klen || strlen(out->items[out->count - 1].value) != vlen)
        args_nul_hit_note(hit, place, key, item);
    }
  }
  return 0;
oom:
  err_oom(err);
fail:
  kv_list_free(out);
  return -1;
}

int check_env_not_reserved(const kv_list_t *env, err_t *err) {
  for (size_t i = 0; i < env->count; i++)
    if (strcmp(env->items[i].key, EXEC_MARKER_ENV) == 0)
      return err_type(err, "Environment variable is reserved: %s", EXEC_MARKER_ENV);
  return 0;
}
