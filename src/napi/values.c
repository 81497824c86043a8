/*
 * values.c - N-API helpers (see values.h).
 */
#include "napi/values.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


napi_value nu_throw_status(napi_env env, const char *what) {
  const napi_extended_error_info *info = NULL;
  napi_get_last_error_info(env, &info);
  bool pending = false;
  napi_is_exception_pending(env, &pending);
  if (!pending) {
    char msg[512];
    snprintf(msg, sizeof(msg), "Native call failed: %s (%s)", what,
             info && info->error_message ? info->error_message : "unknown");
    napi_throw_error(env, NULL, msg);
  }
  return NULL;
}

int nu_args(napi_env env, napi_callback_info info, napi_value *argv, size_t n) {
  size_t argc = n;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok) {
    nu_throw_status(env, "napi_get_cb_info");
    return -1;
  }
  if (argc > n) argc = n;
  for (size_t i = argc; i < n; i++) argv[i] = nu_undefined(env);
  return (int)argc;
}

napi_value nu_undefined(napi_env env) {
  napi_value v;
  napi_get_undefined(env, &v);
  return v;
}

napi_value nu_null(napi_env env) {
  napi_value v;
  napi_get_null(env, &v);
  return v;
}

napi_value nu_bool(napi_env env, int b) {
  napi_value v;
  napi_get_boolean(env, b != 0, &v);
  return v;
}

napi_value nu_number(napi_env env, double d) {
  napi_value v;
  napi_create_double(env, d, &v);
  return v;
}

napi_value nu_string(napi_env env, const char *s) {
  napi_value v;
  napi_create_string_utf8(env, s ? s : "", NAPI_AUTO_LENGTH, &v);
  return v;
}

napi_value nu_string_n(napi_env env, const char *s, size_t n) {
  napi_value v;
  napi_create_string_utf8(env, s ? s : "", s ? n : 0, &v);
  return v;
}

/* Frees a malloc'd pointer held by an external or array buffer. */
static void nu_finalize_free(napi_env env, void *data, void *hint) {
  (void)env;
  (void)hint;
  free(data);
}

napi_value nu_uint8array(napi_env env, const uint8_t *data, size_t len) {
  void *dst = NULL;
  napi_value ab, arr;
  if (napi_create_arraybuffer(env, len, &dst, &ab) != napi_ok) return NULL;
  if (len > 0) memcpy(dst, data, len);
  if (napi_create_typedarray(env, napi_uint8_array, len, ab, 0, &arr) != napi_ok) return NULL;
  return arr;
}

napi_value nu_uint8array_take(napi_env env, uint8_t *data, size_t len) {
  if (data == NULL || len == 0) {
    free(data);
    return nu_uint8array(env, NULL, 0);
  }
  napi_value ab, arr;
  if (napi_create_external_arraybuffer(env, data, len, nu_finalize_free, NULL, &ab) != napi_ok) {
    /* Some runtimes refuse external buffers: fall back to a copy. */
    napi_value copy = nu_uint8array(env, data, len);
    free(data);
    return copy;
  }
  if (napi_create_typedarray(env, napi_uint8_array, len, ab, 0, &arr) != napi_ok) return NULL;
  return arr;
}

napi_valuetype nu_typeof(napi_env env, napi_value v) {
  napi_valuetype t = napi_undefined;
  if (v != NULL) napi_typeof(env, v, &t);
  return t;
}

int nu_is_undefined(napi_env env, napi_value v) { return v == NULL || nu_typeof(env, v) == napi_undefined; }

int nu_is_array(napi_env env, napi_value v) {
  bool is = false;
  if (v != NULL) napi_is_array(env, v, &is);
  return is;
}

int nu_is_record(napi_env env, napi_value v) {
  napi_valuetype t = nu_typeof(env, v);
  if (t != napi_object) return 0;
  return !nu_is_array(env, v);
}

napi_value nu_get(napi_env env, napi_value obj, const char *name) {
  napi_valuetype t = nu_typeof(env, obj);
  if (t != napi_object && t != napi_function) return nu_undefined(env);
  napi_value v;
  if (napi_get_named_property(env, obj, name, &v) != napi_ok) return nu_undefined(env);
  return v;
}

int nu_has(napi_env env, napi_value obj, const char *name) {
  napi_valuetype t = nu_typeof(env, obj);
  if (t != napi_object && t != napi_function) return 0;
  bool has = false;
  napi_has_named_property(env, obj, name, &has);
  return has;
}

char *nu_strdup(napi_env env, napi_value v) {
  size_t len = 0;
  return nu_strdup_len(env, v, &len);
}

