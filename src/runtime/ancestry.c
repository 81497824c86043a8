/*
 * ancestry.c - ancestor checks of workspace paths (see ancestry.h).
 */
#include "runtime/ancestry.h"

#include <stdlib.h>
#include <string.h>

#include "codec/paths.h"

typedef struct probe {
  struct ancestry *owner;
  http_req_t *req;
  int done;
  int exists;
  path_kind_t kind;
} probe_t;

struct ancestry {
  sandbox_t *sb;
  probe_t *probes;
  size_t count;
  size_t pending;
  err_t err;
  ancestry_done_fn done;
  void *ud;
};

void path_ancestors_free(char **list, size_t count) {
  for (size_t i = 0; i < count; i++) free(list[i]);
  free(list);
}

int path_ancestors(const char *rel, char ***out, size_t *count) {
  *out = NULL;
  *count = 0;
  size_t n = strlen(rel);
  while (n > 0 && rel[n - 1] == '/') n--;
  size_t slashes = 0;
  for (size_t i = 0; i < n; i++)
    if (rel[i] == '/') slashes++;
  if (slashes == 0) return 0;
  char **list = calloc(slashes, sizeof(char *));
  if (list == NULL) return -1;
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    if (rel[i] != '/') continue;
    list[k] = strndup(rel, i);
    if (list[k] == NULL) {
      path_ancestors_free(list, k);
      return -1;
    }
    k++;
  }
  *out = list;
  *count = k;
  return 0;
}

static void ancestry_free(ancestry_t *a) {
  for (size_t i = 0; i < a->count; i++) http_req_free(a->probes[i].req);
  free(a->probes);
  err_clear(&a->err);
  sandbox_unref(a->sb);
  free(a);
}

void ancestry_cancel(ancestry_t *a) {
  if (a) ancestry_free(a);
}

static void finish(ancestry_t *a) {
  ancestry_result_t r;
  memset(&r, 0, sizeof(r));
  r.count = a->count;
  for (size_t i = 0; i < a->count; i++) {
    probe_t *p = &a->probes[i];
    if (!p->exists) break;
    if (p->kind != PS_DIRECTORY) {
      r.blocked = 1;
      r.blocked_index = i;
      r.blocked_kind = p->kind;
      break;
    }
    r.existing++;
  }
  ancestry_done_fn done = a->done;
  void *ud = a->ud;
  err_t err = ERR_INIT;
  err_move(&err, &a->err);
  ancestry_free(a);
  done(ud, &r, err_is_set(&err) ? &err : NULL);
  err_clear(&err);
}

static void on_probe(http_req_t *req, void *ud) {
  probe_t *p = ud;
  ancestry_t *a = p->owner;
  p->req = NULL;
  p->done = 1;
  int not_found = http_req_not_found(req);
  if (http_req_ok(req)) {
    path_stat_t st;
    if (req->path_stat != NULL && path_stat_decode(req->path_stat, &st) == 0) {
      p->exists = 1;
      p->kind = st.kind;
      path_stat_free(&st);
    } else if (!err_is_set(&a->err)) {
      err_sandbox(&a->err, CODE_DOCKER_COMMAND_FAILED, "Docker engine returned no usable path metadata.");
    }
  } else if (!not_found && !err_is_set(&a->err)) {
    http_req_error(req, &a->err);
  }
  http_req_free(req);
  if (--a->pending == 0) finish(a);
}

int ancestry_start(sandbox_t *sb, const char *rel, ancestry_done_fn done, void *ud, ancestry_t **out,
                   ancestry_result_t *r, err_t *err) {
  *out = NULL;
  memset(r, 0, sizeof(*r));
  char **list = NULL;
  size_t count = 0;
  if (path_ancestors(rel, &list, &count) != 0) return err_oom(err);
  if (count == 0) return 1;
  ancestry_t *a = calloc(1, sizeof(*a));
  if (a == NULL) {
    path_ancestors_free(list, count);
    return err_oom(err);
  }
  a->sb = sb;
  sandbox_ref(sb);
  a->done = done;
  a->ud = ud;
  err_init(&a->err);
  a->probes = calloc(count, sizeof(probe_t));
  if (a->probes == NULL) goto oom;
  a->count = count;
  char *name = url_escape(sb->container_name);
  for (size_t i = 0; i < count; i++) {
    char *abs = paths_container(sb->workdir, list[i], err);
    char *eabs = abs ? url_escape(abs) : NULL;
    free(abs);
    a->probes[i].owner = a;
    a->probes[i].req = (name && eabs) ? http_req_new(sb->eng, "HEAD", "/containers/%s/archive?path=%s", name, eabs) : NULL;
    free(eabs);
    if (a->probes[i].req == NULL) {
      free(name);
      goto oom;
    }
  }
  free(name);
  path_ancestors_free(list, count);
  list = NULL;
  for (size_t i = 0; i < count; i++) {
    if (http_req_start(a->probes[i].req, on_probe, &a->probes[i], err) != 0) {
      ancestry_free(a);
      return -1;
    }
    a->pending++;
  }
  *out = a;
  return 0;
oom:
  path_ancestors_free(list, count);
  ancestry_free(a);
  if (!err_is_set(err)) err_oom(err);
  return -1;
}
