/*
 * engine_term.h - terminals on the engine path (engine_term.c): the engine table's
 * `terminal` row, for sandboxes with transport "engine" and, through the agent table's
 * fallback, those where the agent cannot run.
 *
 * A terminal is an Engine API exec with "Tty": true, held by this process's I/O context:
 * any handle of the sandbox in this process can attach to it, and it ends with its
 * program, a kill, the sandbox's stop or removal, or this Node process.
 */
#ifndef SBX_ENGINE_TERM_H
#define SBX_ENGINE_TERM_H

#include <node_api.h>
#include <stddef.h>

#include "napi/op.h"
#include "runtime/term_req.h"
#include "sandbox/sandbox.h"

/* native.prepareTerminal(sandbox, options, action) -> token (term_req.h's actions). */
napi_value engine_term_prepare(napi_env env, sandbox_t *sb, napi_value *argv);
/* The operation for a request read already (taken: *r is left empty), not yet a token
 * (op_delegate). NULL when out of memory. */
op_t *engine_term_op(jsenv_t *js, sandbox_t *sb, term_req_t *r);
/* This process's engine-path terminals of sb's container that have not ended (they count
 * against maxProcesses, as managed processes do). */
size_t engine_term_live(sandbox_t *sb);

#endif
