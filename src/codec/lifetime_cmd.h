/*
 * lifetime_cmd.h - a sandbox's idle and lifetime limits as the container carries them: the
 * command its first process runs (it stops the container when a limit is reached, so the
 * limits hold with no client alive), and the labels that bring the limits back on resume.
 *
 * Owns: nothing; returns new jansson values the caller owns.
 *
 * Two commands keep the limits. Where the package can place a file before the container
 * starts (a writable rootfs, and an agent binary for the engine's architecture), process
 * 1 is the agent's binary at LIFETIME_INIT_PATH in its `init` mode (src/agent/init.c):
 * the sandbox's own code can neither stop it nor fake activity to it. The lifecycle
 * places that binary before every start it makes (create, resume, fork), so a file the
 * sandbox put there in its last life is never what runs. Otherwise (a read-only rootfs:
 * the engine refuses archive writes into it) process 1 is the shell loop below, which
 * code running as its user can stop (README, "Idle and lifetime limits").
 *
 * The container learns of activity from a SIGUSR1 sent to its first process (the
 * engine's kill endpoint; lifecycle/lifetime.c decides when). LIFETIME_SH
 * (codec/sh/lifetime.sh) keeps the time of the last one and stops the container (exit 0 of process 1) once
 * `idle` ms passed without one, or `max` ms after it started, whichever comes first; it
 * reads the clock from /proc/uptime with the shell's own `read` (no process per check)
 * and sleeps with one `sleep` at a time, at most idle/4 (at least 1 s) while an idle
 * limit is set, otherwise until the lifetime ends. It needs only `sh` (dash or busybox
 * ash, 64-bit arithmetic), `sleep` and a mounted /proc; it writes nothing, so it works
 * with a read-only rootfs and as any user. A container without limits keeps the
 * original's KEEP_ALIVE_SH (codec/sh/keep_alive.sh) and no extra label, byte for byte.
 */
#ifndef SBX_LIFETIME_H
#define SBX_LIFETIME_H

#include <jansson.h>
#include <stdint.h>

#include "base/err.h"

#define LABEL_IDLE_TIMEOUT "anvia.sandbox.lifetime.idle-timeout-ms"
#define LABEL_MAX_LIFETIME "anvia.sandbox.lifetime.max-lifetime-ms"
/* The shortest limit accepted (the container's clock checks are 1 s apart at most). */
#define LIFETIME_MIN_MS 1000
/* The longest: about 285 years, so uptime + limit stays far inside 64-bit arithmetic. */
#define LIFETIME_MAX_MS 9000000000000LL
/* $0 of the limit loop (shown by ps) */
#define LIFETIME_ARGV0 "anvia-sandbox-lifetime"
/* Where the init goes (engine/agent_place.h uploads the agent's binary under this name). */
#define LIFETIME_INIT_DIR "/.anvia"
#define LIFETIME_INIT_NAME "init"
#define LIFETIME_INIT_PATH LIFETIME_INIT_DIR "/" LIFETIME_INIT_NAME
#define LIFETIME_INIT_MODE "init" /* argv[1]: the agent's mode (src/agent/main.c) */

typedef struct lifetime {
  int64_t idle_ms; /* 0: no idle limit */
  int64_t max_ms;  /* 0: no lifetime limit */
} lifetime_t;

static inline int lifetime_any(const lifetime_t *l) { return l->idle_ms > 0 || l->max_ms > 0; }

/* On a container create body: when a limit is set, Cmd becomes lifetime_cmd and the set
 * limits are added to Labels (an object that must exist). Nothing changes otherwise.
 * 0, or -1 when out of memory. */
int lifetime_apply(json_t *body, const lifetime_t *l, int with_init);
/* Whether a container's Config.Cmd runs the init (so the init must be placed again
 * before the container starts). */
int lifetime_cmd_is_init(json_t *cmd);
/* The limits named by a container's labels (an object, or NULL): a missing label is no
 * limit, and so is an empty one (what a create writes over an image's). A label that
 * is not an integer in [LIFETIME_MIN_MS, LIFETIME_MAX_MS] is
 * invalid_state "Sandbox metadata is invalid: <label>" (-1). */
int lifetime_from_labels(json_t *labels, lifetime_t *out, err_t *err);

#endif
