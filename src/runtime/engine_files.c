/*
 * engine_files.c - writeFile/writeTextFile and readFile over the archive endpoints, with no
 * host temp file and no exec:
 *  - write: the path's ancestors are looked at (ancestry.c); one archive carrying the
 *    missing directories and the file, owned by the sandbox user, is uploaded to the
 *    deepest directory that exists. A symbolic link on the way is refused.
 *  - read: the download's path stat header is checked as soon as it arrives (a symlink,
 *    directory or special file is invalid_path, a file over maxFileBytes is
 *    file_too_large, and the transfer stops there), then the archive's first header as
 *    soon as it is in (tar_peek); the archive is read with libarchive and must hold
 *    exactly that one regular file. Ancestors are checked at the same time,
 *    so a link in the middle of the path cannot make a read leave the workspace.
 * That is for a root sandbox user, for whom the engine's root is no more than the user's
 * own. Any other user's reads and writes go through files_user.c instead, as that user.
 *
 * Owns: each operation owns its path, its data, its requests and the archive.
 */
#include "runtime/engine_files.h"

#include <stdlib.h>
#include <string.h>

#include "codec/userspec.h"
#include "runtime/ancestry.h"
#include "runtime/files_user.h"
#include "napi/args.h"

#include "napi/convert.h"
#include "napi/values.h"
#include "napi/op.h"
#include "napi/checks.h"
#include "sandbox/owner.h"
#include "codec/paths.h"
#include "codec/pathstat.h"
#include "codec/tar.h"
#include "codec/textpage.h"
#include "codec/upload.h"

/* Room for the tar headers (pax records included) around the file's bytes. */
#define ARCHIVE_OVERHEAD (64 * 1024)

/* The last component of a normalized path, without trailing slashes. */
static char *base_name(const char *rel) {
  size_t n = strlen(rel);
  while (n > 0 && rel[n - 1] == '/') n--;
  size_t start = n;
  while (start > 0 && rel[start - 1] != '/') start--;
  return strndup(rel + start, n - start);
}

/* ================= write ================= */

typedef struct write_op {
  op_t op;
  char *path; /* normalized, no trailing slash */
  uint8_t *data;
  size_t len;
  owner_task_t *owner;
  ancestry_t *anc;
  http_req_t *req;
  ancestry_result_t anc_result;
  int have_owner, have_ancestry;
  err_t upload_err; /* the engine's refusal, while the target is looked at (on_uploaded) */
} write_op_t;

static void write_finish(write_op_t *op, err_t *err) { op_settle(&op->op, err); }

/* The upload was refused and the target was looked at (HEAD of its archive path): an
 * existing directory there is said so, whatever words the engine refused with (Docker:
 * "cannot overwrite directory", Podman: its copier's "file exists"); anything else is
 * the engine's own error. */
static void on_target_probed(http_req_t *req, void *ud) {
  write_op_t *op = ud;
  op->req = NULL;
  path_stat_t st;
  int is_dir = 0;
  if (http_req_ok(req) && req->path_stat != NULL && path_stat_decode(req->path_stat, &st) == 0) {
    is_dir = st.kind == PS_DIRECTORY;
    path_stat_free(&st);
  }
  http_req_free(req);
  err_t err = ERR_INIT;
  if (is_dir) {
    err_sandbox(&err, CODE_DOCKER_COMMAND_FAILED, "Sandbox path names a directory, not a file: %s", op->path);
    json_t *d = json_pack("{s:s}", "path", op->path);
    json_t *engine = op->upload_err.details;
    if (d != NULL && engine != NULL) {
      json_object_set(d, "statusCode", json_object_get(engine, "statusCode"));
      json_object_set(d, "message", json_object_get(engine, "message"));
    }
    err_set_details(&err, d);
    err_clear(&op->upload_err);
  } else {
    err_move(&err, &op->upload_err);
  }
  write_finish(op, &err);
  err_clear(&err);
}

