/*
 * exports.h - the pure C functions exposed to the unit tests (exports_text.c: paths, text
 * pages, listing output; exports_codec.c: frames, tar, user specs, container specs), in
 * the debug and asan builds only (ANVIA_TEST_EXPORTS); and normalizeSandboxPath, the
 * package's own (lib/tools.js), in every build.
 */
#ifndef SBX_EXPORTS_H
#define SBX_EXPORTS_H

#include <node_api.h>

void exports_text_register(napi_env env, napi_value exports);
#ifdef ANVIA_TEST_EXPORTS
void exports_codec_register(napi_env env, napi_value exports);
#endif

#endif
