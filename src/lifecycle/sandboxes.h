/*
 * sandboxes.h - client.listSandboxes and client.pruneSandboxes: every sandbox on the
 * engine, whoever made it, read from one container list request; and the removal of
 * those that match.
 *
 * native.prepareListSandboxes(client, options) -> token resolving to summaries;
 * native.preparePruneSandboxes(client, options) -> token resolving to { removed, failed }.
 * Summaries as JavaScript values come from sandbox_summary_to_js.
 */
#ifndef SBX_LIFECYCLE_SANDBOXES_H
#define SBX_LIFECYCLE_SANDBOXES_H

#include <node_api.h>
#include <stdint.h>

#include "codec/sandbox_list.h"

void sandboxes_register(napi_env env, napi_value exports);

#endif
