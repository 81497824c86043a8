/*
 * findparse.h - parsing the directory listing printed inside the container.
 *
 * Owns: nothing; entries' paths are malloc'd and freed by list_entries_free.
 *
 * The listing has one line per direct child: "<absolute path>\t<type>\t<size>". <type>
 * is either GNU find's %y letter (f, d, l, ...) or stat's %F text ("regular file",
 * "regular empty file", "directory", "symbolic link", ...), because images without GNU
 * find (busybox) list through `stat -c`. Parsing follows the original's parseFindEntry:
 * the path is made relative to the workdir and normalized as a sandbox path; size is
 * kept only for files, when it is a safe non-negative integer; a line missing a field is
 * "Docker returned invalid file metadata." (docker_command_failed).
 */
#ifndef SBX_FINDPARSE_H
#define SBX_FINDPARSE_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

typedef enum { FILE_TYPE_FILE = 0, FILE_TYPE_DIRECTORY, FILE_TYPE_SYMLINK, FILE_TYPE_OTHER } file_type_t;

typedef struct list_entry {
  char *path;
  file_type_t type;
  int has_size;
  uint64_t size;
} list_entry_t;

typedef struct list_entries {
  list_entry_t *items;
  size_t count;
} list_entries_t;

/* "file", "directory", "symlink", "other" */
const char *file_type_name(file_type_t t);
/*
 * Parses the whole output (split on "\n", empty lines skipped) against `workdir`.
 * Returns 0, or -1 with err set; on error `out` holds nothing.
 */
int list_parse(const uint8_t *data, size_t len, const char *workdir, list_entries_t *out, err_t *err);
void list_entries_free(list_entries_t *e);
/*
 * Number(raw) of the JavaScript string whose UTF-8 bytes are raw[0..len), judged as the
 * original judges a size: 1 with *out set when Number.isSafeInteger(n) && n >= 0, else 0.
 * (Whitespace is trimmed, "" is 0; decimal, exponent, 0x/0o/0b forms; -0 counts, as 0.)
 */
int js_number_size(const char *raw, size_t len, uint64_t *out);

#endif
