/*
 * exports_codec.c - N-API wrappers exposing the frame demultiplexer, tar and user
 * lookup functions to the unit tests. (Being written.)
 */
#include <node_api.h>

#include "api.h"

void exports_codec_register(napi_env env, napi_value exports) {
  (void)env;
  (void)exports;
}
