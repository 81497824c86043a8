/*
 * listing.h - listFiles on the engine path: one exec of find (or, on images whose find
 * lacks -printf, find -exec stat) whose output codec/findparse.c reads.
 */
#ifndef SBX_LISTING_H
#define SBX_LISTING_H

#include <node_api.h>
#include <stddef.h>

#include "base/err.h"
#include "napi/op.h"
#include "sandbox/sandbox.h"

/* The directory listFiles names (options.path ?? "."): normalized, relative, "." for the
 * workspace root. Malloc'd, or NULL with err set. */
char *listing_parse(napi_env env, napi_value options, err_t *err);
/* The engine's listing of `path` (not yet a token). NULL with err set. */
op_t *listing_engine_op(jsenv_t *js, sandbox_t *sb, const char *path, err_t *err);
napi_value listing_prepare(napi_env env, sandbox_t *sb, napi_value *argv);

#endif
