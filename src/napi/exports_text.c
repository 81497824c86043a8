/*
 * exports_text.c - N-API wrappers exposing the pure path, text page and listing
 * functions (paths.c, textpage.c, findparse.c) to the unit tests, compiled only into the
 * debug and asan builds (ANVIA_TEST_EXPORTS, binding.gyp), never into the release binary.
 * One of them is the package's own and is in every build: lib/tools.js normalizes every
 * tool path with normalizeSandboxPath and the sandbox's workdir.
 *
 * Owns: nothing beyond each call; every C string read from JavaScript and every result
 * buffer is freed before the wrapper returns.
 *
 * Strings are read with their byte length, so a JavaScript string holding "\0" reaches
 * the C functions whole, as it reaches Node's path functions.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#include "codec/findparse.h"
#include "napi/exports.h"

#include "napi/convert.h"
#include "napi/jsenv.h"
#include "napi/values.h"
#include "codec/paths.h"
#include "codec/textpage.h"

#ifdef ANVIA_TEST_EXPORTS /* the unit tests' natives: debug and asan builds only */
/* Any non-NULL pointer for an empty byte view (N-API may report NULL for length 0). */
static const uint8_t no_bytes[1] = {0};
#endif

/* The one out-of-memory error (base/err.h), thrown. */
static napi_value oom(napi_env env) {
  err_t err = ERR_INIT;
  err_oom(&err);
  return convert_throw_err(jsenv_get(env), &err);
}

static int get_args(napi_env env, napi_callback_info info, size_t want, napi_value *argv) {
  size_t argc = want;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok) return -1;
  for (size_t i = argc; i < want; i++) argv[i] = nu_undefined(env);
  return 0;
}

/* A malloc'd UTF-8 copy of a string argument and its byte length; throws a TypeError. */
static char *arg_string(napi_env env, napi_value v, const char *fn, size_t *len) {
  if (nu_typeof(env, v) != napi_string) {
    char msg[128];
    snprintf(msg, sizeof(msg), "%s expects string arguments.", fn);
    napi_throw_type_error(env, NULL, msg);
    return NULL;
  }
  size_t n = 0;
  if (napi_get_value_string_utf8(env, v, NULL, 0, &n) != napi_ok) return NULL;
  char *s = malloc(n + 1);
  if (s == NULL) {
    oom(env);
    return NULL;
  }
  napi_get_value_string_utf8(env, v, s, n + 1, &n);
  *len = n;
  return s;
}

#ifdef ANVIA_TEST_EXPORTS /* the unit tests' natives: debug and asan builds only */
static int arg_bytes(napi_env env, napi_value v, const char *fn, const uint8_t **data, size_t *len) {
  uint8_t *p = NULL;
  if (!nu_uint8array_view(env, v, &p, len)) {
    char msg[128];
    snprintf(msg, sizeof(msg), "%s expects a Uint8Array.", fn);
    napi_throw_type_error(env, NULL, msg);
    return -1;
  }
  *data = p != NULL ? p : no_bytes;
  return 0;
}


/* The string `r` (length n) as a JS value, then frees it. */
#endif

static napi_value take_string(napi_env env, char *r, size_t n) {
  if (r == NULL) return oom(env);
  napi_value v = nu_string_n(env, r, n);
  free(r);
  return v;
}

#ifdef ANVIA_TEST_EXPORTS /* the unit tests' natives: debug and asan builds only */
typedef char *(*unary_fn)(const char *, size_t, size_t *);
typedef char *(*binary_fn)(const char *, size_t, const char *, size_t, size_t *);

static napi_value call_unary(napi_env env, napi_callback_info info, const char *name, unary_fn fn) {
  napi_value argv[1];
  size_t len = 0, out = 0;
  if (get_args(env, info, 1, argv) < 0) return nu_throw_status(env, name);
  char *s = arg_string(env, argv[0], name, &len);
  if (s == NULL) return NULL;
  char *r = fn(s, len, &out);
  free(s);
  return take_string(env, r, out);
}

static napi_value call_binary(napi_env env, napi_callback_info info, const char *name, binary_fn fn) {
  napi_value argv[2];
  size_t alen = 0, blen = 0, out = 0;
  if (get_args(env, info, 2, argv) < 0) return nu_throw_status(env, name);
  char *a = arg_string(env, argv[0], name, &alen);
  if (a == NULL) return NULL;
  char *b = arg_string(env, argv[1], name, &blen);
  if (b == NULL) {
    free(a);
    return NULL;
  }
  char *r = fn(a, alen, b, blen, &out);
  free(a);
  free(b);
  return take_string(env, r, out);
}

static napi_value js_posix_normalize(napi_env env, napi_callback_info info) {
  return call_unary(env, info, "posixNormalize", posix_normalize_n);
}

static napi_value js_posix_dirname(napi_env env, napi_callback_info info) {
  return call_unary(env, info, "posixDirname", posix_dirname_n);
}

static napi_value js_posix_join(napi_env env, napi_callback_info info) {
  return call_binary(env, info, "posixJoin", posix_join_n);
}

