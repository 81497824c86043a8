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

#include "napi/op.h"
#include "runtime/requests.h"
#include "sandbox/sandbox.h"

/* The operations (not yet tokens); the request's contents are taken. NULL when out of
 * memory (the request is then left to the caller). */
op_t *files_user_write_op(jsenv_t *js, sandbox_t *sb, file_write_req_t *req);
op_t *files_user_read_op(jsenv_t *js, sandbox_t *sb, char **path);

#endif
