/*
 * build.h - the image build behind `anvia-sandbox create-image`: native.prepareBuildImage
 * (client, { context, files, tag }) reads the context's files and
 * returns an operation token; native.start(token, onEvent) builds (engine/build_task.h),
 * calling onEvent("stdout", Uint8Array) with the rendered build output as it arrives, and
 * resolves with { imageId } (the engine's image id, or null), or rejects with the
 * engine's error (an error inside the build's message stream included).
 *
 * Owns: a build operation owns its reference to the engine, the context archive until
 * the build takes it, and the build task.
 */
#ifndef SBX_LIFECYCLE_BUILD_H
#define SBX_LIFECYCLE_BUILD_H

#include <node_api.h>

/* prepareBuildImage */
void build_register(napi_env env, napi_value exports);

#endif
