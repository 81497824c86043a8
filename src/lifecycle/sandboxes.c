/*
 * sandboxes.c - listSandboxes and pruneSandboxes (see sandboxes.h).
 *
 * Owns: an operation owns its one request in flight, the parsed list and, for a prune,
 * the per-sandbox outcome until it settles.
 *
 * Listing is one request: GET /containers/json?all=1 with a label filter (the schema
 * label, then the caller's labels), read by codec/sandbox_list.c; the state filter is
 * applied to what it read. Pruning lists the same way, selects (see prune_selects), and
 * for each selected sandbox, one after the other: checks that an ephemeral workspace
 * volume really is the sandbox's own (it carries the sandbox's id label, as this package
 * and the original label the volumes they create; a docker-volume workspace is never
 * touched), that a fork's image really is its own (its id label, as POST /commit writes
 * it; the fork labels themselves count only on a container made from that image, see
 * codec/sandbox_list.h), removes the container (forced only when it was selected although running,
 * by createdBeforeMs: a stopped one that was resumed meanwhile is refused by the engine
 * and reported as failed), the volume, and the image a fork owns (kept when another fork
 * still builds on it: it goes with the last one). A dry run makes the checks and removes
 * nothing.
 */
#include "lifecycle/sandboxes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lifecycle/client.h"
#include "napi/convert.h"
#include "napi/op.h"
#include "napi/checks.h"
#include "napi/values.h"

#define MAX_LIST_BYTES (64u * 1024 * 1024)

typedef enum { I_VOLUME_CHECK = 1, I_IMAGE_CHECK, I_CONTAINER, I_VOLUME, I_IMAGE, I_DONE } item_step_t;

typedef struct list_op {
  op_t op;
  engine_t *eng;
  int prune;
  kv_list_t labels;
  int has_state;
  sbx_state_t state;
  int has_stopped_for, has_created_before, dry_run;
  int64_t stopped_for_ms, created_before_ms;
  http_req_t *req;
  int listed;
  int64_t now_ms;
  sandbox_summary_t *items;
  size_t n;
  /* prune */
  uint8_t *chosen, *forced, *volume_ours, *image_ours, *removed;
  err_t *failures;
  size_t cur;
  item_step_t step;
} list_op_t;

/* The wall clock, in ms since the epoch. */
static int64_t wall_clock_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* new Date(ms).toISOString() */
static napi_value iso_time(napi_env env, int64_t ms) {
  time_t secs = (time_t)(ms >= 0 ? ms / 1000 : (ms - 999) / 1000);
  int millis = (int)(ms - (int64_t)secs * 1000);
  struct tm tm;
  if (gmtime_r(&secs, &tm) == NULL) return nu_null(env);
  char text[64];
  snprintf(text, sizeof(text), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
           tm.tm_hour, tm.tm_min, tm.tm_sec, millis);
  return nu_string(env, text);
}

static void set(napi_env env, napi_value o, const char *key, napi_value v) {
  if (v != NULL) napi_set_named_property(env, o, key, v);
}

/* { containerPort, host: "127.0.0.1", hostPort, protocol: "tcp" }, as publishedPorts. */
static napi_value port_to_js(napi_env env, const published_port_t *p) {
  napi_value o;
  NU_CALL(env, napi_create_object(env, &o));
  set(env, o, "containerPort", nu_number(env, p->container_port));
  set(env, o, "host", nu_string(env, "127.0.0.1"));
  set(env, o, "hostPort", nu_number(env, p->host_port));
  set(env, o, "protocol", nu_string(env, "tcp"));
  return o;
}

/* { id, containerName, state, image, createdAt, stoppedAt?, exitCode?, workdir?,
 *   workspace?, ports, labels, lifetime?, forkOf? }; `now_ms` is the wall clock the
 * status line's "ago" is counted back from. */
