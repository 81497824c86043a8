/*
 * tar.h - building upload archives and reading download archives with libarchive.
 *
 * Owns: nothing global. tar_build appends to a caller's buf_t; tar_read_file fills one.
 * Archives are built in memory (no host temp file) in the POSIX ustar/pax format the
 * engine extracts, with explicit owner, group and mode for every entry. Downloads are
 * read from memory; tar_peek lets a caller inspect the first header while the rest of
 * the archive is still arriving.
 */
#ifndef SBX_TAR_H
#define SBX_TAR_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "base/buf.h"
#include "base/err.h"

typedef struct tar_entry_spec {
  const char *path; /* relative, no leading "/", no "..", directories without trailing "/" */
  int is_dir;
  const uint8_t *data; /* files only */
  size_t len;
  unsigned mode; /* permission bits, e.g. 0644 or 0755 */
  uint32_t uid;
  uint32_t gid;
  time_t mtime;
} tar_entry_spec_t;

/* Appends a complete archive of the entries (in order) to `out`. */
int tar_build(const tar_entry_spec_t *entries, size_t count, buf_t *out, err_t *err);

typedef enum { TAR_KIND_FILE = 0, TAR_KIND_DIRECTORY, TAR_KIND_SYMLINK, TAR_KIND_OTHER } tar_kind_t;

typedef struct tar_header_info {
  char name[256]; /* first entry's path as stored, truncated if longer */
  tar_kind_t kind;
  uint64_t size;
} tar_header_info_t;

/*
 * Looks at the first entry of a partial archive. Returns 1 when the header is complete
 * (info filled), 0 when more bytes are needed, -1 with err set when the bytes cannot be
 * an archive.
 */
int tar_peek(const uint8_t *data, size_t len, tar_header_info_t *info, err_t *err);

/*
 * Reads a complete archive that must hold exactly one regular file named `name` (the
 * basename the engine uses). Entries with absolute paths, ".." components, a second
 * entry, a non-regular first entry (invalid_path: "Sandbox path is not a regular file:
 * <display_path>") or a file over max_bytes (file_too_large: "Sandbox file exceeds
 * maxFileBytes (<size> > <max>): <display_path>") are refused. A truncated or corrupt
 * archive is docker_command_failed.
 */
int tar_read_file(const uint8_t *data, size_t len, const char *name, uint64_t max_bytes,
                  const char *display_path, buf_t *out, err_t *err);

#endif
