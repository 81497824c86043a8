/*
 * exports_codec.c - N-API wrappers exposing the frame demultiplexer (frames.c), the tar
 * codec (tar.c) and the container user lookup (userspec.c) to the unit tests. Compiled
 * only into the debug and asan builds (ANVIA_TEST_EXPORTS, binding.gyp): the release
 * binary has none of them.
 *
 * Owns: the temporaries of one call (argument copies, the output buffer until it is
 * handed to a Uint8Array). These functions are synchronous and test-facing; the
 * runtime operations use the C functions directly.
 *
 *   demuxFrames(chunks[, { stopAfter }]) -> { events: [{ stream, data }], stops,
 *                                             error?: { message, code }, finishError? }
 *   tarBuild([{ path, isDir, data?, mode, uid, gid, mtime }]) -> Uint8Array
 *   tarPeek(bytes) -> null | { name, kind, size }
 *   tarReadFile(bytes, name, maxBytes, displayPath) -> Uint8Array (throws DockerSandboxError)
 *   userspecResolve(spec, passwdText | null, groupText | null) -> { uid, gid }
 *   buildStreamRender(chunks) -> { output: Uint8Array,
 *                                             imageId: string | null, error?: { message, code } }
 *   buildHumanSize(bytes) -> string
 */
#include <node_api.h>
#include <stdlib.h>
#include <string.h>


#include "base/buf.h"
#include "base/err.h"
#include "codec/buildmsg.h"
#include "codec/frames.h"
#include "napi/exports.h"

#include "napi/convert.h"
#include "napi/jsenv.h"
#include "napi/values.h"
#include "codec/tar.h"
#include "codec/userspec.h"

#ifdef ANVIA_TEST_EXPORTS /* the unit tests' natives: debug and asan builds only */

static napi_value throw_type(napi_env env, const char *msg) {
  napi_throw_type_error(env, NULL, msg);
  return NULL;
}

static napi_value err_object(napi_env env, err_t *err) {
  napi_value o;
  if (napi_create_object(env, &o) != napi_ok) return NULL;
  napi_set_named_property(env, o, "message", nu_string(env, err->message));
  napi_set_named_property(env, o, "code", nu_string(env, err->code ? err->code : ""));
  return o;
}

/* ---- demuxFrames ------------------------------------------------------------------- */

typedef struct demux_ctx {
  napi_env env;
  napi_value events;
  uint32_t count;
  int64_t stop_after; /* ask to stop after every this many events (0: never) */
  int failed;
} demux_ctx_t;

static int on_frame(void *ud, int stream, const uint8_t *data, size_t len) {
  demux_ctx_t *c = ud;
  napi_value ev;
  if (napi_create_object(c->env, &ev) != napi_ok) goto fail;
  napi_value bytes = nu_uint8array(c->env, data, len);
  if (bytes == NULL) goto fail;
  if (napi_set_named_property(c->env, ev, "stream", nu_number(c->env, stream)) != napi_ok ||
      napi_set_named_property(c->env, ev, "data", bytes) != napi_ok ||
      napi_set_element(c->env, c->events, c->count++, ev) != napi_ok)
    goto fail;
  return c->stop_after > 0 && (int64_t)c->count % c->stop_after == 0;
fail:
  c->failed = 1;
  return 1;
}

