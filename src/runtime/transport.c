/*
 * transport.c - the table a runtime call goes through (see table.h): the sandbox's
 * transport (sandbox_t.transport, set by its creator) names it, except where the agent is
 * known not to run and the transport lets the engine serve (agent_op_engine_instead).
 * The one place that chooses between the tables; the names of the transports.
 */
#include "runtime/table.h"

#include <string.h>

#include "runtime/agent_op.h"

const runtime_ops_t *transport_table(sandbox_t *sb) {
  if (sb->transport == TRANSPORT_ENGINE || agent_op_engine_instead(sb)) return &engine_runtime_ops;
  return &agent_runtime_ops;
}

int transport_parse(const char *name) {
  if (name == NULL) return -1;
  if (strcmp(name, "engine") == 0) return TRANSPORT_ENGINE;
  if (strcmp(name, "auto") == 0) return TRANSPORT_AUTO;
  if (strcmp(name, "agent") == 0) return TRANSPORT_AGENT;
  return -1;
}
