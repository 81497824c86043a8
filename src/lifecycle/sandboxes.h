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

#include "codec/sandboxes.h"

/* { id, containerName, state, image, createdAt, stoppedAt?, exitCode?, workdir?,
 *   workspace?, ports, labels, lifetime?, forkOf? }; `now_ms` is the wall clock the
 * status line's "ago" is counted back from. */
napi_value sandbox_summary_to_js(napi_env env, const sandbox_summary_t *s, int64_t now_ms);
/* The wall clock, in ms since the epoch. */
int64_t wall_clock_ms(void);

void sandboxes_register(napi_env env, napi_value exports);

#endif
