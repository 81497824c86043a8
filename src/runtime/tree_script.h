/*
 * tree_script.h - what both backends of importTree and exportTree (tree_engine.c,
 * tree_agent.c) run in the sandbox, and how they read what comes back: the import and
 * export scripts, the staging directory's name, the scripts' exit codes as the call's
 * errors, and the export's source (the archive read as it arrives, each member handed to
 * the front, which judges it).
 *
 * Owns: a tree_src_t owns its tar reader and its names.
 */
#ifndef SBX_TREE_SCRIPT_H
#define SBX_TREE_SCRIPT_H

#include <stddef.h>

#include "base/err.h"
#include "base/exec_result.h"
#include "codec/tarstream.h"
#include "engine/exec_task.h"
#include "runtime/tree_front.h"

/* What is kept of a script's stdout and stderr (for its verdict). */
#define TREE_SCRIPT_OUTPUT 8192
/* How long a stopped transfer may take to wind down before it is cut. */
#define TREE_STOP_GRACE_MS 15000u

/* The import and export scripts (their arguments and exit codes: tree_script.c) are run
 * through tree_import_argv and tree_export_argv. */

/* The last component of a path ("a/b" -> "b"). */
const char *tree_base_name(const char *p);
/* ".anvia-<what>.<32 hex>" into out (64 bytes is enough). 0, or -1 without randomness. */
int tree_random_name(char *out, size_t size, const char *what);

/* A script's exec spec: argv (copied), cwd "/", no timeout (the caller's signal ends a
 * transfer), TREE_SCRIPT_OUTPUT bytes of output kept, its whole tree ended with it. 0, or
 * -1 when out of memory. */
int tree_script_spec(exec_spec_t *spec, const char *const *argv, size_t argc, int with_stdin);
/* One engine exec of a script in the sandbox, as its user (exec_task_start). */
exec_task_t *tree_run_script(sandbox_t *sb, const char *const *argv, size_t argc, int with_stdin,
                             const exec_callbacks_t *cbs, void *ud, err_t *err);

/* The import script's command line for `t` into argv (at least 10 slots): its count.
 * `pgid` may be NULL. The strings are referenced, not copied. */
size_t tree_import_argv(const char **argv, const tree_import_t *t, const char *stage, const char *mode,
                        const char *marker, const char *pgid);
/* The import script ended with exit code r->exit_code (not 0): the call's error, as the
 * messages of writeFile put it. Takes r. `as_user`: the sandbox user is not root. */
void tree_import_verdict(const tree_import_t *t, int as_user, exec_result_t *r, err_t *err);

/* ---- export ---- */

/* An archive being read for an export: its members go to the front (tree_export_entry,
 * _data, _entry_end), named relative to `root` (the archive's top name) with `prefix` (its
 * workspace path) in front; `shown` names it in messages. */
typedef struct tree_src {
  tree_export_t *x;
  tar_reader_t *reader;
  char *root, *prefix, *shown;
} tree_src_t;

/* A new archive (a new reader; the names copied). 0, or -1 when out of memory. */
int tree_src_set(tree_src_t *s, tree_export_t *x, const char *root, const char *prefix, const char *shown);
void tree_src_free(tree_src_t *s);
/* The export script's command line for x's selection (NULL when out of memory; the array
 * is the caller's to free, the strings are referenced), and `s` set to read what it writes.
 * *argc is its count. */
const char **tree_export_argv(tree_src_t *s, tree_export_t *x, size_t *argc);
/* The export script ended with exit code r->exit_code (not 0): the call's error. Takes r. */
void tree_export_verdict(const tree_src_t *s, exec_result_t *r, err_t *err);

#endif
