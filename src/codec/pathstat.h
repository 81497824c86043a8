/*
 * pathstat.h - the X-Docker-Container-Path-Stat header of the archive endpoints:
 * base64 of a JSON object { name, size, mode, mtime, linkTarget }, where mode is a Go
 * os.FileMode (type bits above the permission bits).
 *
 * Owns: nothing; path_stat_t's strings are malloc'd and freed by path_stat_free.
 */
#ifndef SBX_PATHSTAT_H
#define SBX_PATHSTAT_H

#include <stdint.h>

typedef enum { PS_FILE = 0, PS_DIRECTORY, PS_SYMLINK, PS_OTHER } path_kind_t;

typedef struct path_stat {
  char *name;
  char *link_target;
  uint64_t size;
  uint32_t perm; /* permission bits */
  path_kind_t kind;
} path_stat_t;

/* Returns 0, or -1 when the header is not valid base64 JSON of the expected shape. */
int path_stat_decode(const char *header, path_stat_t *out);
void path_stat_free(path_stat_t *s);

#endif
