/*
 * convert.c - C records as the JavaScript values the shim receives (see convert.h);
 * error messages with their control characters escaped.
 */
#include "napi/convert.h"

#include <string.h>

#include "base/buf.h"

#include "napi/token.h"
#include "napi/values.h"

/*
 * A message as JavaScript gets it: with its control characters escaped (base/buf.h
 * buf_append_escaped). Messages name what the sandbox and the engine chose (file names,
 * an engine's error text, a command's complaint) and reach an LLM through the tools; a
 * newline or a terminal escape code in them must not read as more than the one message.
 * A message without control characters (every message made from ordinary input) is
 * passed as it is.
 */
static napi_value message_value(napi_env env, const char *text) {
  size_t len = strlen(text);
  if (!text_has_controls(text, len)) return nu_string(env, text);
  buf_t b;
  buf_init(&b, 0);
  napi_value v = buf_append_escaped(&b, text, len) == 0 && buf_terminate(&b) == 0 ? nu_string(env, (const char *)b.data)
                                                                                  : nu_string(env, "Out of memory.");
  buf_free(&b);
  return v;
}

napi_value convert_error_value(jsenv_t *js, err_t *err) {
  napi_env env = js->env;
  napi_value msg = message_value(env, err->message ? err->message : "Unknown error.");
  napi_value result = NULL;
  /* A TypeError or RangeError with a code (e.g. ERR_ENCODING_INVALID_ENCODED_DATA) carries it as `code`. */
  napi_value plain_code = err->code ? nu_string(env, err->code) : NULL;
  if (err->kind == ERRK_TYPE) {
    napi_create_type_error(env, plain_code, msg, &result);
    return result;
  }
  if (err->kind == ERRK_RANGE) {
    napi_create_range_error(env, plain_code, msg, &result);
    return result;
  }
  napi_value ctor = NULL;
  if (js->error_ctor) napi_get_reference_value(env, js->error_ctor, &ctor);
  napi_value details = nu_undefined(env);
  if (err->exec_details) details = convert_exec_result(env, err->exec_details);
  else if (err->details) details = nu_from_json(env, err->details);
  napi_value options = nu_undefined(env);
  if (err->cause) {
    napi_value cause_msg = message_value(env, err->cause), cause;
    napi_create_error(env, NULL, cause_msg, &cause);
    napi_create_object(env, &options);
    napi_set_named_property(env, options, "cause", cause);
  }
  if (ctor == NULL) {
    napi_create_error(env, NULL, msg, &result);
    return result;
  }
  napi_value argv[4] = {msg, nu_string(env, err->code ? err->code : CODE_DOCKER_COMMAND_FAILED), details,
                        options};
  if (napi_new_instance(env, ctor, 4, argv, &result) != napi_ok) {
    napi_create_error(env, NULL, msg, &result);
  }
  return result;
}

napi_value convert_throw_err(jsenv_t *js, err_t *err) {
  napi_throw(js->env, convert_error_value(js, err));
  err_clear(err);
  return NULL;
}

napi_value convert_bytes(jsenv_t *js, buf_t *b) {
  size_t len = 0;
  uint8_t *data = (uint8_t *)buf_steal(b, &len);
  if (data == NULL) {
    err_t err = ERR_INIT;
    err_oom(&err);
    return convert_throw_err(js, &err);
  }
  return nu_uint8array_take(js->env, data, len);
}

napi_value convert_exec_result(napi_env env, exec_result_t *r) {
  napi_value o;
  napi_create_object(env, &o);
  napi_set_named_property(env, o, "stdout", nu_uint8array(env, r->out.bytes.data, r->out.bytes.len));
  napi_set_named_property(env, o, "stderr", nu_uint8array(env, r->err.bytes.data, r->err.bytes.len));
  napi_set_named_property(env, o, "durationMs", nu_number(env, r->duration_ms));
  napi_set_named_property(env, o, "stdoutTruncated", nu_bool(env, r->out.truncated));
  napi_set_named_property(env, o, "stderrTruncated", nu_bool(env, r->err.truncated));
  if (r->timed_out) {
    napi_set_named_property(env, o, "status", nu_string(env, "timed_out"));
  } else {
    napi_set_named_property(env, o, "status", nu_string(env, "exited"));
    napi_set_named_property(env, o, "exitCode", nu_number(env, r->exit_code));
  }
  return o;
}

