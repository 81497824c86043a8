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

/* Records that `sb` owns `image` (a fork's committed image, from LABEL_FORK_IMAGE): its
 * destroy removes it. NULL image: nothing. 0, or -1 with err set (out of memory). */
int fork_image_track(sandbox_t *sb, const char *image, err_t *err);

void fork_register(napi_env env, napi_value exports);

#endif
