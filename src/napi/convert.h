/*
 * convert.h - C records as the JavaScript values the shim receives: errors (a
 * DockerSandboxError, TypeError or RangeError built from an err_t), command results, text
 * file pages and sandbox handles.
 *
 * Owns: nothing; a sandbox handle takes its own reference on the sandbox, released when
 * the handle is collected.
 */
#ifndef SBX_CONVERT_H
#define SBX_CONVERT_H

#include <node_api.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/exec_result.h"
#include "codec/findparse.h"
#include "codec/textpage.h"
#include "napi/jsenv.h"
#include "sandbox/sandbox.h"

/* Builds the JS error value for err (which stays set). */
napi_value convert_error_value(jsenv_t *js, err_t *err);
/* Throws err as a JS exception and clears it; returns NULL for the caller to return. */
napi_value convert_throw_err(jsenv_t *js, err_t *err);
/* { stdout, stderr, durationMs, stdoutTruncated, stderrTruncated, status[, exitCode] } */
/* A Uint8Array of b's bytes, taken without a copy (b is left empty): NULL with the
 * out-of-memory error thrown when b cannot give them up, so no byte is lost unsaid. */
napi_value convert_bytes(jsenv_t *js, buf_t *b);
napi_value convert_exec_result(napi_env env, exec_result_t *r);
/* The object readTextFilePage resolves with. */
napi_value convert_text_page(napi_env env, const text_page_t *page);
/* listFiles' result: [{ path, type, size? }] */
napi_value convert_list_entries(napi_env env, const list_entries_t *entries);
/* { containerPort, host: "127.0.0.1", hostPort, protocol: "tcp" } */
napi_value convert_published_port(napi_env env, int container_port, int host_port);
/* { sandbox: <token>, id, workdir, publishedPorts: [...] } for the JS handle. */
napi_value convert_sandbox(napi_env env, sandbox_t *s);
/* The sandbox behind a handle's token, or NULL with a TypeError pending. */
sandbox_t *convert_sandbox_of(napi_env env, napi_value v);
/* A call of (sandbox[, options]): the sandbox of its first argument and, when `options` is
 * not NULL, the second (undefined when not passed). NULL with an exception pending. */
sandbox_t *convert_sandbox_call(napi_env env, napi_callback_info info, napi_value *options);

#endif
