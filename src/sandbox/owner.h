/*
 * owner.h - who should own what the API writes: the numeric uid and gid of the sandbox
 * user, looked up once per sandbox in the container's /etc/passwd and /etc/group, read
 * through the archive endpoint (no command runs, and it works before the container
 * starts).
 *
 * Owns: an owner_task_t owns its two requests until it completes or is cancelled.
 */
#ifndef SBX_OWNER_H
#define SBX_OWNER_H

#include "base/err.h"
#include "sandbox/sandbox.h"

typedef struct owner_task owner_task_t;
/* Called once, unless cancelled. On success the sandbox's owner is known. */
typedef void (*owner_done_fn)(void *ud, err_t *err);

/*
 * Returns 1 when the owner is known already (nothing started), 0 when a lookup started
 * (*task set; `done` will be called), -1 with err set.
 */
int owner_ensure(sandbox_t *s, owner_done_fn done, void *ud, owner_task_t **task, err_t *err);
void owner_cancel(owner_task_t *t);

#endif
