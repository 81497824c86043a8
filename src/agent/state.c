/*
 * state.c - the agent's global state, `g` (agent.h lists its fields and which file keeps
 * each of them).
 *
 * Owns: the storage of `g`, and nothing else, so it lies below every file that reads it.
 * It starts zeroed; main.c fills the configuration and the descriptors at start.
 */
#define _GNU_SOURCE
#include "agent.h"

agent_t g;
