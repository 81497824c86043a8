/*
 * sandbox.c - the sandbox model (see sandbox.h).
 */
#include "sandbox/sandbox.h"

#include <stdlib.h>

struct sandbox_ext {
  const void *key;
  void *state;
  void (*free_fn)(void *state);
  sandbox_ext_t *next;
};

sandbox_t *sandbox_new(engine_t *eng, transport_t transport) {
  sandbox_t *s = calloc(1, sizeof(*s));
  if (s == NULL) return NULL;
  s->refs = 1;
  s->eng = eng;
  engine_ref(eng);
  s->transport = transport;
  return s;
}

void sandbox_ref(sandbox_t *s) { s->refs++; }

void sandbox_unref(sandbox_t *s) {
  if (s == NULL || --s->refs > 0) return;
  while (s->exts) {
    sandbox_ext_t *x = s->exts;
    s->exts = x->next;
    if (x->free_fn) x->free_fn(x->state);
    free(x);
  }
  engine_unref(s->eng);
  free(s->id);
  free(s->container_name);
  free(s->workdir);
  free(s->volume_name);
  kv_list_free(&s->env);
  free(s->ports);
  free(s->user);
  free(s->container_runtime);
  free(s);
}

int sandbox_attach(sandbox_t *s, const void *key, void *state, void (*free_fn)(void *state)) {
  sandbox_ext_t *x = malloc(sizeof(*x));
  if (x == NULL) return -1;
  x->key = key;
  x->state = state;
  x->free_fn = free_fn;
  x->next = s->exts;
  s->exts = x;
  return 0;
}

void *sandbox_attached(const sandbox_t *s, const void *key) {
  for (const sandbox_ext_t *x = s->exts; x != NULL; x = x->next)
    if (x->key == key) return x->state;
  return NULL;
}

void *sandbox_attached_new(sandbox_t *s, const void *key, size_t size, void (*free_fn)(void *state)) {
  void *state = sandbox_attached(s, key);
  if (state != NULL) return state;
  state = calloc(1, size);
  if (state == NULL || sandbox_attach(s, key, state, free_fn) != 0) {
    free(state);
    return NULL;
  }
  return state;
}
