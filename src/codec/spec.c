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
  memset(o, 0, sizeof(*o));
}

int sandbox_id_valid(const char *id) {
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