static void on_uploaded(http_req_t *req, void *ud) {
  write_op_t *op = ud;
  op->req = NULL;
  err_t err = ERR_INIT;
  if (!http_req_ok(req)) {
    http_req_error(req, &err);
    /* The engine answered with an error: is the target an existing directory? */
    char *name = http_req_status(req) >= 400 ? url_escape(op->op.sb->container_name) : NULL;
    err_t perr = ERR_INIT;
    char *target = name ? paths_container(op->op.sb->workdir, op->path, &perr) : NULL;
    err_clear(&perr);
    char *etarget = target ? url_escape(target) : NULL;
    op->req = etarget ? http_req_new(op->op.sb->eng, "HEAD", "/containers/%s/archive?path=%s", name, etarget) : NULL;
    free(name);
    free(target);
    free(etarget);
    if (op->req != NULL) {
      err_move(&op->upload_err, &err);
      err_t serr = ERR_INIT;
      if (http_req_start(op->req, on_target_probed, op, &serr) == 0) {
        http_req_free(req);
        return;
      }
      err_clear(&serr);
      http_req_free(op->req);
      op->req = NULL;
      err_move(&err, &op->upload_err);
    }
  }
  http_req_free(req);
  write_finish(op, &err);
  err_clear(&err);
}

static void upload(write_op_t *op) {
  sandbox_t *s = op->op.sb;
  err_t err = ERR_INIT;
  const ancestry_result_t *r = &op->anc_result;
  if (r->blocked) {
    char **anc = NULL;
    size_t n = 0;
    path_ancestors(op->path, &anc, &n);
    const char *what = anc && r->blocked_index < n ? anc[r->blocked_index] : op->path;
    if (r->blocked_kind == PS_SYMLINK)
      err_sandbox(&err, CODE_INVALID_PATH, "Sandbox path passes through a symbolic link: %s", what);
    else
      err_sandbox(&err, CODE_DOCKER_COMMAND_FAILED, "Unable to create sandbox directory.");
    err_set_details(&err, json_pack("{s:s, s:s}", "path", op->path, "blocking", what));
    path_ancestors_free(anc, n);
    write_finish(op, &err);
    err_clear(&err);
    return;
  }
  /* Upload to the deepest existing ancestor; the archive carries the rest. */
  char **anc = NULL;
  size_t n = 0;
  if (path_ancestors(op->path, &anc, &n) != 0) goto oom;
  const char *base_rel = r->existing > 0 ? anc[r->existing - 1] : ".";
  size_t skip = r->existing > 0 ? strlen(base_rel) + 1 : 0;
  char *target = paths_container(s->workdir, base_rel, &err);
  upload_plan_t plan;
  upload_plan_init(&plan, s->uid, s->gid);
  int rc = target ? 0 : -1;
  for (size_t i = r->existing; rc == 0 && i < n; i++) rc = upload_add_dir(&plan, anc[i] + skip, 0);
  if (rc == 0) rc = upload_add_file(&plan, op->path + skip, op->data, op->len, 0);
  buf_t tarball;
  buf_init(&tarball, 0);
  if (rc == 0) rc = upload_build(&plan, &tarball, &err);
  upload_plan_free(&plan);
  path_ancestors_free(anc, n);
  char *name = url_escape(s->container_name);
  char *etarget = target ? url_escape(target) : NULL;
  free(target);
  if (rc == 0 && name && etarget)
    op->req = http_req_new(s->eng, "PUT", "/containers/%s/archive?path=%s&noOverwriteDirNonDir=true", name, etarget);
  free(name);
  free(etarget);
  if (op->req == NULL || http_req_take_body(op->req, &tarball, "application/x-tar") != 0) {
    buf_free(&tarball);
    http_req_free(op->req);
    op->req = NULL;
    if (err_is_set(&err)) {
      write_finish(op, &err);
      err_clear(&err);
      return;
    }
    goto oom;
  }
  free(op->data); /* the archive holds its own copy now */
  op->data = NULL;
  if (http_req_start(op->req, on_uploaded, op, &err) != 0) {
    http_req_free(op->req);
    op->req = NULL;
    write_finish(op, &err);
    err_clear(&err);
  }
  return;
oom:
  err_oom(&err);
  write_finish(op, &err);
  err_clear(&err);
}

static void write_maybe_upload(write_op_t *op) {
  if (op->have_owner && op->have_ancestry) upload(op);
}

static void on_write_owner(void *ud, err_t *err) {
  write_op_t *op = ud;
  op->owner = NULL;
  if (err != NULL) {
    ancestry_cancel(op->anc);
    op->anc = NULL;
    write_finish(op, err);
    return;
  }
  op->have_owner = 1;
  write_maybe_upload(op);
}

