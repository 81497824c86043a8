/*
 * listing.h - listFiles on the engine path: one exec of find (or, on images whose find
 * lacks -printf, find -exec stat) whose output codec/findparse.c reads.
 */
#ifndef SBX_LISTING_H
#define SBX_LISTING_H

#include <node_api.h>
#include <stddef.h>

#include "sandbox/sandbox.h"

napi_value listing_prepare(napi_env env, sandbox_t *sb, napi_value *argv, size_t argc);

#endif