static napi_value js_demux_frames(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  NU_CALL(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 1 || !nu_is_array(env, argv[0])) return throw_type(env, "demuxFrames expects an array of Uint8Array.");
  demux_ctx_t c = {env, NULL, 0, 0, 0};
  if (argc > 1 && nu_is_record(env, argv[1])) {
    int64_t v;
    if (nu_safe_integer(env, nu_get(env, argv[1], "stopAfter"), &v) && v > 0) c.stop_after = v;
  }
  NU_CALL(env, napi_create_array(env, &c.events));
  napi_value result;
  NU_CALL(env, napi_create_object(env, &result));
  uint32_t n = 0, stops = 0;
  NU_CALL(env, napi_get_array_length(env, argv[0], &n));
  frame_demux_t d;
  frame_demux_init(&d);
  err_t err = ERR_INIT;
  int failed = 0;
  for (uint32_t i = 0; i < n && !failed; i++) {
    napi_value chunk;
    uint8_t *data;
    size_t len;
    NU_CALL(env, napi_get_element(env, argv[0], i, &chunk));
    if (!nu_uint8array_view(env, chunk, &data, &len)) return throw_type(env, "demuxFrames chunks must be Uint8Array.");
    size_t off = 0;
    /* A stop request leaves the rest of the chunk unconsumed: feed it again, as a
     * caller that paused for back-pressure would once it resumes. */
    for (;;) {
      size_t used = 0;
      int r = frame_demux_feed(&d, data + off, len - off, &used, on_frame, &c, &err);
      if (c.failed) return nu_throw_status(env, "demuxFrames event");
      if (used > len - off) return throw_type(env, "demuxFrames: consumed more than was fed.");
      off += used;
      if (r < 0) {
        napi_set_named_property(env, result, "error", err_object(env, &err));
        err_clear(&err);
        failed = 1;
        break;
      }
      if (r == 1) {
        stops++;
        continue;
      }
      if (off != len) return throw_type(env, "demuxFrames: feed returned without consuming its input.");
      break;
    }
  }
  if (!failed && frame_demux_finish(&d, &err) != 0) {
    napi_set_named_property(env, result, "finishError", err_object(env, &err));
    err_clear(&err);
  }
  NU_CALL(env, napi_set_named_property(env, result, "events", c.events));
  NU_CALL(env, napi_set_named_property(env, result, "stops", nu_number(env, stops)));
  return result;
}

/* ---- tarBuild ---------------------------------------------------------------------- */

static int read_u32(napi_env env, napi_value obj, const char *name, uint32_t *out) {
  int64_t v;
  if (!nu_safe_integer(env, nu_get(env, obj, name), &v) || v < 0 || v > 0xffffffffLL) return 0;
  *out = (uint32_t)v;
  return 1;
}

static napi_value js_tar_build(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  NU_CALL(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 1 || !nu_is_array(env, argv[0])) return throw_type(env, "tarBuild expects an array of entries.");
  uint32_t n = 0;
  NU_CALL(env, napi_get_array_length(env, argv[0], &n));
  napi_value ret = NULL;
  tar_entry_spec_t *specs = calloc(n ? n : 1, sizeof(*specs));
  buf_t out;
  buf_init(&out, 0);
  err_t err = ERR_INIT;
  if (specs == NULL) {
    err_oom(&err);
    ret = convert_throw_err(jsenv_get(env), &err);
    goto done;
  }
  for (uint32_t i = 0; i < n; i++) {
    napi_value o;
    if (napi_get_element(env, argv[0], i, &o) != napi_ok || !nu_is_record(env, o)) {
      throw_type(env, "tarBuild entries must be objects.");
      goto done;
    }
    tar_entry_spec_t *s = &specs[i];
    char *path = nu_strdup(env, nu_get(env, o, "path"));
    if (path == NULL) {
      throw_type(env, "tarBuild entry path must be a string.");
      goto done;
    }
    s->path = path;
    bool is_dir = false;
    napi_get_value_bool(env, nu_get(env, o, "isDir"), &is_dir);
    s->is_dir = is_dir;
    uint32_t mode;
    int64_t mtime;
    if (!read_u32(env, o, "mode", &mode) || !read_u32(env, o, "uid", &s->uid) ||
        !read_u32(env, o, "gid", &s->gid) || !nu_safe_integer(env, nu_get(env, o, "mtime"), &mtime)) {
      throw_type(env, "tarBuild entry mode, uid, gid and mtime must be integers.");
      goto done;
    }
    s->mode = mode;
    s->mtime = (time_t)mtime;
    napi_value data = nu_get(env, o, "data");
    if (!s->is_dir && !nu_is_undefined(env, data)) {
      uint8_t *p;
      if (!nu_uint8array_view(env, data, &p, &s->len)) {
        throw_type(env, "tarBuild entry data must be a Uint8Array.");
        goto done;
      }
      s->data = p;
    }
  }
  if (tar_build(specs, n, &out, &err) != 0) {
    convert_throw_err(jsenv_get(env), &err);
    goto done;
  }
  ret = convert_bytes(jsenv_get(env), &out);
done:
  if (specs)
    for (uint32_t i = 0; i < n; i++) free((char *)specs[i].path);
  free(specs);
  buf_free(&out);
  err_clear(&err);
  return ret;
}

