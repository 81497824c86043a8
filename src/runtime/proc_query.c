/*
 * proc_query.c - listProcesses and readProcessLogs: synchronous reads of the registry
 * (see proc.h and proc_registry.h).
 *
 * Owns: nothing beyond each call.
 */
#include "runtime/proc.h"

#include <stdint.h>
#include <stdlib.h>

#include "napi/convert.h"
#include "napi/values.h"
#include "runtime/proc_registry.h"

/* The registry, or NULL with the error thrown (out of memory, or disposed). */
static proc_registry_t *active_registry(napi_env env, sandbox_t *sb) {
  proc_registry_t *pm = proc_registry_of(sb);
  err_t err = ERR_INIT;
  if (pm == NULL) err_oom(&err);
  else if (pm->disposed) proc_error(&err, "Sandbox process manager has been disposed.%s", "");
  else return pm;
  convert_throw_err(jsenv_get(env), &err);
  return NULL;
}

/* native.listProcesses(sandbox) */
napi_value proc_list(napi_env env, sandbox_t *sb, napi_value *argv) {
  (void)argv;
  proc_registry_t *pm = active_registry(env, sb);
  if (pm == NULL) return NULL;
  napi_value arr;
  NU_CALL(env, napi_create_array_with_length(env, pm->count, &arr));
  uint32_t i = 0;
  for (proc_rec_t *r = pm->records; r; r = r->next) napi_set_element(env, arr, i++, proc_info_to_js(env, r));
  return arr;
}

/* native.processLogs(sandbox, processId, tailBytes | undefined) */
napi_value proc_logs(napi_env env, sandbox_t *sb, napi_value *argv) {
  proc_registry_t *pm = active_registry(env, sb);
  if (pm == NULL) return NULL;
  err_t err = ERR_INIT;
  char *id = nu_strdup(env, argv[1]);
  proc_rec_t *r = id ? proc_rec_find(pm, id) : NULL;
  if (r == NULL) {
    proc_error(&err, "Unknown sandbox process: %s", id ? id : "");
    free(id);
    return convert_throw_err(jsenv_get(env), &err);
  }
  free(id);
  size_t want = SIZE_MAX;
  int64_t tail = 0;
  if (nu_safe_integer(env, argv[2], &tail) && tail >= 0) want = (size_t)tail;
  napi_value o;
  NU_CALL(env, napi_create_object(env, &o));
  const tail_t *tails[2] = {&r->out, &r->err};
  const char *names[2] = {"stdout", "stderr"};
  int truncated[2];
  for (int k = 0; k < 2; k++) {
    size_t n = 0;
    uint8_t *bytes = tail_copy(tails[k], want, &n);
    if (bytes == NULL) {
      err_oom(&err);
      return convert_throw_err(jsenv_get(env), &err);
    }
    truncated[k] = tails[k]->truncated || n < tails[k]->len;
    napi_set_named_property(env, o, names[k], nu_uint8array_take(env, bytes, n));
  }
  napi_set_named_property(env, o, "stdoutTruncated", nu_bool(env, truncated[0]));
  napi_set_named_property(env, o, "stderrTruncated", nu_bool(env, truncated[1]));
  return o;
}
