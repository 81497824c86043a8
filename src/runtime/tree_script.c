/*
 * tree_script.c - the scripts both tree backends run in the sandbox, and the reading of
 * what comes back (see tree_script.h).
 */
#include "runtime/tree_script.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rand.h"
#include "codec/userspec.h"
#include "runtime/sh/tree_export_sh.h"
#include "runtime/sh/tree_import_sh.h"

int tree_random_name(char *out, size_t size, const char *what) {
  char uuid[37];
  if (uuid_v4(uuid) != 0) return -1;
  char hex[33];
  size_t k = 0;
  for (size_t i = 0; uuid[i] && k < 32; i++)
    if (uuid[i] != '-') hex[k++] = uuid[i];
  hex[k] = 0;
  snprintf(out, size, ".anvia-%s.%s", what, hex);
  return 0;
}

static char *script_note(const exec_result_t *r) {
  if (r == NULL) return strdup("");
  return strndup(r->err.bytes.data ? (const char *)r->err.bytes.data : "", r->err.bytes.len);
}

/* A command's stderr for a message: its lines joined with "; ", without tar's closing
 * "Exiting with failure status..." and "Error is not recoverable...", at most 512 bytes. */
static char *stderr_summary(const exec_result_t *r) {
  char *s = script_note(r);
  if (s == NULL) return NULL;
  buf_t b;
  buf_init(&b, 0);
  char *save = NULL;
  for (char *line = strtok_r(s, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
    if (line[0] == 0 || strstr(line, "Exiting with failure status") || strstr(line, "Error is not recoverable")) continue;
    if (b.len > 0 && buf_append_str(&b, "; ") != 0) break;
    if (buf_append_str(&b, line) != 0) break;
    if (b.len > 512) break;
  }
  free(s);
  if (b.len > 512) b.len = 512;
  if (buf_terminate(&b) != 0) {
    buf_free(&b);
    return NULL;
  }
  return buf_steal(&b, NULL);
}

/* ---- running them ---- */

int tree_script_spec(exec_spec_t *spec, const char *const *argv, size_t argc, int with_stdin) {
  memset(spec, 0, sizeof(*spec));
  spec->workdir = strdup("/");
  spec->timeout_ms = 0; /* a transfer takes as long as it takes: the caller's signal ends it */
  spec->max_output = TREE_SCRIPT_OUTPUT;
  spec->kill_tree = 1;
  spec->attach_stdin = with_stdin;
  if (spec->workdir == NULL || exec_spec_set_argv(spec, argv, argc) != 0) {
    exec_spec_free(spec);
    return -1;
  }
  return 0;
}

exec_task_t *tree_run_script(sandbox_t *sb, const char *const *argv, size_t argc, int with_stdin,
                             const exec_callbacks_t *cbs, void *ud, err_t *err) {
  exec_spec_t spec;
  if (tree_script_spec(&spec, argv, argc, with_stdin) != 0) {
    err_oom(err);
    return NULL;
  }
  exec_task_t *task = exec_task_start(sb->eng, sb->container_name, &spec, cbs, ud, err);
  exec_spec_free(&spec);
  return task;
}

/* ---- import ---- */

size_t tree_import_argv(const char **argv, const tree_import_t *t, const char *stage, const char *mode,
                        const char *marker, const char *pgid) {
  size_t n = 0;
  argv[n++] = "sh";
  argv[n++] = "-c";
  argv[n++] = TREE_IMPORT_SH;
  argv[n++] = "anvia-import";
  argv[n++] = t->op.sb->workdir;
  argv[n++] = t->req.dest;
  argv[n++] = stage;
  argv[n++] = mode;
  argv[n++] = marker;
  if (pgid != NULL) argv[n++] = pgid;
  return n;
}

void tree_import_verdict(const tree_import_t *t, int as_user, exec_result_t *r, err_t *err) {
  if (r->exit_code == 0) {
    exec_result_free(r);
    return;
  }
  char *note = script_note(r);
  const char *blocking = note && note[0] ? note : t->req.dest;
  switch (r->exit_code) {
    case 91:
      err_sandbox(err, CODE_INVALID_PATH, "Sandbox path passes through a symbolic link: %s", blocking);
      err_set_details(err, json_pack("{s:s, s:s}", "path", t->req.dest, "blocking", blocking));
      break;
    case 92:
      err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, "Unable to create sandbox directory: %s", blocking);
      err_set_details(err, json_pack("{s:s, s:s}", "path", t->req.dest, "blocking", blocking));
      break;
    case 94:
      err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, "Sandbox path names a directory, not a file: %s", blocking);
      break;
    case 97:
      err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, "The import stream ended before its last entry.");
      break;
    case 98: {
      char *line = stderr_summary(r);
      err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, "Unable to extract the import in the sandbox: %s",
                  line && line[0] ? line : "tar failed");
      free(line);
      err->exec_details = r;
      r = NULL;
      break;
    }
    case 99:
      err_sandbox(err, CODE_DOCKER_COMMAND_FAILED,
                  "Unable to import into the sandbox as user %s: tar's progress cannot be read (/proc/<pid>/io).",
                  t->op.sb->user);
      break;
    default:
      err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, "Unable to import into the sandbox%s%s: %s",
                  as_user ? " as user " : "", as_user ? t->op.sb->user : "", t->req.dest);
      err->exec_details = r;
      r = NULL;
      break;
  }
  free(note);
  exec_result_free(r);
}

