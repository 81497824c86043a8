/*
 * tree_rules.h - the transport-neutral description of a tree transfer (importTree, exportTree):
 * the quotas a transfer is held to and where it stands (its counts), the admission of
 * one entry against them, the paths an import has written (duplicates, implicit parent
 * directories), and the mapping of the names an export reads (hostile: from the sandbox)
 * to workspace paths. Every transport (the engine's archive endpoints today, the
 * in-sandbox agent later) judges entries with these, so a breach reads the same whichever
 * carried it.
 *
 * Owns: a tree_pathset_t owns its table (128-bit digests of the paths, no copies: at most
 * 64 bytes an entry whatever the paths' lengths). Everything else returned is the
 * caller's (malloc'd strings, jansson references).
 */
#ifndef SBX_TREE_CODEC_H
#define SBX_TREE_CODEC_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

/* Error codes tree transfers add to DockerSandboxErrorCode (types/index.d.ts). */
#define CODE_QUOTA_EXCEEDED "quota_exceeded" /* maxFiles, maxTotalBytes, maxPathBytes, maxDepth */
#define CODE_INVALID_ENTRY "invalid_entry"   /* a link, device, fifo or socket; bytes that differ from byteLength */

/* Defaults when a quota is not given (maxFileBytes defaults to the sandbox's). */
#define TREE_DEFAULT_MAX_FILES 100000u
#define TREE_DEFAULT_MAX_TOTAL_BYTES ((uint64_t)1 << 30)
#define TREE_DEFAULT_MAX_PATH_BYTES 4096u
#define TREE_DEFAULT_MAX_DEPTH 256u

typedef struct tree_quota {
  uint64_t max_files;
  uint64_t max_file_bytes;
  uint64_t max_total_bytes;
  uint64_t max_path_bytes;
  uint64_t max_depth;
} tree_quota_t;

/* How far a transfer got: entries and file bytes that crossed, entries skipped. */
typedef struct tree_counts {
  uint64_t files;
  uint64_t directories;
  uint64_t bytes;
  uint64_t skipped;
} tree_counts_t;

typedef enum { TREE_FILE = 0, TREE_DIRECTORY = 1 } tree_kind_t;

typedef struct tree_entry {
  tree_kind_t kind;
  const char *path; /* relative, normalized, no trailing slash */
  unsigned mode;    /* 0777 */
  uint64_t size;    /* files */
} tree_entry_t;

void tree_quota_defaults(tree_quota_t *q, uint64_t max_file_bytes);

/* { files, directories, bytes, skipped } */
json_t *tree_counts_json(const tree_counts_t *c);

/*
 * Whether one more entry fits, given the counts so far (which do not include it yet).
 * maxFiles bounds entries, files and directories alike (files + directories + 1 > max is
 * a breach): each is an inode made on the other side.
 * 0, or -1 with err set: file_too_large "Sandbox file exceeds maxFileBytes (<size> >
 * <max>): <path>" for a file over maxFileBytes, quota_exceeded "Tree transfer exceeds
 * <quota> (<value> > <max>): <path>" for the others; details { quota, limit, path,
 * files, directories, bytes } say how far the transfer got.
 */
int tree_quota_admit(const tree_quota_t *q, const tree_counts_t *c, const tree_entry_t *e, err_t *err);
/* The depth of a normalized relative path ("a" 1, "a/b" 2). */
size_t tree_path_depth(const char *path);

/*
 * Export: the workspace path of an archive member named `name` (len bytes, untrusted).
 * `root` is the archive's top name ("workspace" for the engine's download of /workspace,
 * "." for a tar made inside it, "" when names are already workspace-relative) and
 * `prefix` the selection's workspace path ("" for the whole workspace). Absolute names,
 * ".." components, a NUL byte, names outside `root` (invalid_path) and names that are not
 * UTF-8 (invalid_entry) are refused. *is_root is set when the name is `root` itself (the
 * result is then `prefix`). NULL with err set; otherwise malloc'd.
 */
char *tree_map_name(const char *name, size_t len, const char *root, const char *prefix, int *is_root, err_t *err);

/* The paths a transfer has seen, with their kind: kept as digests (see tree_rules.c). */
typedef struct tree_pathset tree_pathset_t;
tree_pathset_t *tree_pathset_new(void);
void tree_pathset_free(tree_pathset_t *s);
/* -1 absent, else the kind recorded. */
int tree_pathset_get(const tree_pathset_t *s, const char *path);
/* 0, or -1 when out of memory. The path must be absent. */
int tree_pathset_add(tree_pathset_t *s, const char *path, tree_kind_t kind);
size_t tree_pathset_count(const tree_pathset_t *s);

#endif
