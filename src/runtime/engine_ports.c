/*
 * engine_ports.c - waitForPort: resolves with the published port once something listens on the
 * container port, by the original's /proc/net/tcp and tcp6 probe (LISTEN state on the
 * wildcard address). The probe loops inside the container at the caller's interval, so a
 * wait costs one exec however long it lasts; the caller's timeout bounds that exec.
 */
#include "runtime/engine_ports.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#include "napi/args.h"
#include "engine/exec_task.h"
#include "napi/convert.h"
#include "napi/values.h"
#include "napi/op.h"
#include "napi/checks.h"
#include "runtime/sh/port_probe_sh.h"

#define DEFAULT_WAIT_TIMEOUT_MS 30000
#define DEFAULT_WAIT_INTERVAL_MS 100

typedef struct port_op {
  op_t op;
  int container_port;
  int host_port;
  int64_t timeout_ms;
  int64_t interval_ms;
  exec_task_t *task;
} port_op_t;

static void on_probe_done(void *ud, exec_result_t *r, err_t *err) {
  port_op_t *op = ud;
  op->task = NULL;
  err_t e = ERR_INIT;
  if (err != NULL) {
    err_move(&e, err);
  } else if (r->timed_out) {
    err_sandbox(&e, CODE_TIMEOUT, "Waiting for sandbox port timed out: %d", op->container_port);
  } else if (r->exit_code != 0) {
    err_sandbox(&e, CODE_DOCKER_COMMAND_FAILED, "Unable to probe sandbox port: %d", op->container_port);
    e.exec_details = r;
    r = NULL;
  }
  exec_result_free(r);
  op_settle(&op->op, &e);
}

static void port_start(op_t *o) {
  port_op_t *op = (port_op_t *)o;
  exec_spec_t spec;
  memset(&spec, 0, sizeof(spec));
  char port[16], interval[32];
  snprintf(port, sizeof(port), "%d", op->container_port);
  snprintf(interval, sizeof(interval), "%lld.%03lld", (long long)(op->interval_ms / 1000), (long long)(op->interval_ms % 1000));
  const char *argv[] = {"sh", "-c", PORT_PROBE_SH, "anvia-port-probe", port, interval};
  err_t err = ERR_INIT;
  spec.workdir = strdup(op->op.sb->workdir);
  spec.timeout_ms = op->timeout_ms;
  spec.max_output = 4096;
  spec.kill_tree = 1;
  if (spec.workdir == NULL || exec_spec_set_argv(&spec, argv, 6) != 0) {
    exec_spec_free(&spec);
    err_oom(&err);
    goto fail;
  }
  exec_callbacks_t cbs = {.on_done = on_probe_done};
  op->task = exec_task_start(o->sb->eng, o->sb->container_name, &spec, &cbs, op, &err);
  if (op->task != NULL) return;
fail:
  op_settle(o, &err);
}

static void port_stop(op_t *o) {
  port_op_t *op = (port_op_t *)o;
  exec_task_cancel(op->task);
  op->task = NULL;
}

static napi_value port_result(op_t *o) {
  port_op_t *op = (port_op_t *)o;
  return convert_published_port(o->js->env, op->container_port, op->host_port);
}

static void port_destroy(op_t *o) {
  port_op_t *op = (port_op_t *)o;
  exec_task_cancel(op->task);
}

static const op_vtable_t port_vt = {.name = "waitForPort",
    .start = port_start, .stop = port_stop, .result = port_result, .destroy = port_destroy};

/* native.prepareWaitForPort(sandbox, options): the original's checks, in order. */
int ports_parse(napi_env env, sandbox_t *sb, napi_value options, port_wait_req_t *req, err_t *err) {
  napi_value cp = nu_get(env, options, "containerPort");
  double port = 0;
  if (!nu_integer(env, cp, &port) || port < 1 || port > 65535) {
    char *shown = nu_to_display(env, cp);
    err_sandbox(err, CODE_PORT, "Sandbox port must be an integer from 1 to 65535: %s", shown ? shown : "");
    free(shown);
    return -1;
  }
  int host_port = 0;
  for (size_t i = 0; i < sb->nports; i++)
    if (sb->ports[i].container_port == (int)port) host_port = sb->ports[i].host_port;
  if (host_port == 0) return err_sandbox(err, CODE_PORT, "Sandbox port is not published: %d/tcp", (int)port);
  int64_t timeout = DEFAULT_WAIT_TIMEOUT_MS, interval = DEFAULT_WAIT_INTERVAL_MS;
  napi_value t = nu_get(env, options, "timeoutMs"), iv = nu_get(env, options, "intervalMs");
  /* options.x ?? default, then the positive checks */
  if (!nu_is_undefined(env, t) && nu_typeof(env, t) != napi_null &&
      check_positive_safe_integer(env, t, "timeoutMs", &timeout, err))
    return -1;
  if (!nu_is_undefined(env, iv) && nu_typeof(env, iv) != napi_null &&
      check_positive_safe_integer(env, iv, "intervalMs", &interval, err))
    return -1;
  req->container_port = (int)port;
  req->host_port = host_port;
  req->timeout_ms = timeout;
  req->interval_ms = interval;
  return 0;
}

op_t *ports_engine_op(jsenv_t *js, sandbox_t *sb, const port_wait_req_t *req) {
  port_op_t *op = op_new(js, &port_vt, sizeof(*op), sb);
  if (op == NULL) return NULL;
  op->container_port = req->container_port;
  op->host_port = req->host_port;
  op->timeout_ms = req->timeout_ms;
  op->interval_ms = req->interval_ms;
  return &op->op;
}

napi_value ports_prepare_wait(napi_env env, sandbox_t *sb, napi_value *argv) {
  jsenv_t *js = jsenv_get(env);
  napi_value options = args_options(env, argv);
  if (options == NULL) return NULL;
  err_t err = ERR_INIT;
  port_wait_req_t req;
  if (ports_parse(env, sb, options, &req, &err) != 0) return convert_throw_err(js, &err);
  op_t *op = ports_engine_op(js, sb, &req);
  if (op == NULL) {
    err_oom(&err);
    return convert_throw_err(js, &err);
  }
  return op_prepared(op, NULL);
}
