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

/*
 * sh -c TREE_IMPORT_SCRIPT anvia-import <workdir> <dest> <stage> <mode> <marker> [pgid]
 * Stages an import in the hidden directory <stage> of the workspace and publishes it into
 * <dest> without a race (tree_engine.c says how). mode:
 *  - stream: the destination's way is checked, `tar -x` reads the archive from stdin into
 *    the staging directory (the transport's own flow control bounds what waits), then
 *    publish. The archive ends with a member named <marker>: a stream that stops early
 *    never has it, and the script then removes what it extracted;
 *  - extract: the same, reporting tar's progress on stdout (/proc/<pid>/io rchar, every
 *    20 ms: a "0" line first) for a transport without flow control of its own;
 *  - publish, discard, await (says "ready", then reads "publish" or anything else from
 *    stdin: publish or discard);
 *  - discard with <pgid>: that process group is killed first (what was left running of
 *    an import whose transport died);
 *  - settle <pgid>: waits (at most TREE_STOP_GRACE_MS) for that group's leader (the
 *    script of an import whose transport died after the whole stream was handed on) to
 *    end, then removes what it left staged. Without <pgid>, or when it does not end,
 *    nothing is removed (the script may be publishing).
 * Exit 90: no workdir; 91: a symbolic link (its path on stderr); 92: not a directory or
 * cannot be made; 93: cannot be entered; 94: a directory where a file goes; 95: cannot
 * move; 97: the stream ended before its marker; 98: tar failed (its message on stderr); 99:
 * tar's progress cannot be read (/proc/<pid>/io), without which stdin has no bound. A tar
 * whose io file is not readable yet (mid-exec) or no longer (it already ended) is not that:
 * 99 only when the script's own /proc/$$/io is unreadable, or tar's stays so while it runs
 * for 500 checks 20 ms apart.
 */
