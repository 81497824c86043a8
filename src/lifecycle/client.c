/*
 * client.c - DockerSandboxClient's native half: construction (no I/O) and the endpoint
 * resolution probe the unit tests use.
 */
#include "lifecycle/client.h"

#include <stdlib.h>
#include <string.h>

#include "napi/convert.h"
#include "napi/jsenv.h"
#include "napi/token.h"
#include "napi/values.h"
#include "runtime/table.h"

static void client_finalize(napi_env env, void *data, void *hint) {
  (void)env;
  (void)hint;
  client_t *c = data;
  engine_unref(c->eng);
  free(c->docker_path);
  free(c);
}

/* options.transport, else ANVIA_SANDBOX_TRANSPORT, else "auto". 0, or -1 with a
 * TypeError in err. */
static int read_transport(napi_env env, napi_value options, int *out, err_t *err) {
  napi_value v = nu_get(env, options, "transport");
  char *name = NULL;
  const char *from = "transport";
  if (!nu_is_undefined(env, v)) {
    name = nu_strdup(env, v);
    if (name == NULL || transport_parse(name) < 0) {
      free(name);
      return err_type(err, "transport must be \"auto\", \"agent\" or \"engine\".");
    }
  } else {
    const char *e = getenv("ANVIA_SANDBOX_TRANSPORT");
    if (e == NULL || e[0] == 0) return 0;
    from = "ANVIA_SANDBOX_TRANSPORT";
    name = strdup(e);
    if (name == NULL) return err_oom(err);
    if (transport_parse(name) < 0) {
      free(name);
      return err_type(err, "%s must be \"auto\", \"agent\" or \"engine\".", from);
    }
  }
  *out = transport_parse(name);
  free(name);
  return 0;
}

client_t *client_call(napi_env env, napi_callback_info info, napi_value *options) {
  return token_call(env, info, TOKEN_CLIENT, options);
}

/* native.clientNew(options): validates as the original's constructor, plus `host` and
 * `transport`. */
static napi_value js_client_new(napi_env env, napi_callback_info info) {
  jsenv_t *js = jsenv_get(env);
  napi_value options;
  if (nu_args(env, info, &options, 1) < 0) return NULL;
  err_t err = ERR_INIT;
  if (!nu_is_record(env, options)) {
    err_type(&err, "options must be an object.");
    return convert_throw_err(js, &err);
  }
  napi_value docker_path = nu_get(env, options, "dockerPath");
  char *path = NULL;
  napi_valuetype t = nu_typeof(env, docker_path);
  if (t == napi_undefined || t == napi_null) {
    path = strdup("docker");
  } else {
    if (!nu_is_nonempty_string(env, docker_path)) {
      err_type(&err, "dockerPath must be a non-empty string.");
      return convert_throw_err(js, &err);
    }
    path = nu_strdup(env, docker_path);
  }
  char *host = NULL;
  napi_value host_v = nu_get(env, options, "host");
  if (!nu_is_undefined(env, host_v)) {
    if (!nu_is_nonempty_string(env, host_v)) {
      free(path);
      err_type(&err, "host must be a non-empty string.");
      return convert_throw_err(js, &err);
    }
    host = nu_strdup(env, host_v);
    endpoint_t ep;
    if (endpoint_parse(host, &ep, &err) != 0) {
      free(path);
      free(host);
      return convert_throw_err(js, &err);
    }
    endpoint_free(&ep);
  }
  int transport = TRANSPORT_AUTO;
  if (read_transport(env, options, &transport, &err) != 0) {
    free(path);
    free(host);
    return convert_throw_err(js, &err);
  }
  client_t *c = calloc(1, sizeof(*c));
  if (c) c->eng = engine_new(js->io, host);
  if (c) c->transport = transport;
  free(host);
  if (c == NULL || c->eng == NULL || path == NULL) {
    free(path);
    if (c) engine_unref(c->eng);
    free(c);
    err_oom(&err);
    return convert_throw_err(js, &err);
  }
  c->docker_path = path;
  napi_value token = token_wrap(env, TOKEN_CLIENT, c, client_finalize);
  if (token == NULL) client_finalize(env, c, NULL);
  return token;
}

static napi_value endpoint_to_js(napi_env env, const endpoint_t *ep) {
  napi_value o;
  napi_create_object(env, &o);
  napi_set_named_property(env, o, "kind", nu_string(env, ep->kind == EP_UNIX ? "unix" : ep->kind == EP_SSH ? "ssh" : "tcp"));
  if (ep->ssh_user) napi_set_named_property(env, o, "user", nu_string(env, ep->ssh_user));
  if (ep->ssh_path) napi_set_named_property(env, o, "remoteSocketPath", nu_string(env, ep->ssh_path));
  if (ep->unix_path) napi_set_named_property(env, o, "socketPath", nu_string(env, ep->unix_path));
  if (ep->host) napi_set_named_property(env, o, "host", nu_string(env, ep->host));
  if (ep->port) napi_set_named_property(env, o, "port", nu_number(env, ep->port));
  napi_set_named_property(env, o, "tls", nu_bool(env, ep->tls));
  napi_set_named_property(env, o, "tlsVerify", nu_bool(env, ep->tls_verify));
  if (ep->ca_file) napi_set_named_property(env, o, "caFile", nu_string(env, ep->ca_file));
  if (ep->cert_file) napi_set_named_property(env, o, "certFile", nu_string(env, ep->cert_file));
  if (ep->key_file) napi_set_named_property(env, o, "keyFile", nu_string(env, ep->key_file));
  napi_set_named_property(env, o, "display", nu_string(env, ep->display));
  napi_set_named_property(env, o, "source", nu_string(env, ep->source));
  return o;
}

/* native.resolveEndpoint(host, env): resolution as a pure function, for tests. */
static napi_value js_resolve_endpoint(napi_env env, napi_callback_info info) {
  jsenv_t *js = jsenv_get(env);
  napi_value argv[2];
  if (nu_args(env, info, argv, 2) < 0) return NULL;
  char *host = nu_strdup(env, argv[0]);
  napi_value e = argv[1];
  char *vals[7];
  const char *names[7] = {"DOCKER_HOST", "DOCKER_CONTEXT", "DOCKER_CONFIG", "HOME",
                          "DOCKER_TLS_VERIFY", "DOCKER_TLS", "DOCKER_CERT_PATH"};
  for (int i = 0; i < 7; i++) vals[i] = nu_strdup(env, nu_get(env, e, names[i]));
  endpoint_env_t penv = {vals[0], vals[1], vals[2], vals[3], vals[4], vals[5], vals[6]};
  endpoint_t ep;
  err_t err = ERR_INIT;
  int rc = endpoint_resolve(host, &penv, &ep, &err);
  for (int i = 0; i < 7; i++) free(vals[i]);
  free(host);
  if (rc != 0) return convert_throw_err(js, &err);
  napi_value out = endpoint_to_js(env, &ep);
  endpoint_free(&ep);
  return out;
}

void client_register(napi_env env, napi_value exports) {
  napi_property_descriptor fns[] = {
      {"clientNew", NULL, js_client_new, NULL, NULL, NULL, napi_default, NULL},
      {"resolveEndpoint", NULL, js_resolve_endpoint, NULL, NULL, NULL, napi_default, NULL},
  };
  napi_define_properties(env, exports, sizeof(fns) / sizeof(fns[0]), fns);
}
