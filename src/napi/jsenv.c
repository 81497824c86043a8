/*
 * jsenv.c - per-environment state (see jsenv.h).
 */
#include "napi/jsenv.h"

#include <stdlib.h>

int jsenv_enter(jsenv_t *e, jsenv_scope_t *s) {
  s->ok = 0;
  if (e->closing) return -1;
  if (napi_open_handle_scope(e->env, &s->hs) != napi_ok) return -1;
  napi_value resource = NULL;
  napi_get_reference_value(e->env, e->resource, &resource);
  if (resource == NULL || napi_open_callback_scope(e->env, resource, e->actx, &s->cs) != napi_ok) {
    napi_close_handle_scope(e->env, s->hs);
    return -1;
  }
  s->ok = 1;
  return 0;
}

void jsenv_leave(jsenv_t *e, jsenv_scope_t *s) {
  if (!s->ok) return;
  napi_close_callback_scope(e->env, s->cs);
  napi_close_handle_scope(e->env, s->hs);
  s->ok = 0;
}

jsenv_t *jsenv_get(napi_env env) {
  jsenv_t *e = NULL;
  napi_get_instance_data(env, (void **)&e);
  return e;
}

static void instance_finalize(napi_env env, void *data, void *hint) {
  (void)env;
  (void)data;
  (void)hint;
  /* jsenv_close owns the teardown (the module's cleanup hook calls it). */
}

jsenv_t *jsenv_new(napi_env env) {
  uv_loop_t *uv = NULL;
  napi_value resource, name;
  jsenv_t *e = calloc(1, sizeof(*e));
  if (e == NULL) goto oom;
  e->env = env;
  if (napi_get_uv_event_loop(env, &uv) != napi_ok) goto fail;
  e->io = io_new(uv);
  if (e->io == NULL) goto oom;
  if (napi_create_object(env, &resource) != napi_ok) goto fail;
  if (napi_create_reference(env, resource, 1, &e->resource) != napi_ok) goto fail;
  if (napi_create_string_utf8(env, "anvia.sandbox", NAPI_AUTO_LENGTH, &name) != napi_ok) goto fail;
  if (napi_async_init(env, resource, name, &e->actx) != napi_ok) goto fail;
  if (napi_set_instance_data(env, e, instance_finalize, NULL) != napi_ok) goto fail;
  return e;
oom:
  napi_throw_error(env, NULL, "Out of memory.");
fail:
  if (e != NULL) {
    if (e->actx) napi_async_destroy(env, e->actx);
    if (e->resource) napi_delete_reference(env, e->resource);
    if (e->io) io_close(e->io, NULL, NULL);
    free(e);
  }
  return NULL;
}

int jsenv_on_teardown(jsenv_t *e, jsenv_hook_fn fn) {
  for (jsenv_hook_t *h = e->hooks; h != NULL; h = h->next)
    if (h->fn == fn) return 0;
  jsenv_hook_t *h = malloc(sizeof(*h));
  if (h == NULL) return -1;
  h->fn = fn;
  h->next = e->hooks;
  e->hooks = h;
  return 0;
}

static void on_io_closed(void *arg) {
  jsenv_t *e = arg;
  void (*closed)(void *) = e->closed;
  void *closed_arg = e->closed_arg;
  free(e);
  if (closed) closed(closed_arg);
}

void jsenv_close(jsenv_t *e, void (*closed)(void *arg), void *arg) {
  e->closing = 1;
  e->closed = closed;
  e->closed_arg = arg;
  while (e->hooks) {
    jsenv_hook_t *h = e->hooks;
    e->hooks = h->next;
    h->fn(e);
    free(h);
  }
  if (e->error_ctor) napi_delete_reference(e->env, e->error_ctor);
  if (e->null_byte_error) napi_delete_reference(e->env, e->null_byte_error);
  napi_delete_reference(e->env, e->resource);
  napi_async_destroy(e->env, e->actx);
  /* The state outlives the I/O context: handles closing later still find it. */
  io_close(e->io, on_io_closed, e);
}
