/*
 * agent_ports.c - waitForPort through the agent (see agent_ports.h): one PORT_WAIT
 * request; the agent looks at /proc/net/tcp and tcp6 every intervalMs until the port
 * listens or timeoutMs has passed, and answers once. Results and errors are the engine
 * path's.
 *
 * Owns: the request (port, times).
 */
#include "runtime/agent_ports.h"

#include <string.h>

#include "napi/args.h"
#include "napi/convert.h"
#include "runtime/agent_op.h"
#include "runtime/engine_ports.h"

typedef struct agent_port_op {
  agent_op_t base;
  port_wait_req_t req;
} agent_port_op_t;

static void port_event(agent_req_t *req, const agent_event_t *ev, void *ud) {
  (void)req;
  agent_port_op_t *op = ud;
  err_t err = ERR_INIT;
  op->base.req = NULL;
  switch (ev->type) {
    case AE_RESULT:
      if (!ev->res.port.found)
        err_sandbox(&err, CODE_TIMEOUT, "Waiting for sandbox port timed out: %d", op->req.container_port);
      op_settle(&op->base.op, &err);
      return;
    case AE_ERROR:
      err_sandbox(&err, CODE_DOCKER_COMMAND_FAILED, "Unable to probe sandbox port: %d", op->req.container_port);
      err_set_details(&err, json_pack("{s:s, s:i}", "agentError", aw_error_name(ev->error.kind), "errno", (int)ev->error.err));
      agent_op_fail(&op->base, &err);
      return;
    case AE_FAILED:
      agent_op_lost(&op->base, ev);
      return;
    default:
      op->base.req = req; /* not terminal */
      return;
  }
}

static uint32_t bounded_ms(int64_t ms) {
  if (ms < (int64_t)AW_MIN_INTERVAL_MS) return AW_MIN_INTERVAL_MS;
  return ms > (int64_t)AW_MAX_TIMEOUT_MS ? AW_MAX_TIMEOUT_MS : (uint32_t)ms;
}

static void port_run(agent_op_t *base, agent_conn_t *c) {
  agent_port_op_t *op = (agent_port_op_t *)base;
  agent_msg_t m = {.type = AW_T_PORT_WAIT};
  m.u.port.port = (uint16_t)op->req.container_port;
  m.u.port.flags = AW_PORT_V4 | AW_PORT_V6;
  m.u.port.timeout_ms = bounded_ms(op->req.timeout_ms);
  m.u.port.interval_ms = bounded_ms(op->req.interval_ms);
  agent_op_send(base, c, &m, port_event);
}

static op_t *port_fallback(agent_op_t *base, err_t *err) {
  op_t *o = ports_engine_op(base->op.js, base->op.sb, &((agent_port_op_t *)base)->req);
  if (o == NULL) err_oom(err);
  return o;
}

static napi_value port_result(op_t *o) {
  agent_port_op_t *op = (agent_port_op_t *)o;
  return convert_published_port(o->js->env, op->req.container_port, op->req.host_port);
}

static void port_destroy(op_t *o) { agent_op_destroy((agent_op_t *)o); }

static const agent_op_kind_t port_kind = {
    .vt = {.name = "agentWaitForPort", .start = agent_op_start, .stop = agent_op_stop, .result = port_result,
           .destroy = port_destroy},
    .run = port_run,
    .fallback = port_fallback,
};

napi_value agent_ports_prepare(napi_env env, sandbox_t *sb, napi_value *argv) {
  jsenv_t *js = jsenv_get(env);
  napi_value options = args_options(env, argv);
  if (options == NULL) return NULL;
  err_t err = ERR_INIT;
  port_wait_req_t req;
  if (ports_parse(env, sb, options, &req, &err) != 0) return convert_throw_err(js, &err);
  agent_port_op_t *op = agent_op_prepare(env, &port_kind, sizeof(*op), sb);
  if (op == NULL) return NULL;
  op->req = req;
  return op_prepared(&op->base.op, NULL);
}
