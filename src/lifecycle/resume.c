/*
 * resume.c - resumeSandbox: find the container by name, rebuild the configuration from
 * its labels exactly as the original does, refuse paused or dead containers, restart a
 * running one, start it, and read its published ports again. A sandbox whose first
 * process is the limits' init (codec/lifetime_cmd.h) has the package's binary placed there
 * again before the start, whatever the sandbox left at that path.
 */
#include "lifecycle/resume.h"

#include <stdlib.h>
#include <string.h>

#include "codec/lifetime_cmd.h"
#include "codec/runspec.h"
#include "codec/sandbox_list.h"
#include "engine/agent_place.h"
#include "lifecycle/client.h"
#include "lifecycle/fork.h"
#include "lifecycle/lifetime.h"
#include "napi/convert.h"
#include "napi/op.h"
#include "napi/checks.h"
#include "napi/values.h"
#include "runtime/table.h"
#include "sandbox/sandbox.h"

typedef enum { R_INSPECT = 1, R_STOP, R_INIT_ARCH, R_INIT_PLACE, R_START, R_PORTS, R_DONE } resume_step_t;

typedef struct resume_op {
  op_t op;
  engine_t *eng;
  char *id;
  char *container_name;
  resume_step_t step;
  http_req_t *req;
  sandbox_t *sb;
  int running;
  int init; /* its command is the limits' init: placed again before the start */
  int *ports;
  size_t nports;
} resume_op_t;

static void resume_next(resume_op_t *op);

static int invalid_inspection(err_t *err, const char *field) {
  return err_sandbox(err, CODE_INVALID_STATE, "Sandbox metadata is invalid: %s", field);
}

static const char *required_label(json_t *labels, const char *name, err_t *err) {
  json_t *v = json_object_get(labels, name);
  if (!json_is_string(v) || json_string_length(v) == 0) {
    invalid_inspection(err, name);
    return NULL;
  }
  return json_string_value(v);
}

