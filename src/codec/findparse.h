/*
 * findparse.h - parsing the directory listing printed inside the container.
 *
 * Owns: nothing; entries' paths are malloc'd and freed by list_entries_free.
 *
 * The listing has one record per direct child, three fields each ending with a NUL:
 * "<type>\0<size>\0<absolute path>\0" (GNU find -printf '%y\0%s\0%p\0', or the shell
 * loop used on images without GNU find). <type> is find's %y letter (f, d, l, ...) or
 * stat's %F text ("regular file", "directory", "symbolic link", ...). A name is bytes:
 * it is decoded on its own with every ill-formed UTF-8 sequence replaced by U+FFFD, so a
 * name that is not UTF-8 is listed (it cannot be read back by that name) and never breaks
 * its neighbours; newlines and tabs are ordinary characters. Then the original's
 * parseFindEntry: the path is made relative to the workdir and normalized as a sandbox
 * path; size is kept only for files, when it is a safe non-negative integer. Output that
 * does not end a record (a field without its NUL, a cut record) is "Docker returned
 * invalid file metadata." (docker_command_failed).
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
 * Parses the whole output (records as above) against `workdir`.
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
