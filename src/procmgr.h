/*
 * procmgr.h - managed processes of one sandbox: the original's DockerProcessManager.
 *
 * Owns: the registry (records in start order), each record's output tails, and the exec
 * task that carries each process. A record lives in the registry until it is pruned (the
 * original's rule: only when the limit is reached, only finished processes whose group is
 * gone) or its start failed; operations hold a reference while they use one.
 *
 * A process starts through the original's launcher and wrapper shell scripts: the wrapper
 * becomes a session (process group) leader with setsid, prints a marker with its pid and
 * group, and waits for "start" on stdin; the library writes "start" only once it has
 * recorded the group. A start that is aborted or times out before then closes stdin
 * instead, so the user's command never runs.
 */
#ifndef SBX_PROCMGR_H
#define SBX_PROCMGR_H

#include <node_api.h>

#include "sandbox.h"

typedef struct procmgr procmgr_t;

procmgr_t *procmgr_new(sandbox_t *sb);
void procmgr_free(procmgr_t *pm);


#endif
