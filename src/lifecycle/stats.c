/*
 * stats.c - sandbox.stats(): one sample of the container's resource use and of its
 * workspace's disk use.
 *
 * Owns: a stats operation owns its request or exec task in flight and the parsed sample.
 *
 * Two steps, one after the other (so the second's process is not counted by the first):
 * GET /containers/{id}/stats?stream=false (the engine answers once it has two readings
 * about a second apart, which gives the CPU use over that second: about 1 s of the
 * operation's time), then `du -sk <workdir>` run in the container as the sandbox's user
 * (one exec, ~0.1 s plus the walk of the workspace's tree: disk blocks in use, hard links
 * counted once; a directory the user cannot read is left out and `complete` says so).
 * No engine call gives one volume's size cheaply: GET /system/df sizes every volume,
 * image and container on the engine. Podman's stream=false reply has one reading only
 * (no precpu_stats): the request is then made again a second later, and the CPU use is
 * the one between the two replies, as Docker's would be.
 */
#include "lifecycle/stats.h"

#include <stdlib.h>
#include <string.h>

#include "codec/stats_parse.h"
#include "engine/exec_task.h"
#include "engine/timer.h"
#include "napi/convert.h"
#include "napi/op.h"
#include "napi/values.h"

#define MAX_STATS_BYTES (1024u * 1024)
#define RESAMPLE_MS 1000 /* between the two requests when the engine gave one reading */

typedef struct stats_op {
  op_t op;
  http_req_t *req;
  exec_task_t *task;
  sbx_timer_t *timer; /* until the second request, when the first reply had one reading */
  sbx_stats_t st;
  sbx_stats_t first; /* that first reply */
  int resampled;
  uint64_t disk_bytes;
  int disk_complete;
} stats_op_t;

static void on_du(void *ud, exec_result_t *r, err_t *err) {
  stats_op_t *op = ud;
  op->task = NULL;
  if (err != NULL) {
    op_settle(&op->op, err);
    return;
  }
  err_t e = ERR_INIT;
  if (r->timed_out || du_parse(r->out.bytes.data, r->out.bytes.len, &op->disk_bytes) != 0) {
    err_sandbox(&e, CODE_DOCKER_COMMAND_FAILED, "Unable to measure the sandbox workspace.");
    e.exec_details = r;
    op_settle(&op->op, &e);
    err_clear(&e);
    return;
  }
  op->disk_complete = r->exit_code == 0;
  exec_result_free(r);
  op_settle(&op->op, NULL);
}

static void run_du(stats_op_t *op) {
  sandbox_t *s = op->op.sb;
  exec_spec_t spec;
  memset(&spec, 0, sizeof(spec));
  err_t err = ERR_INIT;
  const char *argv[] = {"du", "-s", "-k", s->workdir};
  int rc = exec_spec_set_argv(&spec, argv, 4);
  spec.workdir = strdup(s->workdir);
  spec.timeout_ms = s->runtime.command_timeout_ms;
  spec.max_output = 64 * 1024;
  spec.kill_tree = 1;
  if (rc != 0 || spec.workdir == NULL) {
    exec_spec_free(&spec);
    err_oom(&err);
    op_settle(&op->op, &err);
    return;
  }
  exec_callbacks_t cbs = {.on_done = on_du};
  op->task = exec_task_start(s->eng, s->container_name, &spec, &cbs, op, &err);
  if (op->task == NULL) op_settle(&op->op, &err);
}

static void stats_start(op_t *o);

static void on_resample(void *ud) {
  stats_op_t *op = ud;
  op->timer = NULL;
  stats_start(&op->op);
}

static void on_stats(http_req_t *req, void *ud) {
  stats_op_t *op = ud;
  op->req = NULL;
  err_t err = ERR_INIT;
  if (http_req_not_found(req))
    err_sandbox(&err, CODE_SANDBOX_NOT_FOUND, "Sandbox does not exist: %s", op->op.sb->container_name);
  else if (!http_req_ok(req)) http_req_error(req, &err);
  else stats_parse(req->resp.data, req->resp.len, &op->st, &err);
  http_req_free(req);
  if (err_is_set(&err)) {
    op_settle(&op->op, &err);
    return;
  }
  if (op->resampled) {
    stats_cpu_between(&op->first, &op->st);
  } else if (!op->st.cpu_known && op->st.system_ns > 0 && op->st.cpu_total_ns > 0) {
    op->first = op->st;
    op->resampled = 1;
    op->timer = sbx_timer_start(engine_io(op->op.sb->eng), RESAMPLE_MS, on_resample, op);
    if (op->timer != NULL) return;
  }
  run_du(op);
}