static const char TREE_IMPORT_SCRIPT[] =
    "ws=$1 dest=$2 stage=$3 mode=$4 marker=$5 pg=${6:-}\n"
    "umask 022\n"
    "cd -P -- \"$ws\" 2>/dev/null || exit 90\n"
    "ws=$(pwd -P)\n"
    "case $ws in /) st=/$stage ;; *) st=$ws/$stage ;; esac\n"
    "say() { printf '%s' \"$1\" >&2; }\n"
    "gone() { cd / && rm -rf -- \"$st\"; }\n"
    "case $mode in\n"
    "  discard)\n"
    "    case $pg in '' | *[!0-9]*) ;; *) kill -KILL \"-$pg\" 2>/dev/null ;; esac\n"
    "    gone\n"
    "    exit 0 ;;\n"
    "  settle)\n"
    "    case $pg in '' | *[!0-9]*) exit 0 ;; esac\n"
    "    n=0\n"
    "    while :; do\n"
    "      s=\n"
    "      { read -r _ _ s _ < \"/proc/$pg/stat\"; } 2>/dev/null\n"
    "      [ -n \"$s\" ] && [ \"$s\" != Z ] || break\n"
    "      [ \"$n\" -lt 300 ] || exit 0\n"
    "      sleep 0.05\n"
    "      n=$((n + 1))\n"
    "    done\n"
    "    gone\n"
    "    exit 0 ;;\n"
    "esac\n"
    "walk() {\n"
    "  here=$ws\n"
    "  cd -P -- \"$ws\" 2>/dev/null || return 90\n"
    "  walked=\n"
    "  [ \"$2\" = . ] && return 0\n"
    "  IFS=/\n"
    "  set -f\n"
    "  for c in $2; do\n"
    "    unset IFS\n"
    "    set +f\n"
    "    walked=${walked:+$walked/}$c\n"
    "    case $here in /) t=/$c ;; *) t=$here/$c ;; esac\n"
    "    if [ -L \"$t\" ]; then say \"$walked\"; return 91; fi\n"
    "    if [ ! -e \"$t\" ]; then\n"
    "      [ \"$1\" = check ] && return 0\n"
    "      mkdir -m 755 -- \"$t\" 2>/dev/null || [ -d \"$t\" ] || { say \"$walked\"; return 92; }\n"
    "      if [ -L \"$t\" ]; then say \"$walked\"; return 91; fi\n"
    "    fi\n"
    "    [ -d \"$t\" ] || { say \"$walked\"; return 92; }\n"
    "    cd -P -- \"$t\" 2>/dev/null || { say \"$walked\"; return 93; }\n"
    "    here=$(pwd -P)\n"
    "    [ \"$here\" = \"$t\" ] || { say \"$walked\"; return 91; }\n"
    "  done\n"
    "  unset IFS\n"
    "  set +f\n"
    "  return 0\n"
    "}\n"
    "conflicts() {\n"
    "  for e in \"$1\"/* \"$1\"/.[!.]* \"$1\"/..?*; do\n"
    "    [ -e \"$e\" ] || [ -L \"$e\" ] || continue\n"
    "    n=${e##*/}\n"
    "    t=$2/$n\n"
    "    r=${3:+$3/}$n\n"
    "    if [ -L \"$t\" ]; then say \"$r\"; return 91; fi\n"
    "    if [ -d \"$e\" ]; then\n"
    "      if [ -d \"$t\" ]; then conflicts \"$e\" \"$t\" \"$r\" || return\n"
    "      elif [ -e \"$t\" ]; then say \"$r\"; return 92\n"
    "      fi\n"
    "    elif [ -d \"$t\" ]; then say \"$r\"; return 94\n"
    "    fi\n"
    "  done\n"
    "  return 0\n"
    "}\n"
    "merge() {\n"
    "  for e in \"$1\"/* \"$1\"/.[!.]* \"$1\"/..?*; do\n"
    "    [ -e \"$e\" ] || [ -L \"$e\" ] || continue\n"
    "    n=${e##*/}\n"
    "    t=$2/$n\n"
    "    r=${3:+$3/}$n\n"
    "    if [ -L \"$t\" ]; then say \"$r\"; return 91; fi\n"
    "    if [ -d \"$e\" ] && [ -d \"$t\" ]; then merge \"$e\" \"$t\" \"$r\" || return\n"
    "    elif [ -d \"$t\" ]; then say \"$r\"; return 94\n"
    "    else mv -f -T -- \"$e\" \"$t\" 2>/dev/null || { say \"$r\"; return 95; }\n"
    "    fi\n"
    "  done\n"
    "  return 0\n"
    "}\n"
    "publish() {\n"
    "  case $dest in\n"
    "    .) parent=.; name= ;;\n"
    "    */*) parent=${dest%/*}; name=${dest##*/} ;;\n"
    "    *) parent=.; name=$dest ;;\n"
    "  esac\n"
    "  walk create \"$parent\" || return\n"
    "  if [ -z \"$name\" ]; then\n"
    "    target=$ws\n"
    "  else\n"
    "    case $here in /) target=/$name ;; *) target=$here/$name ;; esac\n"
    "    if [ -L \"$target\" ]; then say \"$dest\"; return 91; fi\n"
    "    if [ ! -e \"$target\" ]; then\n"
    "      chmod 755 -- \"$st\" 2>/dev/null && mv -T -- \"$st\" \"$target\" 2>/dev/null || { say \"$dest\"; return 95; }\n"
    "      return 0\n"
    "    fi\n"
    "    [ -d \"$target\" ] || { say \"$dest\"; return 92; }\n"
    "  fi\n"
    "  shown=\n"
    "  [ -n \"$name\" ] && shown=$dest\n"
    "  conflicts \"$st\" \"$target\" \"$shown\" || return\n"
    "  merge \"$st\" \"$target\" \"$shown\" || return\n"
    "  gone\n"
    "  return 0\n"
    "}\n"
    "if [ \"$mode\" = await ]; then\n"
    "  printf 'ready\\n'\n"
    "  read -r verdict || verdict=\n"
    "  [ \"$verdict\" = publish ] || { gone; exit 97; }\n"
    "  mode=publish\n"
    "fi\n"
    "if [ \"$mode\" = publish ]; then\n"
    "  publish; rc=$?\n"
    "  [ \"$rc\" -eq 0 ] || gone\n"
    "  exit \"$rc\"\n"
    "fi\n"
    "case $mode in extract | stream) ;; *) exit 2 ;; esac\n"
    "walk check \"$dest\" || exit\n"
    "mkdir -m 700 -- \"$st\" || exit 95\n"
    "if [ \"$mode\" = stream ]; then\n"
    "  (umask 0; exec tar -x -f - -C \"$st\")\n"
    "  rc=$?\n"
    "else\n"
    "  printf '0\\n'\n"
    "  exec 3<&0\n"
    "  (umask 0; exec tar -x -f - -C \"$st\") <&3 &\n"
    "  pid=$!\n"
    "  exec 3<&-\n"
    "  n=0\n"
    "  while [ ! -r \"/proc/$pid/io\" ]; do\n"
    "    s=\n"
    "    { read -r _ _ s _ < \"/proc/$pid/stat\"; } 2>/dev/null\n"
    "    [ -n \"$s\" ] && [ \"$s\" != Z ] || break\n"
    "    if [ ! -r \"/proc/$$/io\" ] || [ \"$n\" -ge 500 ]; then\n"
    "      kill \"$pid\" 2>/dev/null\n"
    "      wait \"$pid\"\n"
    "      gone\n"
    "      exit 99\n"
    "    fi\n"
    "    n=$((n + 1))\n"
    "    sleep 0.02\n"
    "  done\n"
    "  while :; do\n"
    "    s=\n"
    "    { read -r _ _ s _ < \"/proc/$pid/stat\"; } 2>/dev/null\n"
    "    [ -n \"$s\" ] && [ \"$s\" != Z ] || break\n"
    "    { while read -r k v; do [ \"$k\" = rchar: ] && { printf '%s\\n' \"$v\"; break; }; done < \"/proc/$pid/io\"; } 2>/dev/null\n"
    "    sleep 0.02\n"
    "  done\n"
    "  wait \"$pid\"\n"
    "  rc=$?\n"
    "fi\n"
    "if [ \"$rc\" -ne 0 ]; then\n"
    "  set -- $(df -P -k \"$st\" 2>/dev/null | tail -n 1)\n"
    "  [ \"${4:-1}\" = 0 ] && say 'No space left on device'\n"
    "  gone\n"
    "  exit 98\n"
    "fi\n"
    "[ -f \"$st/$marker\" ] || { gone; exit 97; }\n"
    "rm -f -- \"$st/$marker\"\n"
    "publish; rc=$?\n"
    "[ \"$rc\" -eq 0 ] || gone\n"
    "exit \"$rc\"\n";

