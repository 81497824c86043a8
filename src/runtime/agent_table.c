/*
 * agent_table.c - the in-sandbox agent's runtime operations table (see table.h and
 * agent_op.h): exec, files, listings, port waits and tree transfers through the agent,
 * each falling back to the engine's implementation when the agent cannot run in the
 * sandbox (transport "auto"). Managed processes start through the agent; stopping,
 * listing and logs are the shared registry's, which asks each record's carrier
 * (proc_registry.h).
 */
#include "runtime/table.h"

#include "runtime/agent_exec.h"
#include "runtime/agent_files.h"
#include "runtime/agent_ports.h"
#include "runtime/agent_procs.h"
#include "runtime/agent_term.h"
#include "runtime/agent_watch.h"
#include "runtime/proc.h"
#include "runtime/tree_agent.h"

const runtime_ops_t agent_runtime_ops = {
    .name = "agent",
    .exec = agent_exec_prepare,
    .read_file = agent_read_prepare,
    .write_file = agent_write_prepare,
    .list_files = agent_list_prepare,
    .start_process = agent_procs_prepare_start,
    .stop_process = proc_prepare_stop,
    .dispose_processes = proc_prepare_dispose,
    .list_processes = proc_list,
    .process_logs = proc_logs,
    .wait_for_port = agent_ports_prepare,
    .watch_files = agent_watch_prepare,
    .terminal = agent_term_prepare,
    .tree_import = &tree_agent_import_backend,
    .tree_export = &tree_agent_export_backend,
    .procs = &agent_procs_carrier,
};