static void on_write_ancestry(void *ud, const ancestry_result_t *r, err_t *err) {
  write_op_t *op = ud;
  op->anc = NULL;
  if (err != NULL) {
    owner_cancel(op->owner);
    op->owner = NULL;
    write_finish(op, err);
    return;
  }
  op->anc_result = *r;
  op->have_ancestry = 1;
  write_maybe_upload(op);
}

static void write_start(op_t *o) {
  write_op_t *op = (write_op_t *)o;
  err_t err = ERR_INIT;
  int rc = owner_ensure(op->op.sb, on_write_owner, op, &op->owner, &err);
  if (rc < 0) goto fail;
  op->have_owner = rc == 1;
  rc = ancestry_start(op->op.sb, op->path, on_write_ancestry, op, &op->anc, &op->anc_result, &err);
  if (rc < 0) {
    owner_cancel(op->owner);
    op->owner = NULL;
    goto fail;
  }
  op->have_ancestry = rc == 1;
  write_maybe_upload(op);
  return;
fail:
  write_finish(op, &err);
  err_clear(&err);
}

static void write_stop(op_t *o) {
  write_op_t *op = (write_op_t *)o;
  owner_cancel(op->owner);
  op->owner = NULL;
  ancestry_cancel(op->anc);
  op->anc = NULL;
  http_req_free(op->req);
  op->req = NULL;
}

static void write_destroy(op_t *o) {
  write_op_t *op = (write_op_t *)o;
  owner_cancel(op->owner);
  ancestry_cancel(op->anc);
  http_req_free(op->req);
  err_clear(&op->upload_err);
  free(op->path);
  free(op->data);
}

static const op_vtable_t write_vt = {.name = "writeFile",
    .start = write_start, .stop = write_stop, .destroy = write_destroy};

/* The bytes to write, copied at once: options.data.slice() in the original, before the
 * path is read (a getter on `path` may transfer or detach the data's buffer). For text,
 * the string's UTF-8 (TextEncoder). NULL with err set. */
static uint8_t *take_content(napi_env env, napi_value options, int is_text, size_t *len, err_t *err) {
  napi_value content = nu_get(env, options, is_text ? "text" : "data");
  uint8_t *view = NULL, *copy = NULL;
  *len = 0;
  if (is_text) {
    if (nu_typeof(env, content) != napi_string) {
      err_type(err, "text must be a string.");
      return NULL;
    }
    napi_get_value_string_utf8(env, content, NULL, 0, len);
  } else if (!nu_uint8array_view(env, content, &view, len)) {
    err_type(err, "data must be a Uint8Array.");
    return NULL;
  }
  copy = malloc(*len + 1);
  if (copy == NULL) {
    err_oom(err);
    return NULL;
  }
  if (is_text) napi_get_value_string_utf8(env, content, (char *)copy, *len + 1, len);
  else if (*len > 0) memcpy(copy, view, *len);
  return copy;
}

int files_parse_write(napi_env env, sandbox_t *sb, napi_value *argv, file_write_req_t *req, err_t *err) {
  memset(req, 0, sizeof(*req));
  napi_value options = argv[1]; /* checked to be an object by the caller (args_options) */
  bool is_text = false;
  napi_get_value_bool(env, argv[2], &is_text);
  req->data = take_content(env, options, is_text, &req->len, err);
  if (req->data == NULL) return -1;
  req->path = args_sandbox_path(env, nu_get(env, options, "path"), "path", 0, err);
  if (req->path == NULL) goto fail;
  if (req->path[strlen(req->path) - 1] == '/') {
    /* "name/" is a directory: no file is written there (the original's copy failed too). */
    err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, "Sandbox path names a directory, not a file: %s", req->path);
    goto fail;
  }
  if ((uint64_t)req->len > (uint64_t)sb->runtime.max_file_bytes) {
    err_sandbox(err, CODE_FILE_TOO_LARGE, "Sandbox file exceeds maxFileBytes (%zu > %lld): %s", req->len,
                (long long)sb->runtime.max_file_bytes, req->path);
    goto fail;
  }
  return 0;
fail:
  file_write_req_free(req);
  return -1;
}


