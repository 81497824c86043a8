/*
 * engine_table.c - the Engine API's runtime operations table (see table.h): each row is
 * the prepare function of an operation built from exec and archive requests.
 */
#include "runtime/table.h"

#include "runtime/agent_watch.h"
#include "runtime/exec_op.h"
#include "runtime/engine_files.h"
#include "runtime/listing.h"
#include "runtime/engine_ports.h"
#include "runtime/engine_term.h"
#include "runtime/proc.h"
#include "runtime/proc_registry.h"
#include "runtime/tree_engine.h"

const runtime_ops_t engine_runtime_ops = {
    .name = "engine",
    .exec = exec_prepare,
    .read_file = files_prepare_read,
    .write_file = files_prepare_write,
    .list_files = listing_prepare,
    .start_process = proc_prepare_start,
    .stop_process = proc_prepare_stop,
    .dispose_processes = proc_prepare_dispose,
    .list_processes = proc_list,
    .process_logs = proc_logs,
    .wait_for_port = ports_prepare_wait,
    .watch_files = agent_watch_engine_prepare,
    .terminal = engine_term_prepare,
    .tree_import = &tree_engine_import_backend,
    .tree_export = &tree_engine_export_backend,
    .procs = &proc_engine_carrier,
};