static napi_value sandbox_summary_to_js(napi_env env, const sandbox_summary_t *s, int64_t now_ms) {
  napi_value o, ports, labels;
  NU_CALL(env, napi_create_object(env, &o));
  set(env, o, "id", nu_string(env, s->id));
  set(env, o, "containerName", nu_string(env, s->container_name));
  set(env, o, "state", nu_string(env, sbx_state_name(s->state)));
  set(env, o, "image", nu_string(env, s->image));
  set(env, o, "createdAt", s->created_s >= 0 ? iso_time(env, s->created_s * 1000) : nu_null(env));
  if (s->stopped_known) set(env, o, "stoppedAt", iso_time(env, now_ms - s->stopped_min_ms));
  if (s->exit_code_known) set(env, o, "exitCode", nu_number(env, s->exit_code));
  if (s->workdir) set(env, o, "workdir", nu_string(env, s->workdir));
  if (s->ws_known) {
    napi_value ws;
    napi_create_object(env, &ws);
    set(env, ws, "type", nu_string(env, s->ws_ephemeral ? "ephemeral" : "docker-volume"));
    set(env, ws, s->ws_ephemeral ? "volume" : "name", nu_string(env, s->volume));
    set(env, o, "workspace", ws);
  }
  napi_create_array_with_length(env, s->nports, &ports);
  for (size_t i = 0; i < s->nports; i++)
    napi_set_element(env, ports, (uint32_t)i, port_to_js(env, &s->ports[i]));
  set(env, o, "ports", ports);
  napi_create_object(env, &labels);
  for (size_t i = 0; i < s->labels.count; i++) set(env, labels, s->labels.items[i].key, nu_string(env, s->labels.items[i].value));
  set(env, o, "labels", labels);
  if (lifetime_any(&s->lifetime)) {
    napi_value l;
    napi_create_object(env, &l);
    if (s->lifetime.idle_ms > 0) set(env, l, "idleTimeoutMs", nu_number(env, (double)s->lifetime.idle_ms));
    if (s->lifetime.max_ms > 0) set(env, l, "maxLifetimeMs", nu_number(env, (double)s->lifetime.max_ms));
    set(env, o, "lifetime", l);
  }
  if (s->fork_parent) set(env, o, "forkOf", nu_string(env, s->fork_parent));
  return o;
}

/* ---- prune selection ---- */

/* Whether the sandbox goes, and whether its removal must be forced (it runs). */
static int prune_selects(const list_op_t *op, const sandbox_summary_t *s, int *force) {
  *force = 0;
  if (s->state == SBX_REMOVING) return 0;
  if (op->has_created_before) {
    if (s->created_s < 0 || s->created_s * 1000 >= op->created_before_ms) return 0;
    if (!op->has_stopped_for) {
      *force = s->state != SBX_STOPPED && s->state != SBX_DEAD;
      return 1;
    }
  }
  if (s->state != SBX_STOPPED && s->state != SBX_DEAD) return 0;
  int64_t want = op->has_stopped_for ? op->stopped_for_ms : 0;
  if (want == 0) return 1;
  /* The status line rounds: go by the least it can mean, so nothing goes early. */
  if (s->stopped_known) return s->stopped_min_ms >= want;
  /* Never started (Status "Created") or no time given: stopped since it was made. */
  if (!s->exit_code_known && s->created_s >= 0) return op->now_ms - s->created_s * 1000 >= want;
  return 0;
}

/* ---- requests ---- */

static void on_resp(http_req_t *req, void *ud);
static void item_next(list_op_t *op);

static int send_req(list_op_t *op, http_req_t *req, err_t *err) {
  if (req == NULL) return err_oom(err);
  if (http_req_start(req, on_resp, op, err) != 0) {
    http_req_free(req);
    return -1;
  }
  op->req = req;
  return 0;
}

static http_req_t *req_named(list_op_t *op, const char *method, const char *fmt, const char *name) {
  char *esc = url_escape(name);
  http_req_t *r = esc ? http_req_new(op->eng, method, fmt, esc) : NULL;
  free(esc);
  return r;
}

/* GET /containers/json?all=1&filters={"label":["anvia.sandbox.schema=1", "k=v", ...]} */
static http_req_t *list_req(list_op_t *op) {
  json_t *label = json_array();
  json_t *filters = label ? json_pack("{s:o}", "label", label) : NULL;
  if (filters == NULL) return NULL;
  json_array_append_new(label, json_string(LABEL_SCHEMA "=" SBX_SCHEMA_VERSION));
  for (size_t i = 0; i < op->labels.count; i++) {
    size_t len = strlen(op->labels.items[i].key) + strlen(op->labels.items[i].value) + 2;
    char *kv = malloc(len);
    if (kv == NULL) {
      json_decref(filters);
      return NULL;
    }
    snprintf(kv, len, "%s=%s", op->labels.items[i].key, op->labels.items[i].value);
    json_array_append_new(label, json_string(kv));
    free(kv);
  }
  char *text = json_dumps(filters, JSON_COMPACT);
  json_decref(filters);
  http_req_t *r = text ? req_named(op, "GET", "/containers/json?all=1&filters=%s", text) : NULL;
  free(text);
  if (r) http_req_set_limit(r, MAX_LIST_BYTES);
  return r;
}