static void stats_start(op_t *o) {
  stats_op_t *op = (stats_op_t *)o;
  err_t err = ERR_INIT;
  char *esc = url_escape(o->sb->container_name);
  op->req = esc ? http_req_new(o->sb->eng, "GET", "/containers/%s/stats?stream=false", esc) : NULL;
  free(esc);
  if (op->req == NULL) {
    err_oom(&err);
    op_settle(o, &err);
    return;
  }
  http_req_set_limit(op->req, MAX_STATS_BYTES);
  if (http_req_start(op->req, on_stats, op, &err) != 0) {
    http_req_free(op->req);
    op->req = NULL;
    op_settle(o, &err);
  }
}

static void stats_stop(op_t *o) {
  stats_op_t *op = (stats_op_t *)o;
  http_req_free(op->req);
  op->req = NULL;
  sbx_timer_cancel(op->timer);
  op->timer = NULL;
  exec_task_cancel(op->task);
  op->task = NULL;
}

static void set_num(napi_env env, napi_value o, const char *key, double v) {
  napi_set_named_property(env, o, key, nu_number(env, v));
}

static napi_value stats_result(op_t *o) {
  stats_op_t *op = (stats_op_t *)o;
  napi_env env = o->js->env;
  const sbx_stats_t *st = &op->st;
  napi_value r, cpu, mem, net, ws;
  NU_CALL(env, napi_create_object(env, &r));
  napi_create_object(env, &cpu);
  napi_create_object(env, &mem);
  napi_create_object(env, &net);
  napi_create_object(env, &ws);
  napi_set_named_property(env, r, "sampledAt", st->read[0] ? nu_string(env, st->read) : nu_null(env));
  set_num(env, cpu, "percent", st->cpu_known ? st->cpu_percent : 0);
  set_num(env, cpu, "totalNs", (double)st->cpu_total_ns);
  set_num(env, cpu, "onlineCpus", st->online_cpus);
  set_num(env, mem, "usedBytes", (double)st->mem_used);
  set_num(env, mem, "limitBytes", (double)st->mem_limit);
  set_num(env, net, "rxBytes", (double)st->rx_bytes);
  set_num(env, net, "txBytes", (double)st->tx_bytes);
  set_num(env, net, "rxPackets", (double)st->rx_packets);
  set_num(env, net, "txPackets", (double)st->tx_packets);
  set_num(env, ws, "usedBytes", (double)op->disk_bytes);
  napi_set_named_property(env, ws, "complete", nu_bool(env, op->disk_complete));
  napi_set_named_property(env, r, "cpu", cpu);
  napi_set_named_property(env, r, "memory", mem);
  set_num(env, r, "processes", st->pids >= 0 ? (double)st->pids : 0);
  napi_set_named_property(env, r, "network", net);
  napi_set_named_property(env, r, "workspace", ws);
  return r;
}

static void stats_destroy(op_t *o) {
  stats_op_t *op = (stats_op_t *)o;
  http_req_free(op->req);
  sbx_timer_cancel(op->timer);
  exec_task_cancel(op->task);
}

static const op_vtable_t stats_vt = {.name = "stats",
    .start = stats_start, .stop = stats_stop, .result = stats_result, .destroy = stats_destroy};

/* native.prepareStats(sandbox, options) */
static napi_value js_prepare_stats(napi_env env, napi_callback_info info) {
  napi_value options;
  sandbox_t *sb = convert_sandbox_call(env, info, &options);
  if (sb == NULL) return NULL;
  err_t err = ERR_INIT;
  stats_op_t *op = op_prepare(env, &stats_vt, sizeof(*op), sb);
  if (op == NULL) return NULL;
  if (!nu_is_undefined(env, options) && !nu_is_record(env, options)) err_type(&err, "options must be an object.");
  return op_prepared(&op->op, &err);
}

void stats_register(napi_env env, napi_value exports) {
  napi_property_descriptor fns[] = {
      {"prepareStats", NULL, js_prepare_stats, NULL, NULL, NULL, napi_default, NULL},
  };
  napi_define_properties(env, exports, sizeof(fns) / sizeof(fns[0]), fns);
}
