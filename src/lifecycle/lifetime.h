/*
 * lifetime.h - createSandbox's `lifetime` option, and the client's side of the idle
 * limit: telling a sandbox's container that it is in use.
 *
 * Owns: the tracker it attaches to a sandbox with a limit (freed with the sandbox, or at
 * the environment's teardown, whichever comes first): for an idle limit its timer and the
 * one signal request it may have in flight; for a lifetime limit the watch's timer, its
 * one request and the run's StartedAt.
 *
 * The lifetime limit, from outside (issue 23 item 6): the container keeps it itself, but
 * where its code can stop process 1 (gVisor delivers SIGSTOP to init; the shell loop of a
 * read-only rootfs has a `sleep` child), only the host can. So while this process lives,
 * each handle of a sandbox with maxLifetimeMs learns its run's State.StartedAt when it is
 * made (create, resume, fork), inspects the container again maxLifetimeMs +
 * LIFETIME_HOST_GRACE_MS later, and stops it (POST /containers/{id}/stop?t=1: TERM, then
 * KILL, which reaches a stopped process 1) if the same run is still running. A run
 * started since (another client resumed it) is left alone; the watch never keeps Node
 * alive.
 *
 * Idle, precisely: no runtime operation (any call of sandbox.runtime, whichever
 * transport carries it out, or the end of the createSandbox that made it) has started or
 * been in progress for idleTimeoutMs. The
 * container keeps the time (codec/lifetime_cmd.h); the client tells it of activity with a
 * SIGUSR1 to its first process through the engine (POST /containers/{id}/kill?signal=
 * SIGUSR1, no process in the container), at most once per idle/4: when an operation
 * starts (unless one was sent less than idle/4 ago), every idle/4 while operations are in
 * progress, and once more, idle/4 after the previous one at the latest, once the last
 * one has ended, so the container always hears of activity at or after its end. So the
 * container stops no sooner than idleTimeoutMs after the last operation ended, while
 * this process lives; once it is gone (killed, crashed), nothing keeps the container
 * awake and it stops idleTimeoutMs (plus up to a second) after the last signal.
 */
#ifndef SBX_LIFECYCLE_LIFETIME_H
#define SBX_LIFECYCLE_LIFETIME_H

#include <node_api.h>

#include "base/err.h"
#include "codec/lifetime_cmd.h"
#include "napi/jsenv.h"
#include "sandbox/sandbox.h"

/* How long past maxLifetimeMs the host's watch waits for the container's own stop. */
#define LIFETIME_HOST_GRACE_MS 2000u
/* An inspection the watch reads is at most this large (one container's, with its labels). */
#define LIFETIME_MAX_INSPECT_BYTES (4u * 1024u * 1024u)

/* options.lifetime: undefined or { idleTimeoutMs?, maxLifetimeMs? }, each an integer in
 * [LIFETIME_MIN_MS, LIFETIME_MAX_MS] when given. Zeros when absent. 0, or -1 with err set
 * (TypeError for a non-object, RangeError for a bad value). */
int lifetime_read(napi_env env, napi_value options, lifetime_t *out, err_t *err);

/* Attaches the tracker when `l` has a limit (nothing otherwise), for the environment
 * `js`; with a lifetime limit, its watch starts (an inspection sent now). 0, or -1 with
 * err set (out of memory). */
int lifetime_track(jsenv_t *js, sandbox_t *sb, const lifetime_t *l, err_t *err);

/* An operation on the sandbox begins / ends (no-ops without an idle limit): every runtime
 * call (through native.sandboxActivity), and createSandbox from the moment its container
 * runs until it settles, since its owner lookup, helper and `files` upload can take longer
 * than a short idle limit (seen under gVisor on a busy machine: a create's steps after the
 * start outlasted 2 s, and the container stopped itself before its first call). */
void activity_begin(sandbox_t *sb);
void activity_end(sandbox_t *sb);

/* No signal may reach the container between hold and release (the engine unpauses a
 * paused container it signals: fork pauses its parent). Release sends what is owed. */
void activity_hold(sandbox_t *sb);
void activity_release(sandbox_t *sb);

/* native.sandboxActivity(sandbox, delta): +1 when an operation starts, -1 when it ends. */
void lifetime_register(napi_env env, napi_value exports);

#endif
