/*
 * steps.h - what createSandbox and fork share: a change made on the engine one request at
 * a time and, when a step fails or the caller aborts, undone one request at a time. The
 * request in flight, the failure that started the undoing, the undoing's own failures,
 * and the rejection that names them all (an AggregateError when the undoing failed too).
 * The steps themselves, their order and what each undoes stay in create.c and fork.c.
 *
 * Owns: a steps_t owns the request in flight and its errors (steps_free); the engine is
 * its operation's.
 */
#ifndef SBX_STEPS_H
#define SBX_STEPS_H

#include <node_api.h>
#include <stddef.h>

#include "base/err.h"
#include "engine/engine.h"
#include "napi/op.h"
#include "sandbox/sandbox.h"

#define STEPS_MAX_RB_ERRORS 4

typedef struct steps {
  engine_t *eng;
  http_req_t *req;            /* the request in flight, or NULL */
  int rolling_back;           /* the undoing has begun */
  int cancelled_by_caller;    /* the rejection is the caller's abort reason */
  int rollback_when_answered; /* aborted while a change was in flight: undo once it is answered */
  err_t err;                  /* the failure that started the undoing */
  err_t rb_err[STEPS_MAX_RB_ERRORS];
  size_t n_rb_err, max_rb_err;
} steps_t;

/* `max_rb_err` (<= STEPS_MAX_RB_ERRORS): how many of the undoing's failures are kept. */
void steps_init(steps_t *s, engine_t *eng, size_t max_rb_err);
void steps_free(steps_t *s);
/* Drops the request in flight, if any (it is not answered). */
void steps_drop_req(steps_t *s);
/* `method` on `fmt` with `name` URL-escaped into it; NULL when out of memory. */
http_req_t *steps_req(steps_t *s, const char *method, const char *fmt, const char *name);
/* Sends `req` (taken, NULL meaning out of memory), answered to on_resp(req, ud). 0, or -1
 * with the failure kept: as s->err, or while undoing as one of its failures. */
int steps_send(steps_t *s, http_req_t *req, http_done_fn on_resp, void *ud);
/* Replaces a generic engine failure (docker_command_failed) with the original's message
 * for the step, keeping its details. */
void steps_wrap_failure(err_t *err, const char *message);
/* Keeps a failed undoing request's error (while there is room), worded `message` (NULL:
 * the engine's words). */
void steps_keep_rb_failure(steps_t *s, http_req_t *req, const char *message);
/*
 * The caller aborted (not a teardown). `changing`: the request in flight, if any, changes
 * something on the engine. Returns 1 when the caller begins its undoing now (the request
 * in flight, if any, was dropped); 0 when there is nothing to do now: an undoing already
 * runs and settles the op, or a change in flight is let finish and the undoing begins
 * when it is answered (rollback_when_answered), since closing the connection does not
 * stop the engine: a container create it already received completes after we hang up,
 * and a removal sent now could run before it.
 */
int steps_cancel(steps_t *s, int changing);
/* The answer to "is there a container named `name` already": one found is refused
 * (invalid_state), as is an answer that is neither found nor not found. */
void steps_must_be_absent(http_req_t *req, const char *name, err_t *err);
/* The ports `ports[0..n)` as the started container `sb` publishes them, from its
 * inspection (the answer `req`): kept in sb->ports. */
void steps_read_ports(http_req_t *req, const int *ports, size_t n, sandbox_t *sb, err_t *err);
/* The rejection: the caller's abort reason or s->err, inside an AggregateError with the
 * undoing's failures under `aggregate_message` when there are any. */
napi_value steps_rejection(steps_t *s, op_t *o, const char *aggregate_message);

#endif