static void finish(list_op_t *op, err_t *err) { op_settle(&op->op, err); }

static void start_prune(list_op_t *op) {
  size_t n = op->n ? op->n : 1;
  op->chosen = calloc(n, 1);
  op->forced = calloc(n, 1);
  op->volume_ours = calloc(n, 1);
  op->image_ours = calloc(n, 1);
  op->removed = calloc(n, 1);
  op->failures = calloc(n, sizeof(err_t));
  if (!op->chosen || !op->forced || !op->volume_ours || !op->image_ours || !op->removed || !op->failures) {
    err_t err = ERR_INIT;
    err_oom(&err);
    finish(op, &err);
    return;
  }
  for (size_t i = 0; i < op->n; i++) {
    int force = 0;
    op->chosen[i] = (uint8_t)prune_selects(op, &op->items[i], &force);
    op->forced[i] = (uint8_t)force;
    err_init(&op->failures[i]);
  }
  op->cur = 0;
  op->step = 0;
  item_next(op);
}

/* The current sandbox failed at this step: record why, go on with the next. */
static void item_failed(list_op_t *op, err_t *err) {
  err_move(&op->failures[op->cur], err);
  op->cur++;
  op->step = 0;
  item_next(op);
}

static void item_next(list_op_t *op) {
  err_t err = ERR_INIT;
  for (;;) {
    if (op->cur >= op->n) {
      finish(op, NULL);
      return;
    }
    if (!op->chosen[op->cur]) {
      op->cur++;
      continue;
    }
    sandbox_summary_t *s = &op->items[op->cur];
    op->step++;
    http_req_t *req = NULL;
    switch (op->step) {
      case I_VOLUME_CHECK:
        if (!s->ws_known || !s->ws_ephemeral) continue;
        req = req_named(op, "GET", "/volumes/%s", s->volume);
        break;
      case I_IMAGE_CHECK:
        if (op->dry_run || s->owned_image == NULL) continue;
        req = req_named(op, "GET", "/images/%s/json", s->owned_image);
        break;
      case I_CONTAINER:
        if (op->dry_run) continue;
        req = req_named(op, "DELETE", op->forced[op->cur] ? "/containers/%s?force=1" : "/containers/%s",
                        s->container_name);
        break;
      case I_VOLUME:
        if (op->dry_run || !op->volume_ours[op->cur]) continue;
        req = req_named(op, "DELETE", "/volumes/%s", s->volume);
        break;
      case I_IMAGE:
        if (op->dry_run || !op->image_ours[op->cur]) continue;
        req = req_named(op, "DELETE", "/images/%s", s->owned_image);
        break;
      default:
        op->removed[op->cur] = 1;
        op->cur++;
        op->step = 0;
        continue;
    }
    if (send_req(op, req, &err) != 0) {
      item_failed(op, &err);
      return;
    }
    return;
  }
}

/* Whether the volume the engine described carries the sandbox's id label. */
static int volume_is_sandboxes(http_req_t *req, const char *id) {
  json_t *v = json_loadb((const char *)(req->resp.data ? req->resp.data : (uint8_t *)""), req->resp.len, 0, NULL);
  json_t *label = json_object_get(json_object_get(v, "Labels"), LABEL_ID);
  int ours = json_is_string(label) && strcmp(json_string_value(label), id) == 0;
  json_decref(v);
  return ours;
}

