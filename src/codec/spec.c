/*
 * spec.c - the plain C snapshot of a sandbox's configuration (see spec.h).
 */
#include "codec/spec.h"

#include <stdlib.h>
#include <string.h>

void kv_list_free(kv_list_t *l) {
  for (size_t i = 0; i < l->count; i++) {
    free(l->items[i].key);
    free(l->items[i].value);
  }
  free(l->items);
  l->items = NULL;
  l->count = 0;
}

static void strv_free(char **v, size_t n) {
  for (size_t i = 0; i < n; i++) free(v[i]);
  free(v);
}

void create_opts_free(create_opts_t *o) {
  free(o->id);
  free(o->image);
  free(o->workdir);
  free(o->ws_volume);
  free(o->ports);
  strv_free(o->dirs, o->ndirs);
  for (size_t i = 0; i < o->nfiles; i++) {
    free(o->files[i].path);
    free(o->files[i].data);
  }
  free(o->files);
  kv_list_free(&o->env);
  kv_list_free(&o->labels);
  free(o->user);
  free(o->cpus_text);
  free(o->seccomp_path);
  free(o->seccomp_json);
  strv_free(o->cap_drop, o->ncap_drop);
  strv_free(o->cap_add, o->ncap_add);
  free(o->container_runtime);
  memset(o, 0, sizeof(*o));
}

int spec_id_valid(const char *id) {
  size_t n = strlen(id);
  if (n < 1 || n > 63) return 0;
  for (size_t i = 0; i < n; i++) {
    char c = id[i];
    int ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (i > 0) ok = ok || c == '_' || c == '.' || c == '-';
    if (!ok) return 0;
  }
  return 1;
}

typedef struct spec_entry {
  const char *path;
  int is_file;
} spec_entry_t;

static int cmp_entry(const void *a, const void *b) {
  return strcmp(((const spec_entry_t *)a)->path, ((const spec_entry_t *)b)->path);
}

int spec_find_conflict(const create_opts_t *o, const char **path) {
  size_t n = o->ndirs + o->nfiles;
  *path = NULL;
  if (o->nfiles == 0) return 0;
  spec_entry_t *all = malloc(n * sizeof(*all));
  if (all == NULL) return -1;
  for (size_t i = 0; i < o->ndirs; i++) all[i] = (spec_entry_t){o->dirs[i], 0};
  for (size_t i = 0; i < o->nfiles; i++) all[o->ndirs + i] = (spec_entry_t){o->files[i].path, 1};
  qsort(all, n, sizeof(*all), cmp_entry);
  /* Sorted, a file's twin sits next to it, and the first path below it ("f/...") comes
   * after the paths that share its name as a prefix with a smaller next byte ("f-x", "f.x"):
   * look at the following entries until one no longer starts with the file's path. */
  for (size_t i = 0; i < n && *path == NULL; i++) {
    if (!all[i].is_file) continue;
    const char *f = all[i].path;
    size_t flen = strlen(f);
    if (i > 0 && strcmp(all[i - 1].path, f) == 0) *path = f;
    for (size_t j = i + 1; j < n && *path == NULL && strncmp(all[j].path, f, flen) == 0; j++)
      if (all[j].path[flen] == 0 || all[j].path[flen] == '/') *path = f;
  }
  free(all);
  return *path != NULL;
}
