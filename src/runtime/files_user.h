/*
 * files_user.h - readFile and writeFile on the engine path when the sandbox's user is not
 * root: done inside the container, as that user, with no symbolic link followed on the
 * way (files_user.c says how), instead of through the archive endpoints, which run as root
 * in the engine and follow links.
 */
#ifndef SBX_FILES_USER_H
#define SBX_FILES_USER_H

#include <node_api.h>
#include <stddef.h>
#include <stdint.h>

#include "sandbox/sandbox.h"

/* Operation tokens; `path` (normalized, relative, no trailing slash) and `data` are taken. */
napi_value files_user_prepare_write(napi_env env, sandbox_t *sb, char *path, uint8_t *data, size_t len);
napi_value files_user_prepare_read(napi_env env, sandbox_t *sb, char *path);

#endif