op_t *files_engine_write_op(jsenv_t *js, sandbox_t *sb, file_write_req_t *req) {
  /* A user who is not root writes as itself (files_user.c): the engine would write as
   * root and follow links the user planted. */
  if (!user_is_root(sb->user)) return files_user_write_op(js, sb, req);
  write_op_t *op = op_new(js, &write_vt, sizeof(*op), sb);
  if (op == NULL) return NULL;
  op->path = req->path;
  op->data = req->data;
  op->len = req->len;
  memset(req, 0, sizeof(*req));
  return &op->op;
}

/* native.prepareWriteFile(sandbox, options, isText): the original's checks, in order. */
napi_value files_prepare_write(napi_env env, sandbox_t *sb, napi_value *argv) {
  jsenv_t *js = jsenv_get(env);
  if (args_options(env, argv) == NULL) return NULL;
  err_t err = ERR_INIT;
  file_write_req_t req;
  if (files_parse_write(env, sb, argv, &req, &err) != 0) return convert_throw_err(js, &err);
  op_t *op = files_engine_write_op(js, sb, &req);
  file_write_req_free(&req);
  if (op == NULL) {
    err_oom(&err);
    return convert_throw_err(js, &err);
  }
  return op_prepared(op, NULL);
}

/* ================= read ================= */

typedef struct read_op {
  op_t op;
  char *path; /* normalized */
  char *name; /* basename, as the archive names the entry */
  ancestry_t *anc;
  http_req_t *req;
  buf_t archive;
  uint64_t max;
  int stat_checked;
  int peeked; /* the archive's first header has been looked at */
  err_t early; /* set from inside libcurl's callback; reported when the transfer ends */
  int read_done, ancestry_done;
  err_t err;
  buf_t file;
} read_op_t;

static void read_maybe_finish(read_op_t *op) {
  if (!op->read_done || !op->ancestry_done) return;
  op_settle(&op->op, &op->err);
}

/* Runs inside libcurl: no libcurl or JavaScript calls, just decide and collect. */
static int on_read_data(http_req_t *req, const uint8_t *data, size_t len, void *ud) {
  read_op_t *op = ud;
  if (!op->stat_checked) {
    op->stat_checked = 1;
    path_stat_t st;
    if (req->path_stat == NULL || path_stat_decode(req->path_stat, &st) != 0) {
      err_sandbox(&op->early, CODE_DOCKER_COMMAND_FAILED, "Docker engine returned no usable path metadata for %s.", op->path);
      return -1;
    }
    path_kind_t kind = st.kind;
    uint64_t size = st.size;
    path_stat_free(&st);
    if (kind != PS_FILE) {
      err_sandbox(&op->early, CODE_INVALID_PATH, "Sandbox path is not a regular file: %s", op->path);
      return -1;
    }
    if (size > op->max) {
      err_sandbox(&op->early, CODE_FILE_TOO_LARGE, "Sandbox file exceeds maxFileBytes (%llu > %llu): %s",
                  (unsigned long long)size, (unsigned long long)op->max, op->path);
      return -1;
    }
  }
  if (buf_append(&op->archive, data, len) != 0) {
    /* More bytes than the file may have: the file grew, or the archive is a bomb. */
    err_sandbox(&op->early, CODE_FILE_TOO_LARGE, "Sandbox file exceeds maxFileBytes (more than %llu bytes): %s",
                (unsigned long long)op->max, op->path);
    return -1;
  }
  if (!op->peeked) {
    /* The archive's own header, read with libarchive as soon as it is in: it must agree
     * with the stat header (a regular file within the bound) before more is taken. */
    tar_header_info_t info;
    int rc = tar_peek(op->archive.data, op->archive.len, &info, &op->early);
    if (rc < 0) return -1;
    if (rc == 1) {
      op->peeked = 1;
      if (info.kind != TAR_KIND_FILE) {
        err_sandbox(&op->early, CODE_INVALID_PATH, "Sandbox path is not a regular file: %s", op->path);
        return -1;
      }
      if (info.size > op->max) {
        err_sandbox(&op->early, CODE_FILE_TOO_LARGE, "Sandbox file exceeds maxFileBytes (%llu > %llu): %s",
                    (unsigned long long)info.size, (unsigned long long)op->max, op->path);
        return -1;
      }
    }
  }
  return 0;
}

