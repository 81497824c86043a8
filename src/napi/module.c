/*
 * module.c - native.init and native.setAgentDir (see module.h): the environment's error
 * classes (napi/jsenv.h holds them) and the agent's directory (engine/agent_image.h).
 */
#include "napi/module.h"

#include <stdlib.h>

#include "engine/agent_image.h"
#include "napi/jsenv.h"
#include "napi/values.h"

/* native.init(DockerSandboxError[, nullByteArgumentError]): the class every engine error
 * is built with, and the builder of Node's TypeError for a NUL byte in a command's
 * argument (lib/errors.js; without it, napi/args.c builds a plain one). */
static napi_value js_init(napi_env env, napi_callback_info info) {
  jsenv_t *js = jsenv_get(env);
  napi_value argv[2];
  if (nu_args(env, info, argv, 2) < 0) return NULL;
  if (nu_typeof(env, argv[0]) != napi_function) {
    napi_throw_type_error(env, NULL, "init expects the DockerSandboxError class.");
    return NULL;
  }
  if (js->error_ctor) napi_delete_reference(env, js->error_ctor);
  js->error_ctor = NULL;
  NU_CALL(env, napi_create_reference(env, argv[0], 1, &js->error_ctor));
  if (js->null_byte_error) napi_delete_reference(env, js->null_byte_error);
  js->null_byte_error = NULL;
  if (nu_typeof(env, argv[1]) == napi_function)
    NU_CALL(env, napi_create_reference(env, argv[1], 1, &js->null_byte_error));
  return nu_undefined(env);
}

/* native.setAgentDir(dir): where the in-sandbox agent's binaries are
 * (<dir>/<arch>/anvia-agent). */
static napi_value js_set_agent_dir(napi_env env, napi_callback_info info) {
  jsenv_t *js = jsenv_get(env);
  napi_value argv[1];
  if (nu_args(env, info, argv, 1) < 0) return NULL;
  char *dir = nu_strdup(env, argv[0]);
  if (dir == NULL) {
    napi_throw_type_error(env, NULL, "setAgentDir expects a directory.");
    return NULL;
  }
  int rc = agent_images_set_dir(js->io, dir);
  free(dir);
  if (rc != 0) {
    napi_throw_error(env, NULL, "Out of memory.");
    return NULL;
  }
  return nu_undefined(env);
}

void module_register(napi_env env, napi_value exports) {
  napi_property_descriptor fns[] = {
      {"setAgentDir", NULL, js_set_agent_dir, NULL, NULL, NULL, napi_default, NULL},
      {"init", NULL, js_init, NULL, NULL, NULL, napi_default, NULL},
  };
  napi_define_properties(env, exports, sizeof(fns) / sizeof(fns[0]), fns);
}
