/*
 * upload.h - the list of entries one archive upload carries: files, the directories
 * they need (each added once, parents first), and who owns them.
 *
 * Owns: an upload_plan_t owns its entry paths; file data stays the caller's and must
 * outlive upload_build.
 */
#ifndef SBX_UPLOAD_H
#define SBX_UPLOAD_H

#include <stdint.h>
#include <time.h>

#include "base/buf.h"
#include "base/err.h"
#include "codec/tar.h"

#define UPLOAD_DIR_MODE 0755
#define UPLOAD_FILE_MODE 0644

typedef struct upload_plan {
  tar_entry_spec_t *entries;
  size_t count;
  size_t cap;
  uint32_t uid, gid;
  time_t mtime;
} upload_plan_t;

void upload_plan_init(upload_plan_t *p, uint32_t uid, uint32_t gid);
void upload_plan_free(upload_plan_t *p);
/* Adds `path` (relative; trailing slashes ignored) and, when with_parents, every
 * ancestor first. A directory already in the plan is not added twice. */
int upload_add_dir(upload_plan_t *p, const char *path, int with_parents);
int upload_add_file(upload_plan_t *p, const char *path, const uint8_t *data, size_t len, int with_parents);
int upload_build(const upload_plan_t *p, buf_t *out, err_t *err);

#endif
