/*
 * fork.h - sandbox.fork({ id? }): a new, independent sandbox with its parent's
 * configuration, a copy of its workspace volume and of its container's own filesystem
 * changes; and the image a fork owns, removed with it.
 *
 * native.prepareFork(sandbox, options) -> token resolving to a handle's info (as
 * createSandbox's); native.prepareRemoveOwnedImage(sandbox) -> token, or undefined when
 * the sandbox owns no image.
 */
#ifndef SBX_LIFECYCLE_FORK_H
#define SBX_LIFECYCLE_FORK_H

#include <node_api.h>

#include "base/err.h"
#include "sandbox/sandbox.h"

/* Records that `sb` owns `image` (a fork's committed image): its destroy removes it.
 * `checked`: this process's fork made it (removed at once); 0 when it comes from
 * labels (LABEL_FORK_IMAGE of a resumed fork): removed only when the image's own
 * LABEL_ID is the sandbox's id. NULL or empty image: nothing. 0, or -1 with err set
 * (out of memory). */
int fork_image_track(sandbox_t *sb, const char *image, int checked, err_t *err);

void fork_register(napi_env env, napi_value exports);

#endif