static napi_value js_posix_relative(napi_env env, napi_callback_info info) {
  return call_binary(env, info, "posixRelative", posix_relative_n);
}

static napi_value js_posix_is_absolute(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  size_t len = 0;
  if (get_args(env, info, 1, argv) < 0) return nu_throw_status(env, "posixIsAbsolute");
  char *s = arg_string(env, argv[0], "posixIsAbsolute", &len);
  if (s == NULL) return NULL;
  int r = posix_is_absolute(s);
  free(s);
  return nu_bool(env, r);
}

#endif

/*
 * normalizeSandboxPath(input, allowRoot, workdir?): allowRoot counts only when it is `true`.
 * A string workdir is upstream's `{ workdir }` (absolute paths inside it are accepted, made
 * relative); anything else is no workdir, the runtime's rule (relative only).
 */
static napi_value js_normalize_sandbox_path(napi_env env, napi_callback_info info) {
  napi_value argv[3];
  size_t len = 0, wlen = 0;
  if (get_args(env, info, 3, argv) < 0) return nu_throw_status(env, "normalizeSandboxPath");
  char *s = arg_string(env, argv[0], "normalizeSandboxPath", &len);
  if (s == NULL) return NULL;
  bool allow_root = false;
  if (nu_typeof(env, argv[1]) == napi_boolean) napi_get_value_bool(env, argv[1], &allow_root);
  char *workdir = NULL;
  if (nu_typeof(env, argv[2]) == napi_string) {
    workdir = arg_string(env, argv[2], "normalizeSandboxPath", &wlen);
    if (workdir == NULL) {
      free(s);
      return NULL;
    }
  }
  err_t err = ERR_INIT;
  char *r = paths_normalize_in(s, len, allow_root, workdir, wlen, &err);
  free(s);
  free(workdir);
  if (r == NULL) return convert_throw_err(jsenv_get(env), &err);
  return take_string(env, r, strlen(r));
}

#ifdef ANVIA_TEST_EXPORTS /* the unit tests' natives: debug and asan builds only */
static napi_value js_parent_sandbox_path(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  size_t len = 0;
  if (get_args(env, info, 1, argv) < 0) return nu_throw_status(env, "parentSandboxPath");
  char *s = arg_string(env, argv[0], "parentSandboxPath", &len);
  if (s == NULL) return NULL;
  err_t err = ERR_INIT;
  char *r = NULL;
  /* The C form takes a C string: a NUL inside must reach the null-byte check first. */
  if (memchr(s, '\0', len) != NULL) {
    free(paths_normalize(s, len, 0, &err)); /* always fails: sets err */
  } else {
    r = paths_parent(s, &err);
  }
  free(s);
  if (r == NULL) return convert_throw_err(jsenv_get(env), &err);
  return take_string(env, r, strlen(r));
}

static napi_value js_container_path(napi_env env, napi_callback_info info) {
  napi_value argv[2];
  size_t wlen = 0, rlen = 0;
  if (get_args(env, info, 2, argv) < 0) return nu_throw_status(env, "containerPath");
  char *workdir = arg_string(env, argv[0], "containerPath", &wlen);
  if (workdir == NULL) return NULL;
  char *rel = arg_string(env, argv[1], "containerPath", &rlen);
  if (rel == NULL) {
    free(workdir);
    return NULL;
  }
  err_t err = ERR_INIT;
  char *r = NULL;
  if (memchr(rel, '\0', rlen) != NULL) {
    free(paths_normalize(rel, rlen, 1, &err)); /* always fails: sets err */
  } else {
    r = paths_container(workdir, rel, &err);
  }
  free(workdir);
  free(rel);
  if (r == NULL) return convert_throw_err(jsenv_get(env), &err);
  return take_string(env, r, strlen(r));
}

static int arg_positive(napi_env env, napi_value v, const char *what, uint64_t *out) {
  int64_t n = 0;
  if (!nu_safe_integer(env, v, &n) || n <= 0) {
    char msg[128];
    snprintf(msg, sizeof(msg), "textPage %s must be a positive safe integer.", what);
    napi_throw_range_error(env, NULL, msg);
    return -1;
  }
  *out = (uint64_t)n;
  return 0;
}


/* textPage(bytes, startLine, lineCount, maxBytes) -> the page object of createTextFilePage. */
static napi_value js_text_page(napi_env env, napi_callback_info info) {
  napi_value argv[4];
  const uint8_t *data = NULL;
  size_t len = 0;
  uint64_t start_line, line_count, max_bytes;
  if (get_args(env, info, 4, argv) < 0) return nu_throw_status(env, "textPage");
  if (arg_bytes(env, argv[0], "textPage", &data, &len) < 0) return NULL;
  if (arg_positive(env, argv[1], "startLine", &start_line) < 0) return NULL;
  if (arg_positive(env, argv[2], "lineCount", &line_count) < 0) return NULL;
  if (arg_positive(env, argv[3], "maxBytes", &max_bytes) < 0) return NULL;
  text_page_t page;
  text_page(data, len, start_line, line_count, max_bytes, &page);
  return convert_text_page(env, &page);
}