static void on_resp(http_req_t *req, void *ud) {
  list_op_t *op = ud;
  op->req = NULL;
  err_t err = ERR_INIT;
  int ok = http_req_ok(req), not_found = http_req_not_found(req);
  if (!op->listed) {
    op->listed = 1;
    op->now_ms = wall_clock_ms();
    if (!ok) http_req_error(req, &err);
    else sandboxes_parse(req->resp.data, req->resp.len, &op->items, &op->n, &err);
    http_req_free(req);
    if (err_is_set(&err) || !op->prune) finish(op, &err);
    else start_prune(op);
    return;
  }
  sandbox_summary_t *s = &op->items[op->cur];
  switch (op->step) {
    case I_VOLUME_CHECK:
      if (ok) op->volume_ours[op->cur] = (uint8_t)volume_is_sandboxes(req, s->id);
      else if (!not_found) http_req_error(req, &err);
      break;
    case I_IMAGE_CHECK:
      /* Removed only when its own id label says it is this fork's (404: gone already). */
      if (ok) op->image_ours[op->cur] = (uint8_t)image_is_sandboxes(req->resp.data, req->resp.len, s->id);
      else if (!not_found) http_req_error(req, &err);
      break;
    case I_CONTAINER:
      if (!ok && !not_found) {
        http_req_error(req, &err);
        err_t w = ERR_INIT;
        err_sandbox(&w, CODE_DOCKER_COMMAND_FAILED, "Unable to remove Docker sandbox.");
        err_set_details(&w, err.details ? json_incref(err.details) : NULL);
        err_move(&err, &w);
      }
      break;
    case I_VOLUME:
      if (!ok && !not_found) {
        http_req_error(req, &err);
        err_t w = ERR_INIT;
        err_sandbox(&w, CODE_DOCKER_COMMAND_FAILED, "Unable to remove Docker sandbox volume.");
        err_set_details(&w, err.details ? json_incref(err.details) : NULL);
        err_move(&err, &w);
      }
      break;
    case I_IMAGE:
      /* 409: another fork still builds on it (it goes with the last one). */
      if (!ok && !not_found && http_req_answer(req) != 409) http_req_error(req, &err);
      break;
    default:
      break;
  }
  http_req_free(req);
  if (err_is_set(&err)) {
    item_failed(op, &err);
    return;
  }
  item_next(op);
}

/* ---- op plumbing ---- */

static void list_start(op_t *o) {
  list_op_t *op = (list_op_t *)o;
  err_t err = ERR_INIT;
  if (send_req(op, list_req(op), &err) != 0) finish(op, &err);
}

static void list_stop(op_t *o) {
  list_op_t *op = (list_op_t *)o;
  http_req_free(op->req);
  op->req = NULL;
}

static int state_passes(const list_op_t *op, const sandbox_summary_t *s) { return !op->has_state || s->state == op->state; }

static napi_value list_result(op_t *o) {
  list_op_t *op = (list_op_t *)o;
  napi_env env = o->js->env;
  napi_value arr;
  NU_CALL(env, napi_create_array(env, &arr));
  uint32_t k = 0;
  if (!op->prune) {
    for (size_t i = 0; i < op->n; i++)
      if (state_passes(op, &op->items[i])) napi_set_element(env, arr, k++, sandbox_summary_to_js(env, &op->items[i], op->now_ms));
    return arr;
  }
  napi_value result, failed;
  NU_CALL(env, napi_create_object(env, &result));
  NU_CALL(env, napi_create_array(env, &failed));
  uint32_t f = 0;
  for (size_t i = 0; i < op->n; i++) {
    if (!op->chosen[i]) continue;
    if (op->removed[i]) {
      napi_value item = sandbox_summary_to_js(env, &op->items[i], op->now_ms);
      if (op->volume_ours[i]) set(env, item, "removedVolume", nu_string(env, op->items[i].volume));
      napi_set_element(env, arr, k++, item);
    } else if (err_is_set(&op->failures[i])) {
      napi_value item;
      napi_create_object(env, &item);
      set(env, item, "id", nu_string(env, op->items[i].id));
      set(env, item, "error", convert_error_value(o->js, &op->failures[i]));
      napi_set_element(env, failed, f++, item);
    }
  }
  set(env, result, "removed", arr);
  set(env, result, "failed", failed);
  set(env, result, "dryRun", nu_bool(env, op->dry_run));
  return result;
}

static void list_destroy(op_t *o) {
  list_op_t *op = (list_op_t *)o;
  http_req_free(op->req);
  engine_unref(op->eng);
  kv_list_free(&op->labels);
  if (op->failures)
    for (size_t i = 0; i < op->n; i++) err_clear(&op->failures[i]);
  free(op->failures);
  free(op->chosen);
  free(op->forced);
  free(op->volume_ours);
  free(op->image_ours);
  free(op->removed);
  sandbox_list_free(op->items, op->n);
}

static const op_vtable_t list_vt = {.name = "listSandboxes",
    .start = list_start, .stop = list_stop, .result = list_result, .destroy = list_destroy};

