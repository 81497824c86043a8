/*
 * remove.h - stopping a sandbox's container and removing it and its volume, one engine
 * request each (the handle's state machine in lib/handle.js sequences them).
 */
#ifndef SBX_REMOVE_H
#define SBX_REMOVE_H

#include <node_api.h>

/* prepareStopContainer, prepareRemoveContainer, prepareRemoveVolume, sandboxOwnsVolume */
void remove_register(napi_env env, napi_value exports);

#endif