/* Number(label): a safe integer, positive or non-negative. */
static int label_integer(json_t *labels, const char *name, int positive, int64_t *out, err_t *err) {
  const char *s = required_label(labels, name, err);
  if (s == NULL) return -1;
  /* Number() accepts surrounding whitespace; a safe integer has at most 16 digits. */
  while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r') s++;
  char *end = NULL;
  long long v = strtoll(s, &end, 10);
  while (end && (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r')) end++;
  if (end == s || *end != 0 || v > 9007199254740991LL || v < -9007199254740991LL || (positive ? v <= 0 : v < 0))
    return invalid_inspection(err, name);
  *out = v;
  return 0;
}

static int configuration_from_inspection(resume_op_t *op, json_t *ins, err_t *err) {
  json_t *labels = json_object_get(json_object_get(ins, "Config"), "Labels");
  json_t *schema = json_object_get(labels, LABEL_SCHEMA);
  json_t *id = json_object_get(labels, LABEL_ID);
  if (!json_is_string(schema) || strcmp(json_string_value(schema), SBX_SCHEMA_VERSION) != 0 || !json_is_string(id) ||
      strcmp(json_string_value(id), op->id) != 0)
    return err_sandbox(err, CODE_SANDBOX_NOT_FOUND, "Container is not an Anvia sandbox: %s", op->container_name);
  const char *workdir = required_label(labels, LABEL_WORKDIR, err);
  if (!workdir) return -1;
  const char *ws_type = required_label(labels, LABEL_WS_TYPE, err);
  if (!ws_type) return -1;
  const char *volume = required_label(labels, LABEL_WS_VOLUME, err);
  if (!volume) return -1;
  const char *mode = required_label(labels, LABEL_NETWORK_MODE, err);
  if (!mode) return -1;
  if (strcmp(mode, "none") != 0 && strcmp(mode, "bridge") != 0) return invalid_inspection(err, "network mode");
  int ephemeral = strcmp(ws_type, "ephemeral") == 0;
  if (!ephemeral && strcmp(ws_type, "docker-volume") != 0) return invalid_inspection(err, "workspace type");
  sandbox_t *s = op->sb;
  if (label_integer(labels, LABEL_CMD_TIMEOUT, 1, &s->runtime.command_timeout_ms, err) ||
      label_integer(labels, LABEL_MAX_OUTPUT, 0, &s->runtime.max_output_bytes, err) ||
      label_integer(labels, LABEL_MAX_FILE, 0, &s->runtime.max_file_bytes, err) ||
      label_integer(labels, LABEL_MAX_PROCESSES, 0, &s->runtime.max_processes, err))
    return -1;
  s->id = strdup(op->id);
  s->container_name = strdup(op->container_name);
  s->workdir = strdup(workdir);
  s->volume_name = strdup(volume);
  s->ws_ephemeral = ephemeral;
  s->owns_volume = ephemeral;
  json_t *user = json_object_get(json_object_get(ins, "Config"), "User");
  s->user = strdup(json_is_string(user) ? json_string_value(user) : "");
  s->readonly_rootfs = json_is_true(json_object_get(json_object_get(ins, "HostConfig"), "ReadonlyRootfs"));
  s->container_runtime = strdup(runspec_container_runtime(ins));
  if (!s->id || !s->container_name || !s->workdir || !s->volume_name || !s->user || !s->container_runtime)
    return err_oom(err);
  /* The idle limit's activity tracker, and the image a fork owns (removed with it, once
   * its own id label proves it): only when the fork labels are the container's own
   * (it was made from the image they name), never labels an image brought. */
  lifetime_t limits;
  json_t *image = json_object_get(ins, "Image");
  const char *owned = fork_labels_proven(labels, json_is_string(image) ? json_string_value(image) : NULL)
                          ? label_value(labels, LABEL_FORK_IMAGE)
                          : NULL;
  if (lifetime_from_labels(labels, &limits, err) != 0 || lifetime_track(op->op.js, s, &limits, err) != 0 ||
      fork_image_track(s, owned, 0, err) != 0)
    return -1;
  return 0;
}

static void resume_fail(resume_op_t *op, err_t *err) {
  op->step = R_DONE;
  op_settle(&op->op, err);
}

static int valid_inspection(json_t *ins) {
  return json_is_object(ins) && json_is_object(json_object_get(ins, "Config")) &&
         json_is_object(json_object_get(ins, "State"));
}

/* The init could not be placed: the container is not started (what is at its path now
 * may be the sandbox's own). */
static void init_failed(err_t *err) {
  err_t w = ERR_INIT;
  err_sandbox(&w, err->code ? err->code : CODE_DOCKER_COMMAND_FAILED,
              "Unable to place the sandbox's limits in its container before it starts: %s",
              err->message ? err->message : "unknown error");
  err_set_details(&w, err->details ? json_incref(err->details) : NULL);
  err_move(err, &w);
}

static void on_resume_resp(http_req_t *req, void *ud) {
  resume_op_t *op = ud;
  op->req = NULL;
  err_t err = ERR_INIT;
  int ok = http_req_ok(req);
  int not_found = http_req_not_found(req);
  json_t *ins = NULL;
  if (op->step == R_INSPECT || op->step == R_PORTS) {
    if (op->step == R_INSPECT && not_found) {
      err_sandbox(&err, CODE_SANDBOX_NOT_FOUND, "Sandbox does not exist: %s", op->container_name);
    } else if (!ok) {
      http_req_error(&*req, &err);
      if (err.code && strcmp(err.code, CODE_DOCKER_COMMAND_FAILED) == 0) {
        err_t w = ERR_INIT;
        err_sandbox(&w, CODE_DOCKER_COMMAND_FAILED, "Unable to inspect Docker sandbox.");
        err_set_details(&w, err.details ? json_incref(err.details) : NULL);
        err_move(&err, &w);
      }
    } else {
      ins = json_loadb((const char *)(req->resp.data ? req->resp.data : (uint8_t *)""), req->resp.len, 0, NULL);
      if (!valid_inspection(ins)) {
        err_sandbox(&err, CODE_DOCKER_COMMAND_FAILED, "Docker returned invalid container metadata.");
      }
    }
  } else if (op->step == R_INIT_ARCH) {
    agent_version_answer(op->eng, req, &err);
  } else if (!ok && !(op->step == R_STOP && http_req_answer(req) == 304)) {
    http_req_error(req, &err);
    if (op->step == R_INIT_PLACE) init_failed(&err);
  }
  http_req_free(req);
  if (!err_is_set(&err) && op->step == R_INSPECT) {
    if (configuration_from_inspection(op, ins, &err) == 0) {
      json_t *state = json_object_get(ins, "State");
      if (json_is_true(json_object_get(state, "Paused")) || json_is_true(json_object_get(state, "Dead"))) {
        json_t *status = json_object_get(state, "Status");
        err_sandbox(&err, CODE_INVALID_STATE, "Sandbox cannot be resumed from Docker state: %s",
                    json_is_string(status) ? json_string_value(status) : "unknown");
      } else {
        op->running = json_is_true(json_object_get(state, "Running"));
        op->init = lifetime_cmd_is_init(json_object_get(json_object_get(ins, "Config"), "Cmd"));
        if (configured_ports(ins, &op->ports, &op->nports) != 0) err_oom(&err);
      }
    }
  } else if (!err_is_set(&err) && op->step == R_PORTS) {
    op->sb->ports = calloc(op->nports, sizeof(published_port_t));
    if (op->sb->ports == NULL) err_oom(&err);
    else if (ports_from_inspection(ins, op->ports, op->nports, op->sb->ports, &err) == 0) op->sb->nports = op->nports;
  }
  json_decref(ins);
  if (err_is_set(&err)) {
    resume_fail(op, &err);
    return;
  }
  resume_next(op);
}

static void resume_next(resume_op_t *op) {
  err_t err = ERR_INIT;
  for (;;) {
    op->step++;
    const char *method = "GET", *fmt = NULL;
    http_req_t *req = NULL;
    switch (op->step) {
      case R_INSPECT:
        fmt = "/containers/%s/json";
        break;
      case R_STOP:
        if (!op->running) continue;
        method = "POST";
        fmt = "/containers/%s/stop";
        break;
      case R_INIT_ARCH:
        if (!op->init || engine_arch(op->eng) != NULL) continue;
        req = agent_version_req(op->eng);
        break;
      case R_INIT_PLACE:
        if (!op->init) continue;
        req = agent_init_upload_req(op->eng, op->container_name, &err);
        if (req == NULL) {
          init_failed(&err);
          resume_fail(op, &err);
          return;
        }
        break;
      case R_START:
        method = "POST";
        fmt = "/containers/%s/start";
        break;
      case R_PORTS:
        if (op->nports == 0) continue;
        fmt = "/containers/%s/json";
        break;
      default:
        op->step = R_DONE;
        op_settle(&op->op, NULL);
        return;
    }
    if (req == NULL) {
      char *esc = url_escape(op->container_name);
      req = esc ? http_req_new(op->eng, method, fmt, esc) : NULL;
      free(esc);
    }
    if (req == NULL) {
      err_oom(&err);
      resume_fail(op, &err);
      return;
    }
    if (http_req_start(req, on_resume_resp, op, &err) != 0) {
      http_req_free(req);
      resume_fail(op, &err);
      return;
    }
    op->req = req;
    return;
  }
}

static void resume_start(op_t *o) {
  resume_op_t *op = (resume_op_t *)o;
  op->step = 0;
  resume_next(op);
}

static void resume_stop(op_t *o) {
  resume_op_t *op = (resume_op_t *)o;
  http_req_free(op->req);
  op->req = NULL;
}

static napi_value resume_result(op_t *o) { return convert_sandbox(o->js->env, ((resume_op_t *)o)->sb); }

static void resume_destroy(op_t *o) {
  resume_op_t *op = (resume_op_t *)o;
  http_req_free(op->req);
  sandbox_unref(op->sb);
  engine_unref(op->eng);
  free(op->id);
  free(op->container_name);
  free(op->ports);
}

static const op_vtable_t resume_vt = {.name = "resumeSandbox",
    .start = resume_start, .stop = resume_stop, .result = resume_result, .destroy = resume_destroy};

/* native.prepareResume(client, options) -> token. */
static napi_value js_prepare_resume(napi_env env, napi_callback_info info) {
  jsenv_t *js = jsenv_get(env);
  napi_value options;
  client_t *c = client_call(env, info, &options);
  if (c == NULL) return NULL;
  err_t err = ERR_INIT;
  if (!nu_is_record(env, options)) {
    err_type(&err, "options must be an object.");
    return convert_throw_err(js, &err);
  }
  napi_value id = nu_get(env, options, "id");
  if (check_sandbox_id(env, id, &err) != 0) return convert_throw_err(js, &err);
  resume_op_t *op = op_prepare(env, &resume_vt, sizeof(*op), NULL);
  if (op == NULL) return NULL;
  op->eng = c->eng;
  engine_ref(c->eng);
  op->id = nu_strdup(env, id);
  op->container_name = op->id ? container_name_for(op->id) : NULL;
  op->sb = sandbox_new(c->eng, (transport_t)c->transport);
  if (op->id == NULL || op->container_name == NULL || op->sb == NULL) err_oom(&err);
  return op_prepared(&op->op, &err);
}

void resume_register(napi_env env, napi_value exports) {
  napi_property_descriptor fns[] = {
      {"prepareResume", NULL, js_prepare_resume, NULL, NULL, NULL, napi_default, NULL},
  };
  napi_define_properties(env, exports, sizeof(fns) / sizeof(fns[0]), fns);
}