static void on_downloaded(http_req_t *req, void *ud) {
  read_op_t *op = ud;
  op->req = NULL;
  int not_found = http_req_not_found(req);
  if (err_is_set(&op->early)) {
    if (!err_is_set(&op->err)) err_move(&op->err, &op->early);
  } else if (not_found) {
    if (!err_is_set(&op->err)) err_sandbox(&op->err, CODE_DOCKER_COMMAND_FAILED, "Sandbox file does not exist: %s", op->path);
  } else if (!http_req_ok(req)) {
    if (!err_is_set(&op->err)) http_req_error(req, &op->err);
  } else if (!err_is_set(&op->err)) {
    buf_init(&op->file, 0);
    tar_read_file(op->archive.data, op->archive.len, op->name, op->max, op->path, &op->file, &op->err);
  }
  buf_free(&op->archive);
  http_req_free(req);
  op->read_done = 1;
  read_maybe_finish(op);
}

static void on_read_ancestry(void *ud, const ancestry_result_t *r, err_t *err) {
  read_op_t *op = ud;
  op->anc = NULL;
  op->ancestry_done = 1;
  if (err != NULL) {
    err_move(&op->err, err);
  } else if (r->blocked && r->blocked_kind == PS_SYMLINK) {
    /* Whatever the download returns, it came through a link: refuse it. */
    err_clear(&op->err);
    err_sandbox(&op->err, CODE_INVALID_PATH, "Sandbox path passes through a symbolic link: %s", op->path);
  }
  read_maybe_finish(op);
}

static void read_start(op_t *o) {
  read_op_t *op = (read_op_t *)o;
  sandbox_t *s = op->op.sb;
  err_t err = ERR_INIT;
  char *abs = paths_container(s->workdir, op->path, &err);
  char *eabs = abs ? url_escape(abs) : NULL;
  char *name = url_escape(s->container_name);
  free(abs);
  if (eabs && name) op->req = http_req_new(s->eng, "GET", "/containers/%s/archive?path=%s", name, eabs);
  free(eabs);
  free(name);
  if (op->req == NULL) {
    if (!err_is_set(&err)) err_oom(&err);
    goto fail;
  }
  http_req_set_limit(op->req, 64 * 1024); /* error bodies only; the archive goes to on_read_data */
  op->req->on_data = on_read_data;
  if (http_req_start(op->req, on_downloaded, op, &err) != 0) {
    http_req_free(op->req);
    op->req = NULL;
    goto fail;
  }
  int rc = ancestry_start(s, op->path, on_read_ancestry, op, &op->anc, &(ancestry_result_t){0}, &err);
  if (rc < 0) goto fail_running;
  op->ancestry_done = rc == 1;
  return;
fail_running:
  http_req_free(op->req);
  op->req = NULL;
fail:
  op_settle(o, &err);
}

static void read_stop(op_t *o) {
  read_op_t *op = (read_op_t *)o;
  http_req_free(op->req);
  op->req = NULL;
  ancestry_cancel(op->anc);
  op->anc = NULL;
}

static napi_value read_result(op_t *o) {
  return convert_bytes(o->js, &((read_op_t *)o)->file);
}

static void read_destroy(op_t *o) {
  read_op_t *op = (read_op_t *)o;
  http_req_free(op->req);
  ancestry_cancel(op->anc);
  buf_free(&op->archive);
  buf_free(&op->file);
  err_clear(&op->early);
  err_clear(&op->err);
  free(op->path);
  free(op->name);
}

static const op_vtable_t read_vt = {.name = "readFile",
    .start = read_start, .stop = read_stop, .result = read_result, .destroy = read_destroy};

/* native.prepareReadFile(sandbox, options): assertReadOptions of the original. */
char *files_parse_read(napi_env env, napi_value *argv, err_t *err) {
  char *path = args_sandbox_path(env, nu_get(env, argv[1], "path"), "path", 0, err);
  if (path == NULL) return NULL;
  if (path[strlen(path) - 1] == '/') {
    /* "name/" is a directory: no regular file is read through it, whatever the engine. */
    err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, "Sandbox path names a directory, not a file: %s", path);
    free(path);
    return NULL;
  }
  return path;
}

