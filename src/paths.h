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

#include "err.h"

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
 * normalizeSandboxPath(input, { allowRoot }): NULL with an invalid_path DockerSandboxError
 * in `err` ("Sandbox path cannot be empty.", "... cannot contain null bytes.", "... must be
 * relative: <input>", "... cannot leave the workspace: <input>", "... must refer to a file
 * or directory inside the workspace."). `len` is the byte length (the input may hold NULs).
 */
char *sandbox_path_normalize(const char *input, size_t len, int allow_root, err_t *err);
/* containerPath(workdir, relative): normalize(workdir), joined with the normalized path. */
char *sandbox_container_path(const char *workdir, const char *relative, err_t *err);
/* parentSandboxPath(relative): "." or the normalized parent. */
char *sandbox_parent_path(const char *relative, err_t *err);

#endif
