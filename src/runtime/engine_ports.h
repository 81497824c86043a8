/*
 * engine_ports.h - waitForPort on the engine path: the original's /proc/net/tcp probe, run in
 * the container every intervalMs until something listens or the time is up.
 */
#ifndef SBX_PORTS_H
#define SBX_PORTS_H

#include <node_api.h>
#include <stddef.h>

#include "base/err.h"
#include "napi/op.h"
#include "runtime/requests.h"
#include "sandbox/sandbox.h"

/* waitForPort's options, in the original's order: the port must be published. 0, or -1
 * with err set. */
int ports_parse(napi_env env, sandbox_t *sb, napi_value options, port_wait_req_t *req, err_t *err);
/* The engine's wait (the original's /proc/net/tcp probe loop); not yet a token. NULL when
 * out of memory. */
op_t *ports_engine_op(jsenv_t *js, sandbox_t *sb, const port_wait_req_t *req);
napi_value ports_prepare_wait(napi_env env, sandbox_t *sb, napi_value *argv);

#endif