/* ---- options ---- */

/* labels: undefined, or an object of strings (copyStringRecord's checks and messages). */
static int read_labels(napi_env env, napi_value v, kv_list_t *out, err_t *err) {
  out->items = NULL;
  out->count = 0;
  if (nu_is_undefined(env, v)) return 0;
  if (!nu_is_record(env, v)) return err_type(err, "labels must be an object.");
  nu_keys_t keys;
  if (nu_keys(env, v, &keys) != 0) return err_oom(err);
  out->items = keys.count ? calloc(keys.count, sizeof(kv_t)) : NULL;
  if (keys.count && out->items == NULL) return err_oom(err);
  for (uint32_t i = 0; i < keys.count; i++) {
    napi_value key = nu_key_at(env, &keys, i);
    char *k = nu_strdup(env, key);
    napi_value value = NULL;
    if (k == NULL || napi_get_property(env, v, key, &value) != napi_ok) {
      free(k);
      kv_list_free(out);
      return err_oom(err);
    }
    if (nu_typeof(env, value) != napi_string) {
      err_type(err, "labels.%s must be a string.", k);
      free(k);
      kv_list_free(out);
      return -1;
    }
    out->items[out->count].key = k;
    out->items[out->count].value = nu_strdup(env, value);
    if (out->items[out->count++].value == NULL) {
      kv_list_free(out);
      return err_oom(err);
    }
  }
  return 0;
}

static napi_value prepare(napi_env env, napi_callback_info info, int prune) {
  jsenv_t *js = jsenv_get(env);
  napi_value options;
  client_t *c = client_call(env, info, &options);
  if (c == NULL) return NULL;
  err_t err = ERR_INIT;
  if (nu_is_undefined(env, options)) napi_create_object(env, &options);
  if (!nu_is_record(env, options)) {
    err_type(&err, "options must be an object.");
    return convert_throw_err(js, &err);
  }
  list_op_t *op = op_prepare(env, &list_vt, sizeof(*op), NULL);
  if (op == NULL) return NULL;
  op->eng = c->eng;
  engine_ref(c->eng);
  op->prune = prune;
  if (read_labels(env, nu_get(env, options, "labels"), &op->labels, &err) != 0) return op_prepared(&op->op, &err);
  if (!prune) {
    napi_value state = nu_get(env, options, "state");
    if (!nu_is_undefined(env, state)) {
      char *name = nu_strdup(env, state);
      if (name == NULL || sbx_state_from_name(name, &op->state) != 0)
        err_type(&err, "state must be one of running, stopped, paused, restarting, removing, dead.");
      free(name);
      op->has_state = 1;
    }
    return op_prepared(&op->op, &err);
  }
  napi_value v = nu_get(env, options, "stoppedForMs");
  if (!nu_is_undefined(env, v)) {
    op->has_stopped_for = 1;
    if (check_nonnegative_safe_integer(env, v, "stoppedForMs", &op->stopped_for_ms, &err) != 0)
      return op_prepared(&op->op, &err);
  }
  v = nu_get(env, options, "createdBeforeMs");
  if (!nu_is_undefined(env, v)) {
    op->has_created_before = 1;
    if (check_nonnegative_safe_integer(env, v, "createdBeforeMs", &op->created_before_ms, &err) != 0)
      return op_prepared(&op->op, &err);
  }
  v = nu_get(env, options, "dryRun");
  if (!nu_is_undefined(env, v)) {
    bool b = false;
    if (nu_typeof(env, v) != napi_boolean) err_type(&err, "dryRun must be a boolean.");
    else napi_get_value_bool(env, v, &b);
    op->dry_run = b;
  }
  return op_prepared(&op->op, &err);
}

static napi_value js_prepare_list(napi_env env, napi_callback_info info) { return prepare(env, info, 0); }
static napi_value js_prepare_prune(napi_env env, napi_callback_info info) { return prepare(env, info, 1); }

void sandboxes_register(napi_env env, napi_value exports) {
  napi_property_descriptor fns[] = {
      {"prepareListSandboxes", NULL, js_prepare_list, NULL, NULL, NULL, napi_default, NULL},
      {"preparePruneSandboxes", NULL, js_prepare_prune, NULL, NULL, NULL, napi_default, NULL},
  };
  napi_define_properties(env, exports, sizeof(fns) / sizeof(fns[0]), fns);
}
