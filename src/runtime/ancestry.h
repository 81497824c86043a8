/*
 * ancestry.h - what lies on the way to a workspace path: every proper ancestor of a
 * relative path is looked at with HEAD /containers/{name}/archive (all at once), so
 * reads and writes can refuse to pass through a symbolic link and writes know which
 * directories they must create.
 *
 * Owns: an ancestry_t owns its requests until it reports or is cancelled.
 */
#ifndef SBX_ANCESTRY_H
#define SBX_ANCESTRY_H

#include <stddef.h>

#include "base/err.h"
#include "codec/pathstat.h"
#include "sandbox/sandbox.h"

typedef struct ancestry_result {
  size_t count;         /* proper ancestors of the path */
  size_t existing;      /* how many leading ancestors exist as real directories */
  int blocked;          /* an ancestor exists but is not a directory (kind in blocked_kind) */
  size_t blocked_index; /* which one */
  path_kind_t blocked_kind;
} ancestry_result_t;

typedef struct ancestry ancestry_t;
typedef void (*ancestry_done_fn)(void *ud, const ancestry_result_t *r, err_t *err);

/*
 * Starts the checks for `rel` (a normalized sandbox path). Returns 1 when there is
 * nothing to check (the path has no ancestor; *r filled, no callback), 0 when started,
 * -1 with err set.
 */
int ancestry_start(sandbox_t *sb, const char *rel, ancestry_done_fn done, void *ud, ancestry_t **out,
                   ancestry_result_t *r, err_t *err);
void ancestry_cancel(ancestry_t *a);

/* The ancestors of a normalized relative path ("a/b/c" -> "a", "a/b"); caller frees. */
int path_ancestors(const char *rel, char ***out, size_t *count);
void path_ancestors_free(char **list, size_t count);

#endif
