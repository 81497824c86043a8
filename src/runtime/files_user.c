/*
 * files_user.c - readFile and writeFile on the engine path for a sandbox whose user is not
 * root: one exec, as that user, of a small POSIX shell script (see files_user.h).
 *
 * Why: the archive endpoints run as root in the engine and follow symbolic links, and a
 * check made before them is a separate request. A sandbox user who swaps a directory and
 * a link to /etc in a loop made root-owned writes land in /etc and reads return
 * /etc/shadow. Run as the user, nothing can be reached that the user could not reach
 * anyway; and the scripts go further, refusing any link on the path without a race:
 *  - every directory on the way is entered with `cd -P` and the directory actually
 *    entered is compared with the one expected (`pwd -P`), so a link swapped in between a
 *    test and the `cd` is seen where it matters, after the `cd`;
 *  - a read opens the file once (`exec 3<`) and compares the file actually opened
 *    (/proc/$$/fd/3) with the one expected, then reads that descriptor;
 *  - a write goes to a new temporary file (noclobber: never through something planted)
 *    in the verified directory, is checked for its full length, and is renamed over the
 *    target, so no half-written file is ever visible and a link named like the target is
 *    replaced, not followed.
 * The scripts need sh, cat, mkdir, mv, rm, wc, stat and readlink (busybox has them all).
 *
 * Owns: each operation owns its path, its data (write) and its exec task.
 */
#include "runtime/files_user.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/exec_task.h"
#include "napi/convert.h"
#include "napi/op.h"
#include "napi/values.h"
#include "runtime/sh/file_read_sh.h"
#include "runtime/sh/file_write_sh.h"

typedef struct user_file_op {
  op_t op;
  int write;
  char *path; /* normalized, relative, no trailing slash */
  uint8_t *data;
  size_t len;
  uint64_t max;
  exec_task_t *task;
  exec_result_t *result;
} user_file_op_t;

/* The stderr the script printed (a path or a size), as a string. Malloc'd. */
static char *script_note(const exec_result_t *r) {
  return strndup(r->err.bytes.data ? (const char *)r->err.bytes.data : "", r->err.bytes.len);
}

/* The script's verdict as the engine path words it; 0 when it succeeded. */
static int verdict(user_file_op_t *op, exec_result_t *r, err_t *err) {
  if (r->timed_out) return err_sandbox(err, CODE_TIMEOUT, "Sandbox file operation timed out: %s", op->path);
  if (r->exit_code == 0) {
    if (!op->write && r->out.truncated)
      return err_sandbox(err, CODE_FILE_TOO_LARGE, "Sandbox file exceeds maxFileBytes (more than %llu bytes): %s",
                         (unsigned long long)op->max, op->path);
    return 0;
  }
  char *note = script_note(r);
  const char *blocking = note && note[0] ? note : op->path;
  switch (r->exit_code) {
    case 91:
      err_sandbox(err, CODE_INVALID_PATH, "Sandbox path passes through a symbolic link: %s", op->write ? blocking : op->path);
      err_set_details(err, json_pack("{s:s, s:s}", "path", op->path, "blocking", blocking));
      break;
    case 92:
      err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, "Unable to create sandbox directory.");
      err_set_details(err, json_pack("{s:s, s:s}", "path", op->path, "blocking", blocking));
      break;
    case 96:
      err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, "Sandbox file does not exist: %s", op->path);
      break;
    case 94:
      if (op->write) err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, "Sandbox path names a directory, not a file: %s", op->path);
      else err_sandbox(err, CODE_INVALID_PATH, "Sandbox path is not a regular file: %s", op->path);
      break;
    case 99:
      err_sandbox(err, CODE_FILE_TOO_LARGE, "Sandbox file exceeds maxFileBytes (%s > %llu): %s", blocking,
                  (unsigned long long)op->max, op->path);
      break;
    case 90:
    case 93:
    case 95:
      err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, "Unable to %s sandbox file as user %s: %s",
                  op->write ? "write" : "read", op->op.sb->user, op->path);
      err->exec_details = r;
      r = NULL;
      break;
    default:
      err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, "Unable to %s sandbox file: %s", op->write ? "write" : "read",
                  op->path);
      err->exec_details = r;
      r = NULL;
      break;
  }
  free(note);
  if (r == NULL) op->result = NULL; /* the error owns it now */
  return -1;
}

