/*
 * shutdown.c - the start of the agent's exit path, which any file may ask for: from
 * then on new requests are refused, every request but a detached EXEC is ended, and the
 * output has AG_SHUTDOWN_MS to drain (main.c's loop ends when it has, or at that bound).
 *
 * Owns: g.shutting_down, g.exit_code, g.shutdown_deadline_ms, and the function that ends
 * the requests. Ending a request takes its type's own code, above every operation, while
 * the exit path can start below them all (a full output queue, out.c): so that one call
 * goes up through the function main.c installs here at start (op_end_all, ops.c), never
 * by name.
 */
#define _GNU_SOURCE
#include "agent.h"

static void (*end_requests)(void);

void shutdown_install(void (*fn)(void)) { end_requests = fn; }

void shutdown_begin(int code, const char *why) {
  if (g.shutting_down) return;
  g.shutting_down = 1;
  g.exit_code = code;
  g.shutdown_deadline_ms = util_now_ms() + AG_SHUTDOWN_MS;
  if (code != 0) util_log("exiting: %s", why);
  if (end_requests != NULL) end_requests();
}