static napi_value js_utf8_valid(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  const uint8_t *data = NULL;
  size_t len = 0;
  if (get_args(env, info, 1, argv) < 0) return nu_throw_status(env, "utf8Valid");
  if (arg_bytes(env, argv[0], "utf8Valid", &data, &len) < 0) return NULL;
  return nu_bool(env, utf8_valid(data, len));
}

static napi_value js_utf8_bom_len(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  const uint8_t *data = NULL;
  size_t len = 0;
  if (get_args(env, info, 1, argv) < 0) return nu_throw_status(env, "utf8BomLength");
  if (arg_bytes(env, argv[0], "utf8BomLength", &data, &len) < 0) return NULL;
  return nu_number(env, (double)utf8_bom_len(data, len));
}

static napi_value entries_to_js(napi_env env, list_entries_t *entries) {
  napi_value arr;
  if (napi_create_array_with_length(env, entries->count, &arr) != napi_ok) return NULL;
  for (size_t i = 0; i < entries->count; i++) {
    list_entry_t *e = &entries->items[i];
    napi_value o;
    if (napi_create_object(env, &o) != napi_ok) return NULL;
    if (napi_set_named_property(env, o, "path", nu_string(env, e->path)) != napi_ok) return NULL;
    if (napi_set_named_property(env, o, "type", nu_string(env, file_type_name(e->type))) != napi_ok) return NULL;
    if (e->has_size && napi_set_named_property(env, o, "size", nu_number(env, (double)e->size)) != napi_ok)
      return NULL;
    if (napi_set_element(env, arr, (uint32_t)i, o) != napi_ok) return NULL;
  }
  return arr;
}

/* parseListing(bytes, workdir) -> [{ path, type[, size] }], or throws as the original. */
static napi_value js_parse_listing(napi_env env, napi_callback_info info) {
  napi_value argv[2];
  const uint8_t *data = NULL;
  size_t len = 0, wlen = 0;
  if (get_args(env, info, 2, argv) < 0) return nu_throw_status(env, "parseListing");
  if (arg_bytes(env, argv[0], "parseListing", &data, &len) < 0) return NULL;
  char *workdir = arg_string(env, argv[1], "parseListing", &wlen);
  if (workdir == NULL) return NULL;
  list_entries_t entries;
  err_t err = ERR_INIT;
  int rc = list_parse(data, len, workdir, &entries, &err);
  free(workdir);
  if (rc < 0) return convert_throw_err(jsenv_get(env), &err);
  napi_value arr = entries_to_js(env, &entries);
  list_entries_free(&entries);
  if (arr == NULL) return nu_throw_status(env, "parseListing result");
  return arr;
}

/* jsNumberSize(str): Number(str) when it is a safe integer >= 0, else undefined. */
static napi_value js_number_size_fn(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  size_t len = 0;
  if (get_args(env, info, 1, argv) < 0) return nu_throw_status(env, "jsNumberSize");
  char *s = arg_string(env, argv[0], "jsNumberSize", &len);
  if (s == NULL) return NULL;
  uint64_t n = 0;
  int ok = js_number_size(s, len, &n);
  free(s);
  return ok ? nu_number(env, (double)n) : nu_undefined(env);
}

#endif

void exports_text_register(napi_env env, napi_value exports) {
  napi_property_descriptor fns[] = {
      {"normalizeSandboxPath", NULL, js_normalize_sandbox_path, NULL, NULL, NULL, napi_default, NULL},
#ifdef ANVIA_TEST_EXPORTS
      {"posixNormalize", NULL, js_posix_normalize, NULL, NULL, NULL, napi_default, NULL},
      {"posixJoin", NULL, js_posix_join, NULL, NULL, NULL, napi_default, NULL},
      {"posixDirname", NULL, js_posix_dirname, NULL, NULL, NULL, napi_default, NULL},
      {"posixRelative", NULL, js_posix_relative, NULL, NULL, NULL, napi_default, NULL},
      {"posixIsAbsolute", NULL, js_posix_is_absolute, NULL, NULL, NULL, napi_default, NULL},
      {"containerPath", NULL, js_container_path, NULL, NULL, NULL, napi_default, NULL},
      {"parentSandboxPath", NULL, js_parent_sandbox_path, NULL, NULL, NULL, napi_default, NULL},
      {"textPage", NULL, js_text_page, NULL, NULL, NULL, napi_default, NULL},
      {"utf8Valid", NULL, js_utf8_valid, NULL, NULL, NULL, napi_default, NULL},
      {"utf8BomLength", NULL, js_utf8_bom_len, NULL, NULL, NULL, napi_default, NULL},
      {"parseListing", NULL, js_parse_listing, NULL, NULL, NULL, napi_default, NULL},
      {"jsNumberSize", NULL, js_number_size_fn, NULL, NULL, NULL, napi_default, NULL},
#endif
  };
  napi_define_properties(env, exports, sizeof(fns) / sizeof(fns[0]), fns);
}
