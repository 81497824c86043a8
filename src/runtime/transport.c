/*
 * transport.c - which runtime table a new sandbox gets, by its client's transport (see
 * table.h and agent_op.h): the one place that chooses between the two tables.
 */
#include "runtime/agent_op.h"
#include "runtime/table.h"

sandbox_t *sandbox_new_with_transport(engine_t *eng, int transport) {
  sandbox_t *sb = sandbox_new(eng, transport == TRANSPORT_ENGINE ? &engine_runtime_ops : &agent_runtime_ops);
  if (sb != NULL && sandbox_set_transport(sb, (transport_t)transport) != 0) {
    sandbox_unref(sb);
    return NULL;
  }
  return sb;
}
