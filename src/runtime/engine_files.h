/*
 * engine_files.h - readFile, readTextFilePage and writeFile/writeTextFile on the engine path
 * (the archive endpoints; no host temp file and no exec).
 */
#ifndef SBX_FILES_H
#define SBX_FILES_H

#include <node_api.h>
#include <stddef.h>

#include "base/err.h"
#include "napi/op.h"
#include "runtime/requests.h"
#include "sandbox/sandbox.h"

/* writeFile's/writeTextFile's arguments (argv[1] the options object, argv[2] isText), in
 * the original's order. 0, or -1 with err set (nothing to free then). */
int files_parse_write(napi_env env, sandbox_t *sb, napi_value *argv, file_write_req_t *req, err_t *err);
/* readFile's path (argv[1] the options object): normalized, not naming a directory.
 * Malloc'd, or NULL with err set. */
char *files_parse_read(napi_env env, napi_value *argv, err_t *err);
/* The engine's operations for a request read already (its contents are taken); not yet
 * tokens. NULL when out of memory (the request is then left to the caller). */
op_t *files_engine_write_op(jsenv_t *js, sandbox_t *sb, file_write_req_t *req);
op_t *files_engine_read_op(jsenv_t *js, sandbox_t *sb, char **path);

/* native.prepareReadFile(sandbox, options) and prepareWriteFile(sandbox, options, isText). */
napi_value files_prepare_read(napi_env env, sandbox_t *sb, napi_value *argv);
napi_value files_prepare_write(napi_env env, sandbox_t *sb, napi_value *argv);
/* native.textFilePage(bytes, options): the page of bytes read by readFile. */
void files_register(napi_env env, napi_value exports);

#endif