/* ---- export ---- */

static tree_src_kind_t src_kind(ts_kind_t k) {
  switch (k) {
    case TS_FILE:
      return TREE_SRC_FILE;
    case TS_DIRECTORY:
      return TREE_SRC_DIRECTORY;
    case TS_SYMLINK:
      return TREE_SRC_SYMLINK;
    case TS_HARDLINK:
      return TREE_SRC_HARDLINK;
    default:
      return TREE_SRC_OTHER;
  }
}

static int on_member(void *ud, const tar_member_t *m, err_t *err) {
  tree_src_t *s = ud;
  return tree_export_entry(s->x, m->name, m->name_len, s->root, s->prefix, src_kind(m->kind), m->mode, m->size, err);
}

static int on_member_data(void *ud, const uint8_t *data, size_t len, err_t *err) {
  tree_src_t *s = ud;
  return tree_export_data(s->x, data, len, err);
}

static int on_member_end(void *ud, err_t *err) {
  tree_src_t *s = ud;
  return tree_export_entry_end(s->x, err);
}

static const tar_reader_cbs_t reader_cbs = {.on_member = on_member, .on_data = on_member_data, .on_member_end = on_member_end};

int tree_src_set(tree_src_t *s, tree_export_t *x, const char *root, const char *prefix, const char *shown) {
  tree_src_free(s);
  s->x = x;
  s->root = strdup(root);
  s->prefix = strdup(prefix);
  s->shown = strdup(shown);
  s->reader = tar_reader_new(&reader_cbs, s);
  return s->root && s->prefix && s->shown && s->reader ? 0 : -1;
}

void tree_src_free(tree_src_t *s) {
  tar_reader_free(s->reader);
  free(s->root);
  free(s->prefix);
  free(s->shown);
  s->reader = NULL;
  s->root = s->prefix = s->shown = NULL;
}

const char *tree_base_name(const char *p) {
  const char *s = strrchr(p, '/');
  return s && s[1] ? s + 1 : p;
}

const char **tree_export_argv(tree_src_t *s, tree_export_t *x, size_t *argc) {
  sandbox_t *sb = x->op.sb;
  const char *kind = x->req.kind == TREE_SEL_WORKSPACE ? "workspace" : x->req.kind == TREE_SEL_SUBTREE ? "subtree" : "files";
  size_t extra = x->req.kind == TREE_SEL_FILES ? x->req.npaths : x->req.kind == TREE_SEL_SUBTREE ? 1 : 0;
  const char **argv = calloc(6 + extra, sizeof(char *));
  if (argv == NULL) return NULL;
  size_t n = 0;
  argv[n++] = "sh";
  argv[n++] = "-c";
  argv[n++] = TREE_EXPORT_SH;
  argv[n++] = "anvia-export";
  argv[n++] = sb->workdir;
  argv[n++] = kind;
  if (x->req.kind == TREE_SEL_SUBTREE) argv[n++] = x->req.path;
  for (size_t i = 0; x->req.kind == TREE_SEL_FILES && i < x->req.npaths; i++) argv[n++] = x->req.paths[i];
  int rc;
  if (x->req.kind == TREE_SEL_WORKSPACE) rc = tree_src_set(s, x, ".", "", ".");
  else if (x->req.kind == TREE_SEL_SUBTREE) rc = tree_src_set(s, x, tree_base_name(x->req.path), x->req.path, x->req.path);
  else rc = tree_src_set(s, x, "", "", "the selected files");
  if (rc != 0) {
    free(argv);
    return NULL;
  }
  *argc = n;
  return argv;
}

void tree_export_verdict(const tree_src_t *s, exec_result_t *r, err_t *err) {
  const tree_export_t *x = s->x;
  char *note = script_note(r);
  const char *what = note && note[0] ? note : s->shown;
  switch (r->exit_code) {
    case 91:
      err_sandbox(err, CODE_INVALID_PATH, "Sandbox path passes through a symbolic link: %s", what);
      break;
    case 96:
      err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, "Sandbox path does not exist: %s", what);
      break;
    case 94:
      err_sandbox(err, CODE_INVALID_PATH, "Sandbox path is not a %s: %s",
                  x->req.kind == TREE_SEL_FILES ? "regular file" : "directory", what);
      break;
    default: {
      char *line = stderr_summary(r);
      int as_user = !user_is_root(x->op.sb->user);
      err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, "Unable to export from the sandbox%s%s: %s", as_user ? " as user " : "",
                  as_user ? x->op.sb->user : "", line && line[0] ? line : s->shown);
      free(line);
      err->exec_details = r;
      r = NULL;
      break;
    }
  }
  free(note);
  exec_result_free(r);
}