static napi_value opt_number(napi_env env, int has, uint64_t v) {
  return has ? nu_number(env, (double)v) : nu_null(env);
}

napi_value convert_text_page(napi_env env, const text_page_t *page) {
  napi_value o;
  NU_CALL(env, napi_create_object(env, &o));
  NU_CALL(env, napi_set_named_property(env, o, "content",
                                       nu_string_n(env, (const char *)page->content, page->content_len)));
  NU_CALL(env, napi_set_named_property(env, o, "startLine", nu_number(env, (double)page->start_line)));
  NU_CALL(env, napi_set_named_property(env, o, "endLine", opt_number(env, page->has_end_line, page->end_line)));
  NU_CALL(env, napi_set_named_property(env, o, "nextStartLine",
                                       opt_number(env, page->has_next_start_line, page->next_start_line)));
  NU_CALL(env, napi_set_named_property(env, o, "truncated", nu_bool(env, page->truncated)));
  napi_value by = page->truncated_by == PAGE_TRUNC_BYTES   ? nu_string(env, "bytes")
                  : page->truncated_by == PAGE_TRUNC_LINES ? nu_string(env, "lines")
                                                           : nu_null(env);
  NU_CALL(env, napi_set_named_property(env, o, "truncatedBy", by));
  return o;
}

static void sandbox_finalize(napi_env env, void *data, void *hint) {
  (void)env;
  (void)hint;
  sandbox_unref(data);
}

sandbox_t *convert_sandbox_of(napi_env env, napi_value v) { return token_unwrap(env, v, TOKEN_SANDBOX); }

sandbox_t *convert_sandbox_call(napi_env env, napi_callback_info info, napi_value *options) {
  return token_call(env, info, TOKEN_SANDBOX, options);
}

napi_value convert_published_port(napi_env env, int container_port, int host_port) {
  napi_value p;
  napi_create_object(env, &p);
  napi_set_named_property(env, p, "containerPort", nu_number(env, container_port));
  napi_set_named_property(env, p, "host", nu_string(env, "127.0.0.1"));
  napi_set_named_property(env, p, "hostPort", nu_number(env, host_port));
  napi_set_named_property(env, p, "protocol", nu_string(env, "tcp"));
  return p;
}

napi_value convert_sandbox(napi_env env, sandbox_t *s) {
  napi_value o, ext, ports;
  NU_CALL(env, napi_create_object(env, &o));
  sandbox_ref(s);
  ext = token_wrap(env, TOKEN_SANDBOX, s, sandbox_finalize);
  if (ext == NULL) {
    sandbox_unref(s);
    return NULL;
  }
  napi_set_named_property(env, o, "sandbox", ext);
  napi_set_named_property(env, o, "id", nu_string(env, s->id));
  napi_set_named_property(env, o, "workdir", nu_string(env, s->workdir));
  napi_set_named_property(env, o, "containerRuntime",
                          nu_string(env, s->container_runtime ? s->container_runtime : DEFAULT_CONTAINER_RUNTIME));
  napi_create_array_with_length(env, s->nports, &ports);
  for (size_t i = 0; i < s->nports; i++) {
    napi_value p = convert_published_port(env, s->ports[i].container_port, s->ports[i].host_port);
    napi_set_element(env, ports, (uint32_t)i, p);
  }
  napi_set_named_property(env, o, "publishedPorts", ports);
  return o;
}

napi_value convert_list_entries(napi_env env, const list_entries_t *entries) {
  napi_value arr;
  napi_create_array_with_length(env, entries->count, &arr);
  for (size_t i = 0; i < entries->count; i++) {
    const list_entry_t *e = &entries->items[i];
    napi_value item;
    napi_create_object(env, &item);
    napi_set_named_property(env, item, "path", nu_string(env, e->path));
    napi_set_named_property(env, item, "type", nu_string(env, file_type_name(e->type)));
    if (e->has_size) napi_set_named_property(env, item, "size", nu_number(env, (double)e->size));
    napi_set_element(env, arr, (uint32_t)i, item);
  }
  return arr;
}