op_t *files_engine_read_op(jsenv_t *js, sandbox_t *sb, char **path) {
  /* A user who is not root reads as itself (files_user.c): the engine would read as root
   * and follow links the user planted. */
  if (!user_is_root(sb->user)) return files_user_read_op(js, sb, path);
  read_op_t *op = op_new(js, &read_vt, sizeof(*op), sb);
  if (op == NULL) return NULL;
  op->path = *path;
  *path = NULL;
  op->name = base_name(op->path);
  op->max = (uint64_t)sb->runtime.max_file_bytes;
  buf_init(&op->archive, (size_t)(op->max > SIZE_MAX - ARCHIVE_OVERHEAD ? SIZE_MAX - 1 : op->max + ARCHIVE_OVERHEAD));
  err_init(&op->early);
  err_init(&op->err);
  if (op->name == NULL) {
    op_discard(&op->op);
    return NULL;
  }
  return &op->op;
}

napi_value files_prepare_read(napi_env env, sandbox_t *sb, napi_value *argv) {
  jsenv_t *js = jsenv_get(env);
  if (args_options(env, argv) == NULL) return NULL;
  err_t err = ERR_INIT;
  char *path = files_parse_read(env, argv, &err);
  if (path == NULL) return convert_throw_err(js, &err);
  op_t *op = files_engine_read_op(js, sb, &path);
  free(path);
  if (op == NULL) {
    err_oom(&err);
    return convert_throw_err(js, &err);
  }
  return op_prepared(op, NULL);
}

/* native.textPageOptions(options): readTextFilePage's checks and defaults. */
static napi_value js_text_page_options(napi_env env, napi_callback_info info) {
  jsenv_t *js = jsenv_get(env);
  napi_value options;
  if (nu_args(env, info, &options, 1) < 0) return NULL;
  err_t err = ERR_INIT;
  if (!nu_is_record(env, options)) {
    err_type(&err, "options must be an object.");
    return convert_throw_err(js, &err);
  }
  char *path = args_sandbox_path(env, nu_get(env, options, "path"), "path", 0, &err);
  if (path == NULL) return convert_throw_err(js, &err);
  free(path);
  static const char *names[3] = {"startLine", "lineCount", "maxBytes"};
  const int64_t defaults[3] = {1, 500, 64 * 1024};
  napi_value out;
  napi_create_object(env, &out);
  for (int i = 0; i < 3; i++) {
    napi_value v = nu_get(env, options, names[i]);
    int64_t value = defaults[i];
    /* options.x ?? default */
    if (!nu_is_undefined(env, v) && nu_typeof(env, v) != napi_null &&
        check_positive_safe_integer(env, v, names[i], &value, &err) != 0)
      return convert_throw_err(js, &err);
    napi_set_named_property(env, out, names[i], nu_number(env, (double)value));
  }
  return out;
}

/* native.textFilePage(bytes, startLine, lineCount, maxBytes): the page, or null when the
 * bytes are not UTF-8 (the caller then throws TextDecoder's own error). */
static napi_value js_text_file_page(napi_env env, napi_callback_info info) {
  napi_value argv[4];
  int argc = nu_args(env, info, argv, 4);
  if (argc < 0) return NULL;
  uint8_t *data = NULL;
  size_t len = 0;
  int64_t v[3] = {1, 1, 1};
  if (argc < 4 || !nu_uint8array_view(env, argv[0], &data, &len)) {
    napi_throw_type_error(env, NULL, "textFilePage expects bytes.");
    return NULL;
  }
  for (int i = 0; i < 3; i++) nu_safe_integer(env, argv[1 + i], &v[i]);
  if (!utf8_valid(data, len)) return nu_null(env);
  size_t bom = utf8_bom_len(data, len);
  text_page_t page;
  text_page(data + bom, len - bom, (uint64_t)v[0], (uint64_t)v[1], (uint64_t)v[2], &page);
  return convert_text_page(env, &page);
}

void files_register(napi_env env, napi_value exports) {
  napi_property_descriptor fns[] = {
      {"textPageOptions", NULL, js_text_page_options, NULL, NULL, NULL, napi_default, NULL},
      {"textFilePage", NULL, js_text_file_page, NULL, NULL, NULL, napi_default, NULL},
  };
  napi_define_properties(env, exports, sizeof(fns) / sizeof(fns[0]), fns);
}