/*
 * sh -c TREE_EXPORT_SCRIPT anvia-export <workdir> <kind> [path...]: the selection as a
 * tar stream on stdout. Exit 90: no workdir; 91: a symbolic link on the way (its path on
 * stderr); 93: cannot enter; 94: not a directory (subtree) or not a regular file (files);
 * 96: missing.
 */
static const char TREE_EXPORT_SCRIPT[] =
    "ws=$1 kind=$2\n"
    "shift 2\n"
    "cd -P -- \"$ws\" 2>/dev/null || exit 90\n"
    "say() { printf '%s' \"$1\" >&2; }\n"
    "links() {\n"
    "  p=\n"
    "  IFS=/\n"
    "  set -f\n"
    "  for c in $1; do\n"
    "    p=${p:+$p/}$c\n"
    "    if [ -L \"$p\" ]; then unset IFS; set +f; say \"$p\"; return 91; fi\n"
    "    if [ ! -e \"$p\" ]; then unset IFS; set +f; say \"$1\"; return 96; fi\n"
    "  done\n"
    "  unset IFS\n"
    "  set +f\n"
    "  return 0\n"
    "}\n"
    "case $kind in\n"
    "  workspace) exec tar -c -f - . ;;\n"
    "  subtree)\n"
    "    links \"$1\" || exit\n"
    "    [ -d \"$1\" ] || { say \"$1\"; exit 94; }\n"
    "    case $1 in */*) cd -P -- \"${1%/*}\" 2>/dev/null || exit 93; n=${1##*/} ;; *) n=$1 ;; esac\n"
    "    exec tar -c -f - -- \"$n\" ;;\n"
    "  files)\n"
    "    for f; do\n"
    "      links \"$f\" || exit\n"
    "      [ -f \"$f\" ] || { say \"$f\"; exit 94; }\n"
    "    done\n"
    "    exec tar -c -f - -- \"$@\" ;;\n"
    "esac\n"
    "exit 2\n";

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
  argv[n++] = TREE_IMPORT_SCRIPT;
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
  argv[n++] = TREE_EXPORT_SCRIPT;
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