char *nu_strdup_len(napi_env env, napi_value v, size_t *len) {
  *len = 0;
  if (nu_typeof(env, v) != napi_string) return NULL;
  if (napi_get_value_string_utf8(env, v, NULL, 0, len) != napi_ok) return NULL;
  char *s = malloc(*len + 1);
  if (s == NULL) return NULL;
  napi_get_value_string_utf8(env, v, s, *len + 1, len);
  return s;
}

int nu_is_nonempty_string(napi_env env, napi_value v) {
  if (nu_typeof(env, v) != napi_string) return 0;
  size_t len = 0;
  napi_get_value_string_utf16(env, v, NULL, 0, &len);
  return len > 0;
}

int nu_number_value(napi_env env, napi_value v, double *out) {
  if (nu_typeof(env, v) != napi_number) return 0;
  double d = 0;
  napi_get_value_double(env, v, &d);
  if (out) *out = d;
  return 1;
}

int nu_integer(napi_env env, napi_value v, double *out) {
  double d;
  if (!nu_number_value(env, v, &d)) return 0;
  if (!isfinite(d) || floor(d) != d) return 0;
  if (out) *out = d;
  return 1;
}

int nu_safe_integer(napi_env env, napi_value v, int64_t *out) {
  double d;
  if (!nu_integer(env, v, &d)) return 0;
  if (fabs(d) > 9007199254740991.0) return 0;
  if (out) *out = (int64_t)d;
  return 1;
}

int nu_uint8array_view(napi_env env, napi_value v, uint8_t **data, size_t *len) {
  bool is = false;
  if (nu_typeof(env, v) != napi_object) return 0;
  napi_is_typedarray(env, v, &is);
  if (!is) return 0;
  napi_typedarray_type type;
  size_t length = 0, offset = 0;
  void *ptr = NULL;
  napi_value ab;
  if (napi_get_typedarray_info(env, v, &type, &length, &ptr, &ab, &offset) != napi_ok) return 0;
  if (type != napi_uint8_array) return 0;
  if (data) *data = ptr;
  if (len) *len = length;
  return 1;
}

int nu_keys(napi_env env, napi_value obj, nu_keys_t *keys) {
  keys->count = 0;
  keys->array = NULL;
  if (napi_get_all_property_names(env, obj, napi_key_own_only,
                                  (napi_key_filter)(napi_key_enumerable | napi_key_skip_symbols),
                                  napi_key_numbers_to_strings, &keys->array) != napi_ok)
    return -1;
  napi_get_array_length(env, keys->array, &keys->count);
  return 0;
}

napi_value nu_key_at(napi_env env, nu_keys_t *keys, uint32_t i) {
  napi_value v;
  if (napi_get_element(env, keys->array, i, &v) != napi_ok) return nu_undefined(env);
  return v;
}

char *nu_to_display(napi_env env, napi_value v) {
  napi_value s;
  if (napi_coerce_to_string(env, v, &s) != napi_ok) {
    bool pending = false;
    napi_is_exception_pending(env, &pending);
    if (pending) {
      napi_value ex;
      napi_get_and_clear_last_exception(env, &ex);
    }
    return strdup("[value]");
  }
  char *out = nu_strdup(env, s);
  return out ? out : strdup("");
}

napi_value nu_aggregate_error(napi_env env, napi_value *errors, size_t count, const char *message) {
  napi_value global, ctor, arr, result = NULL;
  napi_get_global(env, &global);
  ctor = nu_get(env, global, "AggregateError");
  napi_create_array_with_length(env, count, &arr);
  for (size_t i = 0; i < count; i++) napi_set_element(env, arr, (uint32_t)i, errors[i]);
  napi_value argv[2] = {arr, nu_string(env, message)};
  if (napi_new_instance(env, ctor, 2, argv, &result) != napi_ok) return NULL;
  return result;
}

napi_value nu_from_json(napi_env env, json_t *j) {
  napi_value v = NULL;
  switch (json_typeof(j)) {
    case JSON_OBJECT: {
      napi_create_object(env, &v);
      const char *key;
      json_t *value;
      json_object_foreach(j, key, value) { napi_set_named_property(env, v, key, nu_from_json(env, value)); }
      return v;
    }
    case JSON_ARRAY: {
      napi_create_array_with_length(env, json_array_size(j), &v);
      for (size_t i = 0; i < json_array_size(j); i++)
        napi_set_element(env, v, (uint32_t)i, nu_from_json(env, json_array_get(j, i)));
      return v;
    }
    case JSON_STRING:
      return nu_string_n(env, json_string_value(j), json_string_length(j));
    case JSON_INTEGER:
      return nu_number(env, (double)json_integer_value(j));
    case JSON_REAL:
      return nu_number(env, json_real_value(j));
    case JSON_TRUE:
      return nu_bool(env, 1);
    case JSON_FALSE:
      return nu_bool(env, 0);
    default:
      return nu_null(env);
  }
}
