/*
 * stats.h - sandbox.stats(): native.prepareStats(sandbox, options) -> token resolving to
 * one sample { sampledAt, cpu, memory, processes, network, workspace } (see stats.c).
 */
#ifndef SBX_LIFECYCLE_STATS_H
#define SBX_LIFECYCLE_STATS_H

#include <node_api.h>

void stats_register(napi_env env, napi_value exports);

#endif
