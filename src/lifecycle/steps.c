/*
 * steps.c - a change made and undone in steps on the engine (see steps.h).
 */
#include "lifecycle/steps.h"

#include <stdlib.h>
#include <string.h>

#include "codec/runspec.h"
#include "napi/convert.h"
#include "napi/values.h"

void steps_init(steps_t *s, engine_t *eng, size_t max_rb_err) {
  memset(s, 0, sizeof(*s));
  s->eng = eng;
  s->max_rb_err = max_rb_err < STEPS_MAX_RB_ERRORS ? max_rb_err : STEPS_MAX_RB_ERRORS;
}

void steps_free(steps_t *s) {
  steps_drop_req(s);
  err_clear(&s->err);
  for (size_t i = 0; i < s->n_rb_err; i++) err_clear(&s->rb_err[i]);
  s->n_rb_err = 0;
}

void steps_drop_req(steps_t *s) {
  http_req_free(s->req);
  s->req = NULL;
}

http_req_t *steps_req(steps_t *s, const char *method, const char *fmt, const char *name) {
  char *esc = url_escape(name);
  http_req_t *r = esc ? http_req_new(s->eng, method, fmt, esc) : NULL;
  free(esc);
  return r;
}

/* One of the undoing's failures, while there is room (taken). */
static void keep_rb(steps_t *s, err_t *err) {
  if (s->n_rb_err < s->max_rb_err) err_move(&s->rb_err[s->n_rb_err++], err);
  err_clear(err);
}

int steps_send(steps_t *s, http_req_t *req, http_done_fn on_resp, void *ud) {
  err_t err = ERR_INIT;
  if (req == NULL) {
    err_oom(&err);
  } else if (http_req_start(req, on_resp, ud, &err) == 0) {
    s->req = req;
    return 0;
  } else {
    http_req_free(req);
  }
  if (s->rolling_back) keep_rb(s, &err);
  else err_move(&s->err, &err);
  return -1;
}

void steps_wrap_failure(err_t *err, const char *message) {
  if (err->code == NULL || strcmp(err->code, CODE_DOCKER_COMMAND_FAILED) != 0) return;
  err_t w = ERR_INIT;
  err_sandbox(&w, CODE_DOCKER_COMMAND_FAILED, "%s", message);
  err_set_details(&w, err->details ? json_incref(err->details) : NULL);
  err_move(err, &w);
}

void steps_keep_rb_failure(steps_t *s, http_req_t *req, const char *message) {
  if (s->n_rb_err >= s->max_rb_err) return;
  err_t *e = &s->rb_err[s->n_rb_err++];
  http_req_error(req, e);
  if (message != NULL) steps_wrap_failure(e, message);
}

int steps_cancel(steps_t *s, int changing) {
  if (s->rolling_back) return 0;
  s->cancelled_by_caller = 1;
  if (changing && s->req != NULL) {
    s->rollback_when_answered = 1;
    return 0;
  }
  steps_drop_req(s);
  return 1;
}

napi_value steps_rejection(steps_t *s, op_t *o, const char *aggregate_message) {
  napi_value primary = s->cancelled_by_caller ? op_cancel_reason(o) : convert_error_value(o->js, &s->err);
  if (s->n_rb_err == 0) return primary;
  napi_value errors[1 + STEPS_MAX_RB_ERRORS];
  errors[0] = primary;
  for (size_t i = 0; i < s->n_rb_err; i++) errors[1 + i] = convert_error_value(o->js, &s->rb_err[i]);
  return nu_aggregate_error(o->js->env, errors, 1 + s->n_rb_err, aggregate_message);
}

void steps_must_be_absent(http_req_t *req, const char *name, err_t *err) {
  if (http_req_ok(req)) {
    err_sandbox(err, CODE_INVALID_STATE, "A Docker container already exists for sandbox: %s", name);
  } else if (!http_req_not_found(req)) {
    http_req_error(req, err);
    steps_wrap_failure(err, "Unable to check whether the Docker sandbox already exists.");
  }
}

void steps_read_ports(http_req_t *req, const int *ports, size_t n, sandbox_t *sb, err_t *err) {
  if (!http_req_ok(req)) {
    http_req_error(req, err);
    return;
  }
  json_t *inspection = http_req_json(req, err);
  if (inspection) {
    sb->ports = calloc(n, sizeof(published_port_t));
    if (sb->ports == NULL) err_oom(err);
    else if (ports_from_inspection(inspection, ports, n, sb->ports, err) == 0) sb->nports = n;
  }
  json_decref(inspection);
}
