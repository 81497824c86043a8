/*
 * dispatch.c - the JavaScript entry points of the runtime operations, each dispatched
 * through the table its sandbox's transport names (transport_table, see table.h).
 */
#include "runtime/table.h"

#include "runtime/tree_front.h"

#include "napi/convert.h"
#include "napi/values.h"

typedef struct call {
  napi_value argv[RUNTIME_MAX_ARGS];
  sandbox_t *sb;
} call_t;

/* The arguments, missing ones undefined, and the sandbox of argv[0]. 0, or -1 with a
 * JavaScript exception pending. */
static int read_call(napi_env env, napi_callback_info info, call_t *c) {
  if (nu_args(env, info, c->argv, RUNTIME_MAX_ARGS) < 0) return -1;
  c->sb = convert_sandbox_of(env, c->argv[0]);
  return c->sb == NULL ? -1 : 0;
}

#define ENTRY(field)                                                  \
  static napi_value js_##field(napi_env env, napi_callback_info info) { \
    call_t c;                                                         \
    if (read_call(env, info, &c) != 0) return NULL;                   \
    return transport_table(c.sb)->field(env, c.sb, c.argv);           \
  }

ENTRY(exec)
ENTRY(read_file)
ENTRY(write_file)
ENTRY(list_files)
ENTRY(start_process)
ENTRY(stop_process)
ENTRY(dispose_processes)
ENTRY(list_processes)
ENTRY(process_logs)
ENTRY(wait_for_port)
ENTRY(watch_files)
ENTRY(terminal)

/* Tree transfers: tree_front.c's, with the backends of the sandbox's transport. */
static napi_value js_import_tree(napi_env env, napi_callback_info info) {
  call_t c;
  if (read_call(env, info, &c) != 0) return NULL;
  return tree_import_prepare(env, c.sb, c.argv, transport_table(c.sb)->tree_import);
}

static napi_value js_export_tree(napi_env env, napi_callback_info info) {
  call_t c;
  if (read_call(env, info, &c) != 0) return NULL;
  return tree_export_prepare(env, c.sb, c.argv, transport_table(c.sb)->tree_export);
}

void runtime_register(napi_env env, napi_value exports) {
  napi_property_descriptor fns[] = {
      {"prepareExec", NULL, js_exec, NULL, NULL, NULL, napi_default, NULL},
      {"prepareReadFile", NULL, js_read_file, NULL, NULL, NULL, napi_default, NULL},
      {"prepareWriteFile", NULL, js_write_file, NULL, NULL, NULL, napi_default, NULL},
      {"prepareListFiles", NULL, js_list_files, NULL, NULL, NULL, napi_default, NULL},
      {"prepareStartProcess", NULL, js_start_process, NULL, NULL, NULL, napi_default, NULL},
      {"prepareStopProcess", NULL, js_stop_process, NULL, NULL, NULL, napi_default, NULL},
      {"prepareDisposeProcesses", NULL, js_dispose_processes, NULL, NULL, NULL, napi_default, NULL},
      {"listProcesses", NULL, js_list_processes, NULL, NULL, NULL, napi_default, NULL},
      {"processLogs", NULL, js_process_logs, NULL, NULL, NULL, napi_default, NULL},
      {"prepareWaitForPort", NULL, js_wait_for_port, NULL, NULL, NULL, napi_default, NULL},
      {"prepareWatchFiles", NULL, js_watch_files, NULL, NULL, NULL, napi_default, NULL},
      {"prepareTerminal", NULL, js_terminal, NULL, NULL, NULL, napi_default, NULL},
      {"prepareImportTree", NULL, js_import_tree, NULL, NULL, NULL, napi_default, NULL},
      {"prepareExportTree", NULL, js_export_tree, NULL, NULL, NULL, napi_default, NULL},
  };
  napi_define_properties(env, exports, sizeof(fns) / sizeof(fns[0]), fns);
  tree_register(env, exports);
}
