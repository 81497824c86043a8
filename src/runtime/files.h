/*
 * files.h - readFile, readTextFilePage and writeFile/writeTextFile on the engine path
 * (the archive endpoints; no host temp file and no exec).
 */
#ifndef SBX_FILES_H
#define SBX_FILES_H

#include <node_api.h>
#include <stddef.h>

#include "sandbox/sandbox.h"

/* native.prepareReadFile(sandbox, options) and prepareWriteFile(sandbox, options, isText). */
napi_value files_prepare_read(napi_env env, sandbox_t *sb, napi_value *argv, size_t argc);
napi_value files_prepare_write(napi_env env, sandbox_t *sb, napi_value *argv, size_t argc);
/* native.textFilePage(bytes, options): the page of bytes read by readFile. */
void files_register(napi_env env, napi_value exports);

#endif
