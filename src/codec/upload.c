/*
 * upload.c - upload plans (see upload.h).
 */
#include "codec/upload.h"

#include <stdlib.h>
#include <string.h>

void upload_plan_init(upload_plan_t *p, uint32_t uid, uint32_t gid) {
  memset(p, 0, sizeof(*p));
  p->uid = uid;
  p->gid = gid;
  p->mtime = time(NULL);
}

void upload_plan_free(upload_plan_t *p) {
  for (size_t i = 0; i < p->count; i++) free((char *)p->entries[i].path);
  free(p->entries);
  memset(p, 0, sizeof(*p));
}

static tar_entry_spec_t *push(upload_plan_t *p, char *path) {
  if (p->count == p->cap) {
    size_t cap = p->cap ? p->cap * 2 : 16;
    tar_entry_spec_t *e = realloc(p->entries, cap * sizeof(*e));
    if (e == NULL) return NULL;
    p->entries = e;
    p->cap = cap;
  }
  tar_entry_spec_t *e = &p->entries[p->count++];
  memset(e, 0, sizeof(*e));
  e->path = path;
  e->uid = p->uid;
  e->gid = p->gid;
  e->mtime = p->mtime;
  return e;
}

static char *clean(const char *path) {
  size_t n = strlen(path);
  while (n > 0 && path[n - 1] == '/') n--;
  while (n > 0 && path[0] == '/') {
    path++;
    n--;
  }
  return strndup(path, n);
}

static int has_dir(const upload_plan_t *p, const char *path, size_t len) {
  for (size_t i = 0; i < p->count; i++) {
    const tar_entry_spec_t *e = &p->entries[i];
    if (e->is_dir && strlen(e->path) == len && memcmp(e->path, path, len) == 0) return 1;
  }
  return 0;
}

static int add_dir_n(upload_plan_t *p, const char *path, size_t len) {
  if (len == 0 || (len == 1 && path[0] == '.') || has_dir(p, path, len)) return 0;
  char *copy = strndup(path, len);
  if (copy == NULL) return -1;
  tar_entry_spec_t *e = push(p, copy);
  if (e == NULL) {
    free(copy);
    return -1;
  }
  e->is_dir = 1;
  e->mode = UPLOAD_DIR_MODE;
  return 0;
}

static int add_parents(upload_plan_t *p, const char *path) {
  for (const char *s = strchr(path, '/'); s != NULL; s = strchr(s + 1, '/')) {
    if (add_dir_n(p, path, (size_t)(s - path)) != 0) return -1;
  }
  return 0;
}

int upload_add_dir(upload_plan_t *p, const char *path, int with_parents) {
  char *c = clean(path);
  if (c == NULL) return -1;
  int rc = (with_parents ? add_parents(p, c) : 0) == 0 ? add_dir_n(p, c, strlen(c)) : -1;
  free(c);
  return rc;
}

int upload_add_file(upload_plan_t *p, const char *path, const uint8_t *data, size_t len, int with_parents) {
  char *c = clean(path);
  if (c == NULL) return -1;
  if (with_parents && add_parents(p, c) != 0) {
    free(c);
    return -1;
  }
  tar_entry_spec_t *e = push(p, c);
  if (e == NULL) {
    free(c);
    return -1;
  }
  e->data = data;
  e->len = len;
  e->mode = UPLOAD_FILE_MODE;
  return 0;
}

int upload_build(const upload_plan_t *p, buf_t *out, err_t *err) {
  return tar_build(p->entries, p->count, out, err);
}
