/*
 * values.h - the N-API boilerplate in one place: reading option values the way the
 * original's JavaScript checks read them (isRecord, Number.isSafeInteger, instanceof
 * Uint8Array, Object.entries), throwing, and converting values both ways.
 *
 * Owns: nothing; strings returned by nu_strdup are the caller's.
 */
#ifndef SBX_NAPI_UTIL_H
#define SBX_NAPI_UTIL_H

#include <jansson.h>
#include <node_api.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

#define NU_CALL(env, call)                                    \
  do {                                                        \
    if ((call) != napi_ok) return nu_throw_status(env, #call); \
  } while (0)

napi_value nu_throw_status(napi_env env, const char *what);
/*
 * Reads a call's arguments into argv[0..n-1], undefined where fewer were passed: the
 * number passed (at most n), or -1 with a JavaScript exception pending.
 */
int nu_args(napi_env env, napi_callback_info info, napi_value *argv, size_t n);

napi_value nu_undefined(napi_env env);
napi_value nu_null(napi_env env);
napi_value nu_bool(napi_env env, int v);
napi_value nu_number(napi_env env, double v);
napi_value nu_string(napi_env env, const char *s);
napi_value nu_string_n(napi_env env, const char *s, size_t n);
/* A fresh Uint8Array holding a copy of the bytes. */
napi_value nu_uint8array(napi_env env, const uint8_t *data, size_t len);
/* A fresh Uint8Array that takes ownership of `data` (malloc'd); freed by the GC. */
napi_value nu_uint8array_take(napi_env env, uint8_t *data, size_t len);

napi_valuetype nu_typeof(napi_env env, napi_value v);
int nu_is_undefined(napi_env env, napi_value v);
/* typeof v === "object" && v !== null && !Array.isArray(v) */
int nu_is_record(napi_env env, napi_value v);
int nu_is_array(napi_env env, napi_value v);
/* The property value, or undefined when `obj` is not an object. */
napi_value nu_get(napi_env env, napi_value obj, const char *name);
/* name in obj (own or inherited). */
int nu_has(napi_env env, napi_value obj, const char *name);
/* A malloc'd UTF-8 copy when v is a string, NULL otherwise. */
char *nu_strdup(napi_env env, napi_value v);
/* nu_strdup, with the UTF-8 byte length in *len (the copy may hold NULs before it). */
char *nu_strdup_len(napi_env env, napi_value v, size_t *len);
/* 1 when typeof v === "string" && v.length > 0. */
int nu_is_nonempty_string(napi_env env, napi_value v);
/* Number.isSafeInteger(v); stores the value. */
int nu_safe_integer(napi_env env, napi_value v, int64_t *out);
/* Number.isInteger(v). */
int nu_integer(napi_env env, napi_value v, double *out);
/* typeof number; stores it. */
int nu_number_value(napi_env env, napi_value v, double *out);
/* v instanceof Uint8Array (Buffer included); exposes its bytes. */
int nu_uint8array_view(napi_env env, napi_value v, uint8_t **data, size_t *len);
/* Own enumerable string keys in Object.keys order; caller releases with nu_keys_free. */
typedef struct nu_keys {
  napi_value array;
  uint32_t count;
} nu_keys_t;
int nu_keys(napi_env env, napi_value obj, nu_keys_t *keys);
napi_value nu_key_at(napi_env env, nu_keys_t *keys, uint32_t i);
/* String(value) for messages, malloc'd. */
char *nu_to_display(napi_env env, napi_value v);

/* new AggregateError(errors, message) */
napi_value nu_aggregate_error(napi_env env, napi_value *errors, size_t count, const char *message);
/* jansson value -> JS value. */
napi_value nu_from_json(napi_env env, json_t *j);

#endif