static void on_done(void *ud, exec_result_t *result, err_t *err) {
  user_file_op_t *op = ud;
  op->task = NULL;
  op->result = result;
  err_t e = ERR_INIT;
  if (err != NULL) err_move(&e, err);
  else verdict(op, result, &e);
  op_settle(&op->op, &e);
}

static void user_start(op_t *o) {
  user_file_op_t *op = (user_file_op_t *)o;
  sandbox_t *sb = o->sb;
  err_t err = ERR_INIT;
  char bound[32];
  snprintf(bound, sizeof(bound), "%llu", (unsigned long long)(op->write ? op->len : op->max));
  const char *argv[] = {"sh", "-c", op->write ? FILE_WRITE_SH : FILE_READ_SH, op->write ? "anvia-write" : "anvia-read",
                        sb->workdir, op->path, op->write ? "create" : "find", bound};
  exec_spec_t spec;
  memset(&spec, 0, sizeof(spec));
  spec.workdir = strdup("/");
  spec.timeout_ms = sb->runtime.command_timeout_ms;
  /* A read's output is the file: one byte more than the bound tells it grew past it. */
  spec.max_output = op->write ? 4096 : (size_t)op->max + 1;
  spec.kill_tree = 1;
  if (spec.workdir == NULL || exec_spec_set_argv(&spec, argv, sizeof(argv) / sizeof(argv[0])) != 0) goto oom;
  if (op->write) {
    spec.has_input = 1;
    spec.input = op->data; /* moved */
    spec.input_len = op->len;
    op->data = NULL;
  }
  exec_callbacks_t cbs = {.on_done = on_done};
  op->task = exec_task_start(sb->eng, sb->container_name, &spec, &cbs, op, &err);
  exec_spec_free(&spec);
  if (op->task != NULL) return;
  op_settle(o, &err);
  return;
oom:
  exec_spec_free(&spec);
  err_oom(&err);
  op_settle(o, &err);
}

static void user_stop(op_t *o) {
  user_file_op_t *op = (user_file_op_t *)o;
  exec_task_cancel(op->task);
  op->task = NULL;
}

/* A read resolves with the file's bytes (moved out of the result). */
static napi_value user_result(op_t *o) {
  user_file_op_t *op = (user_file_op_t *)o;
  if (op->write || op->result == NULL) return nu_undefined(o->js->env);
  return convert_bytes(o->js, &op->result->out.bytes);
}

static void user_destroy(op_t *o) {
  user_file_op_t *op = (user_file_op_t *)o;
  exec_task_cancel(op->task);
  exec_result_free(op->result);
  free(op->path);
  free(op->data);
}

static const op_vtable_t user_file_vt = {.name = "userFile",
    .start = user_start, .stop = user_stop, .result = user_result, .destroy = user_destroy};

static user_file_op_t *make(jsenv_t *js, sandbox_t *sb, int write) {
  user_file_op_t *op = op_new(js, &user_file_vt, sizeof(*op), sb);
  if (op == NULL) return NULL;
  op->write = write;
  op->max = (uint64_t)sb->runtime.max_file_bytes;
  return op;
}

op_t *files_user_write_op(jsenv_t *js, sandbox_t *sb, file_write_req_t *req) {
  user_file_op_t *op = make(js, sb, 1);
  if (op == NULL) return NULL;
  op->path = req->path;
  op->data = req->data;
  op->len = req->len;
  memset(req, 0, sizeof(*req));
  return &op->op;
}

op_t *files_user_read_op(jsenv_t *js, sandbox_t *sb, char **path) {
  user_file_op_t *op = make(js, sb, 0);
  if (op == NULL) return NULL;
  op->path = *path;
  *path = NULL;
  return &op->op;
}
