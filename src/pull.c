/*
 * pull.c - pullImage (see pull.h).
 */
#include "pull.h"

#include <stdlib.h>
#include <string.h>

#include "napi_util.h"

#define MAX_PROGRESS_LINE (1024 * 1024)

typedef struct pull_op {
  op_t op;
  engine_t *eng;
  char *ref;
  http_req_t *req;
  progress_parser_t progress;
} pull_op_t;

int image_ref_split(const char *ref, char **repo, char **tag) {
  *repo = NULL;
  *tag = NULL;
  const char *at = strchr(ref, '@');
  size_t name_len = at ? (size_t)(at - ref) : strlen(ref);
  const char *slash = NULL;
  for (const char *p = ref; p < ref + name_len; p++)
    if (*p == '/') slash = p;
  const char *colon = NULL;
  for (const char *p = slash ? slash : ref; p < ref + name_len; p++)
    if (*p == ':') colon = p;
  size_t repo_len = colon ? (size_t)(colon - ref) : name_len;
  *repo = strndup(ref, repo_len);
  if (at) *tag = strdup(at + 1);
  else if (colon) *tag = strndup(colon + 1, name_len - repo_len - 1);
  else *tag = strdup("latest");
  if (*repo == NULL || *tag == NULL) {
    free(*repo);
    free(*tag);
    *repo = *tag = NULL;
    return -1;
  }
  return 0;
}

void progress_parser_init(progress_parser_t *p) {
  buf_init(&p->line, MAX_PROGRESS_LINE);
  p->error = NULL;
  p->overlong = 0;
}

void progress_parser_free(progress_parser_t *p) {
  buf_free(&p->line);
  free(p->error);
  p->error = NULL;
}

static void progress_line(progress_parser_t *p, const char *line, size_t len) {
  if (p->error != NULL || len == 0) return;
  json_t *j = json_loadb(line, len, 0, NULL);
  if (j == NULL) return; /* progress lines are informative; only errors matter */
  json_t *detail = json_object_get(json_object_get(j, "errorDetail"), "message");
  json_t *error = json_object_get(j, "error");
  if (json_is_string(detail)) p->error = strdup(json_string_value(detail));
  else if (json_is_string(error)) p->error = strdup(json_string_value(error));
  else if (error != NULL || json_object_get(j, "errorDetail") != NULL)
    p->error = strdup("The engine reported an error without a message.");
  json_decref(j);
}

void progress_parser_feed(progress_parser_t *p, const uint8_t *data, size_t len) {
  size_t start = 0;
  for (size_t i = 0; i < len; i++) {
    if (data[i] != '\n') continue;
    if (p->line.len > 0) {
      if (buf_append(&p->line, data + start, i - start) != 0) p->overlong = 1;
      else progress_line(p, (const char *)p->line.data, p->line.len);
      buf_reset(&p->line);
    } else {
      progress_line(p, (const char *)data + start, i - start);
    }
    start = i + 1;
  }
  if (start < len && buf_append(&p->line, data + start, len - start) != 0) {
    p->overlong = 1;
    buf_reset(&p->line);
  }
}

void progress_parser_finish(progress_parser_t *p) {
  if (p->line.len > 0) progress_line(p, (const char *)p->line.data, p->line.len);
  buf_reset(&p->line);
}

static int on_pull_data(http_req_t *req, const uint8_t *data, size_t len, void *ud) {
  (void)req;
  pull_op_t *op = ud;
  progress_parser_feed(&op->progress, data, len);
  return 0;
}

static void on_pull_done(http_req_t *req, void *ud) {
  pull_op_t *op = ud;
  err_t err;
  err_init(&err);
  op->req = NULL;
  if (!http_req_ok(req)) {
    http_req_error(req, &err);
  } else {
    progress_parser_finish(&op->progress);
    if (op->progress.error) {
      err_sandbox(&err, CODE_DOCKER_COMMAND_FAILED, "Docker image pull failed: %s: %s", op->ref,
                  op->progress.error);
    } else if (op->progress.overlong) {
      err_sandbox(&err, CODE_DOCKER_COMMAND_FAILED,
                  "Docker image pull failed: %s: the engine sent a progress line over %d bytes.", op->ref,
                  MAX_PROGRESS_LINE);
    }
  }
  http_req_free(req);
  if (err_is_set(&err)) op_reject(&op->op, &err);
  else op_resolve(&op->op);
  op_release(&op->op);
}

static void pull_start(op_t *o) {
  pull_op_t *op = (pull_op_t *)o;
  char *repo = NULL, *tag = NULL;
  err_t err;
  err_init(&err);
  if (image_ref_split(op->ref, &repo, &tag) != 0) goto oom;
  char *erepo = url_escape(repo), *etag = url_escape(tag);
  free(repo);
  free(tag);
  if (erepo == NULL || etag == NULL) {
    free(erepo);
    free(etag);
    goto oom;
  }
  op->req = http_req_new(op->eng, "POST", "/images/create?fromImage=%s&tag=%s", erepo, etag);
  free(erepo);
  free(etag);
  if (op->req == NULL) goto oom;
  http_req_set_limit(op->req, 64 * 1024);
  op->req->on_data = on_pull_data;
  if (http_req_start(op->req, on_pull_done, op, &err) != 0) {
    http_req_free(op->req);
    op->req = NULL;
    op_reject(o, &err);
    op_release(o);
  }
  return;
oom:
  err_oom(&err);
  op_reject(o, &err);
  op_release(o);
}

static void pull_cancel(op_t *o) {
  pull_op_t *op = (pull_op_t *)o;
  if (op->req) {
    http_req_free(op->req);
    op->req = NULL;
  }
  op_reject_cancelled(o);
  op_release(o);
}

static void pull_destroy(op_t *o) {
  pull_op_t *op = (pull_op_t *)o;
  http_req_free(op->req);
  progress_parser_free(&op->progress);
  engine_unref(op->eng);
  free(op->ref);
}

static const op_vtable_t pull_vt = {"pullImage", pull_start, pull_cancel, NULL, pull_destroy, NULL};

op_t *pull_op_new(addon_t *a, engine_t *eng, const char *ref, err_t *err) {
  pull_op_t *op = (pull_op_t *)op_alloc(a, &pull_vt, sizeof(pull_op_t));
  if (op == NULL) {
    err_oom(err);
    return NULL;
  }
  op->eng = eng;
  engine_ref(eng);
  op->ref = strdup(ref);
  progress_parser_init(&op->progress);
  if (op->ref == NULL) {
    op_discard(&op->op);
    err_oom(err);
    return NULL;
  }
  return &op->op;
}
