/*
 * err.c - building and releasing err_t records (see err.h).
 */
#include "base/err.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/exec_result.h"

static char oom_message[] = "Out of memory.";

void err_init(err_t *e) { memset(e, 0, sizeof(*e)); }

void err_clear(err_t *e) {
  if (e->message != oom_message) free(e->message);
  if (e->details) json_decref(e->details);
  exec_result_free(e->exec_details);
  free(e->cause);
  memset(e, 0, sizeof(*e));
}

static int err_vset(err_t *e, err_kind_t kind, const char *code, const char *fmt, va_list ap) {
  err_clear(e);
  e->kind = kind;
  e->code = code;
  va_list copy;
  va_copy(copy, ap);
  int n = vsnprintf(NULL, 0, fmt, copy);
  va_end(copy);
  if (n < 0) n = 0;
  e->message = malloc((size_t)n + 1);
  if (e->message == NULL) {
    e->message = oom_message;
    return -1;
  }
  vsnprintf(e->message, (size_t)n + 1, fmt, ap);
  return -1;
}

int err_set(err_t *e, err_kind_t kind, const char *code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  err_vset(e, kind, code, fmt, ap);
  va_end(ap);
  return -1;
}

int err_sandbox(err_t *e, const char *code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  err_vset(e, ERRK_SANDBOX, code, fmt, ap);
  va_end(ap);
  return -1;
}

int err_type(err_t *e, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  err_vset(e, ERRK_TYPE, NULL, fmt, ap);
  va_end(ap);
  return -1;
}

int err_range(err_t *e, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  err_vset(e, ERRK_RANGE, NULL, fmt, ap);
  va_end(ap);
  return -1;
}

int err_oom(err_t *e) {
  err_clear(e);
  e->kind = ERRK_SANDBOX;
  e->code = CODE_DOCKER_COMMAND_FAILED;
  e->message = oom_message;
  return -1;
}

void err_set_details(err_t *e, json_t *details) {
  if (e->details) json_decref(e->details);
  e->details = details;
}

void err_set_cause(err_t *e, const char *cause) {
  free(e->cause);
  e->cause = cause ? strdup(cause) : NULL;
}

int err_copy(err_t *dst, const err_t *src) {
  err_set(dst, src->kind, src->code, "%s", src->message ? src->message : "");
  if (src->details) err_set_details(dst, json_deep_copy(src->details));
  if (src->cause) err_set_cause(dst, src->cause);
  return -1;
}

void err_move(err_t *dst, err_t *src) {
  err_clear(dst);
  *dst = *src;
  memset(src, 0, sizeof(*src));
}