/* ---- tarPeek / tarReadFile --------------------------------------------------------- */

static const char *kind_name(tar_kind_t k) {
  switch (k) {
    case TAR_KIND_FILE:
      return "file";
    case TAR_KIND_DIRECTORY:
      return "directory";
    case TAR_KIND_SYMLINK:
      return "symlink";
    default:
      return "other";
  }
}

static napi_value js_tar_peek(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  NU_CALL(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  uint8_t *data;
  size_t len;
  if (argc < 1 || !nu_uint8array_view(env, argv[0], &data, &len)) return throw_type(env, "tarPeek expects a Uint8Array.");
  tar_header_info_t hi;
  err_t err = ERR_INIT;
  int r = tar_peek(data, len, &hi, &err);
  if (r < 0) return convert_throw_err(jsenv_get(env), &err);
  if (r == 0) return nu_null(env);
  napi_value o;
  NU_CALL(env, napi_create_object(env, &o));
  NU_CALL(env, napi_set_named_property(env, o, "name", nu_string(env, hi.name)));
  NU_CALL(env, napi_set_named_property(env, o, "kind", nu_string(env, kind_name(hi.kind))));
  NU_CALL(env, napi_set_named_property(env, o, "size", nu_number(env, (double)hi.size)));
  return o;
}

static napi_value js_tar_read_file(napi_env env, napi_callback_info info) {
  size_t argc = 4;
  napi_value argv[4];
  NU_CALL(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  uint8_t *data;
  size_t len;
  double max;
  if (argc < 4 || !nu_uint8array_view(env, argv[0], &data, &len) || nu_typeof(env, argv[1]) != napi_string ||
      !nu_integer(env, argv[2], &max) || max < 0 || nu_typeof(env, argv[3]) != napi_string)
    return throw_type(env, "tarReadFile expects (Uint8Array, name, maxBytes, displayPath).");
  napi_value ret = NULL;
  char *name = nu_strdup(env, argv[1]);
  char *display = nu_strdup(env, argv[3]);
  buf_t out;
  buf_init(&out, 0);
  err_t err = ERR_INIT;
  if (name == NULL || display == NULL) {
    err_oom(&err);
    convert_throw_err(jsenv_get(env), &err);
    goto done;
  }
  uint64_t max_bytes = max >= 18446744073709551615.0 ? UINT64_MAX : (uint64_t)max;
  if (tar_read_file(data, len, name, max_bytes, display, &out, &err) != 0) {
    convert_throw_err(jsenv_get(env), &err);
    goto done;
  }
  ret = convert_bytes(jsenv_get(env), &out);
done:
  free(name);
  free(display);
  buf_free(&out);
  err_clear(&err);
  return ret;
}

/* ---- userspecResolve --------------------------------------------------------------- */

static napi_value js_userspec_resolve(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  NU_CALL(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 1 || nu_typeof(env, argv[0]) != napi_string)
    return throw_type(env, "userspecResolve expects (spec, passwd | null, group | null).");
  napi_value ret = NULL;
  char *spec = nu_strdup(env, argv[0]);
  char *passwd = argc > 1 ? nu_strdup(env, argv[1]) : NULL;
  char *group = argc > 2 ? nu_strdup(env, argv[2]) : NULL;
  err_t err = ERR_INIT;
  uint32_t uid = 0, gid = 0;
  if (spec == NULL) {
    err_oom(&err);
    convert_throw_err(jsenv_get(env), &err);
    goto done;
  }
  if (userspec_resolve(spec, passwd, passwd ? strlen(passwd) : 0, group, group ? strlen(group) : 0, &uid, &gid,
                       &err) != 0) {
    convert_throw_err(jsenv_get(env), &err);
    goto done;
  }
  napi_value o;
  if (napi_create_object(env, &o) != napi_ok) goto done;
  napi_set_named_property(env, o, "uid", nu_number(env, uid));
  napi_set_named_property(env, o, "gid", nu_number(env, gid));
  ret = o;
done:
  free(spec);
  free(passwd);
  free(group);
  err_clear(&err);
  return ret;
}

/* ---- buildStreamRender, buildHumanSize ---------------------------------------------- */

static napi_value js_build_stream_render(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  NU_CALL(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 1 || !nu_is_array(env, argv[0])) return throw_type(env, "buildStreamRender expects an array of Uint8Array.");
  build_stream_t s;
  build_stream_init(&s);
  buf_t out;
  buf_init(&out, 0);
  uint32_t n = 0;
  napi_get_array_length(env, argv[0], &n);
  int rc = 0;
  for (uint32_t i = 0; i < n && rc == 0; i++) {
    napi_value chunk;
    uint8_t *data;
    size_t len;
    napi_get_element(env, argv[0], i, &chunk);
    if (!nu_uint8array_view(env, chunk, &data, &len)) {
      build_stream_free(&s);
      buf_free(&out);
      return throw_type(env, "buildStreamRender chunks must be Uint8Array.");
    }
    rc = build_stream_feed(&s, data, len, &out);
  }
  if (rc == 0) rc = build_stream_finish(&s, &out);
  napi_value result = NULL;
  err_t err = ERR_INIT;
  if (rc == 0 && napi_create_object(env, &result) == napi_ok) {
    napi_set_named_property(env, result, "output", nu_uint8array(env, out.data, out.len));
    napi_set_named_property(env, result, "imageId", s.image_id ? nu_string(env, s.image_id) : nu_null(env));
    if (build_stream_failure(&s, &err) != 0) napi_set_named_property(env, result, "error", err_object(env, &err));
    err_clear(&err);
  } else if (rc != 0) {
    napi_throw_error(env, NULL, "buildStreamRender: out of memory");
  }
  build_stream_free(&s);
  buf_free(&out);
  return result;
}

static napi_value js_build_human_size(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  NU_CALL(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  double v = 0;
  if (argc < 1 || !nu_number_value(env, argv[0], &v)) return throw_type(env, "buildHumanSize expects a number.");
  char text[32];
  build_human_size(v, text);
  return nu_string(env, text);
}

void exports_codec_register(napi_env env, napi_value exports) {
  napi_property_descriptor fns[] = {
      {"demuxFrames", NULL, js_demux_frames, NULL, NULL, NULL, napi_default, NULL},
      {"tarBuild", NULL, js_tar_build, NULL, NULL, NULL, napi_default, NULL},
      {"tarPeek", NULL, js_tar_peek, NULL, NULL, NULL, napi_default, NULL},
      {"tarReadFile", NULL, js_tar_read_file, NULL, NULL, NULL, napi_default, NULL},
      {"userspecResolve", NULL, js_userspec_resolve, NULL, NULL, NULL, napi_default, NULL},
      {"buildStreamRender", NULL, js_build_stream_render, NULL, NULL, NULL, napi_default, NULL},
      {"buildHumanSize", NULL, js_build_human_size, NULL, NULL, NULL, napi_default, NULL},
  };
  napi_define_properties(env, exports, sizeof(fns) / sizeof(fns[0]), fns);
}

#endif
