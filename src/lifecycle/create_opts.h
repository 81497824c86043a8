/*
 * create_opts.h - createSandbox's options: read from JavaScript, validated exactly as the
 * original's validateCreateOptions (same order, classes and messages), and copied into a
 * plain C snapshot that the rest of the create uses.
 *
 * Owns: nothing beyond what it returns: the create_opts_t it fills (codec/spec.h) is the
 * caller's. Reading the options is the only place the caller's objects are touched, so
 * later changes to them cannot reach a sandbox being created.
 */
#ifndef SBX_CREATE_OPTS_H
#define SBX_CREATE_OPTS_H

#include <node_api.h>

#include "base/err.h"
#include "codec/spec.h"

/*
 * Reads and validates; returns 0, or -1 with err set (nothing to free then). *late is
 * then NULL, or an error the operation must fail with once started, before any I/O
 * (op_fail_at_start): what the original found only when it began, in its order.
 */
int create_opts_read(napi_env env, napi_value options, create_opts_t *out, napi_value *late, err_t *err);
#endif
