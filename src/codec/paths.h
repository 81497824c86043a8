/*
 * paths.h - sandbox path rules, as pure functions over UTF-8 strings.
 *
 * Owns: nothing; every returned string is malloc'd and the caller's.
 * These reproduce Node's path.posix functions byte for byte (normalize, join, dirname,
 * relative, isAbsolute) and the original package's normalizeSandboxPath, containerPath
 * and parentSandboxPath, so a path is judged exactly as the original judged it, before any
 * I/O.
 */
#ifndef SBX_PATHS_H
#define SBX_PATHS_H

#include <stddef.h>

#include "base/err.h"

/* path.posix.normalize */
char *posix_normalize(const char *path);
/* path.posix.join(a, b) */
char *posix_join(const char *a, const char *b);
/* path.posix.dirname */
char *posix_dirname(const char *path);
/* path.posix.relative(from, to); both absolute here (no cwd is consulted). */
char *posix_relative(const char *from, const char *to);
/* path.posix.isAbsolute */
int posix_is_absolute(const char *path);

/*
 * Length-aware forms of the above, for inputs that may hold NUL bytes (a JavaScript string
 * may). The result is NUL-terminated too; its length is stored in *out_len when out_len is
 * not NULL. NULL means out of memory. A relative input to posix_relative_n is resolved
 * against "/" (Node would consult process.cwd()).
 */
char *posix_normalize_n(const char *path, size_t len, size_t *out_len);
char *posix_join_n(const char *a, size_t a_len, const char *b, size_t b_len, size_t *out_len);
char *posix_dirname_n(const char *path, size_t len, size_t *out_len);
char *posix_relative_n(const char *from, size_t from_len, const char *to, size_t to_len, size_t *out_len);

/*
 * normalizeSandboxPath(input, { allowRoot }): NULL with an invalid_path DockerSandboxError
 * in `err` ("Sandbox path cannot be empty.", "... cannot contain null bytes.", "... must be
 * relative: <input>", "... cannot leave the workspace: <input>", "... must refer to a file
 * or directory inside the workspace."). `len` is the byte length (the input may hold NULs).
 */
char *paths_normalize(const char *input, size_t len, int allow_root, err_t *err);
/*
 * The agent tools' form (upstream's normalizeSandboxPath(input, { allowRoot, workdir })): an
 * input that normalizes to an absolute path is accepted when it lies in the workdir, and is
 * made relative to normalize(workdir) (posix.relative; "." for the workdir itself) before the
 * checks above, so "/workspace/app/" in "/workspace" is "app" and "/workspace-other/x" "cannot
 * leave the workspace". `workdir` (length `workdir_len`, NULs allowed) must be absolute for
 * that; NULL or a relative workdir keeps "must be relative", and a relative input is judged
 * exactly as by paths_normalize, which is this function with workdir NULL. The
 * runtime's own paths never come here with a workdir: they stay relative-only.
 */
char *paths_normalize_in(const char *input, size_t len, int allow_root, const char *workdir,
                                size_t workdir_len, err_t *err);
/*
 * The bounds of a sandbox path given as an argument (a runtime call's path or cwd,
 * createSandbox's files and directories), on the normalized path. The original had none;
 * an unbounded path cost one ancestor probe per component, all in flight at once.
 *  - 4096 bytes: Linux's PATH_MAX, so no longer relative path names anything the
 *    container's kernel would resolve anyway;
 *  - 256 components: at most 255 parent directories, so a maximal path makes at most 255
 *    ancestor probes (runtime/ancestry.c), and the tar of an upload at most 256 entries.
 */
#define SANDBOX_PATH_MAX_BYTES 4096
#define SANDBOX_PATH_MAX_DEPTH 256

/*
 * paths_normalize, then the bounds above: NULL with an invalid_path
 * DockerSandboxError "Sandbox path is too long: <n> bytes (at most 4096)." or "Sandbox path
 * is too deep: <n> components (at most 256).". The original's own errors come first, with
 * its messages. Entries read back from a container (a listing) are not arguments and are
 * not bounded.
 */
char *paths_argument(const char *input, size_t len, int allow_root, err_t *err);
/* The number of components of a normalized path ("." and "a" are 1, "a/b/" is 2). */
size_t paths_depth(const char *normalized);

/* containerPath(workdir, relative): normalize(workdir), joined with the normalized path. */
char *paths_container(const char *workdir, const char *relative, err_t *err);
/* parentSandboxPath(relative): "." or the normalized parent. */
char *paths_parent(const char *relative, err_t *err);

#endif
