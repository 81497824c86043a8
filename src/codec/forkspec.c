/*
 * forkspec.c - fork request bodies from the parent's inspection (see forkspec.h).
 */
#include "codec/forkspec.h"

#include <string.h>

#include "codec/runspec.h"
#include "codec/sandbox_list.h"

const char *forkspec_base_image(json_t *ins) {
  json_t *labels = json_object_get(json_object_get(ins, "Config"), "Labels");
  json_t *image = json_object_get(ins, "Image");
  const char *own = json_is_string(image) && json_string_length(image) > 0 ? json_string_value(image) : NULL;
  /* The label chooses what runs as root in the copy helper: only a fork's own (made from
   * the image its labels name) is taken, never one an image brought. */
  const char *base = label_value(labels, LABEL_FORK_BASE);
  if (base != NULL && fork_labels_proven(labels, own)) return base;
  return own;
}

/* Copies `key` from `from` to `to` when it is there (and not null). */
static int copy_field(json_t *to, json_t *from, const char *key) {
  json_t *v = json_object_get(from, key);
  if (v == NULL || json_is_null(v)) return 0;
  json_t *copy = json_deep_copy(v);
  return copy == NULL ? -1 : json_object_set_new(to, key, copy);
}

static int set_str(json_t *obj, const char *key, const char *value) {
  return json_object_set_new(obj, key, json_string(value));
}

/* The fork's ports are new host ports: every binding keeps its address (127.0.0.1) and
 * asks for any free port. Docker's inspection keeps the request as made (an empty
 * HostPort); Podman's reports the port it chose, which the parent holds. */
static int fresh_host_ports(json_t *host) {
  json_t *bindings = json_object_get(host, "PortBindings");
  const char *port;
  json_t *list;
  if (!json_is_object(bindings)) return 0;
  json_object_foreach(bindings, port, list) {
    size_t i;
    json_t *b;
    if (!json_is_array(list)) continue;
    json_array_foreach(list, i, b) {
      if (json_is_object(b) && json_object_set_new(b, "HostPort", json_string("")) != 0) return -1;
    }
  }
  return 0;
}

json_t *forkspec_container(json_t *ins, const fork_names_t *n, err_t *err) {
  json_t *config = json_object_get(ins, "Config");
  json_t *hc_in = json_object_get(ins, "HostConfig");
  if (!json_is_object(config)) {
    err_sandbox(err, CODE_INVALID_STATE, "Sandbox metadata is invalid: %s", "Config");
    return NULL;
  }
  if (!json_is_object(hc_in)) {
    err_sandbox(err, CODE_INVALID_STATE, "Sandbox metadata is invalid: %s", "HostConfig");
    return NULL;
  }
  json_t *body = json_object();
  json_t *host = json_object();
  json_t *labels = json_object_get(config, "Labels");
  labels = json_is_object(labels) ? json_deep_copy(labels) : json_object();
  json_t *mounts = json_pack("[{s:s, s:s, s:s}]", "Type", "volume", "Source", n->volume, "Target", n->workdir);
  int rc = (body && host && labels && mounts) ? 0 : -1;
  static const char *const config_keys[] = {"Cmd", "Env", "User", "WorkingDir", "ExposedPorts"};
  for (size_t i = 0; rc == 0 && i < sizeof(config_keys) / sizeof(config_keys[0]); i++)
    rc = copy_field(body, config, config_keys[i]);
  static const char *const host_keys[] = {"NetworkMode", "PortBindings",   "Memory",      "NanoCpus", "PidsLimit",
                                          "ShmSize",     "ReadonlyRootfs", "SecurityOpt", "CapDrop",  "CapAdd",
                                          "Tmpfs"};
  for (size_t i = 0; rc == 0 && i < sizeof(host_keys) / sizeof(host_keys[0]); i++)
    rc = copy_field(host, hc_in, host_keys[i]);
  if (rc == 0) rc = fresh_host_ports(host);
  /* The parent's OCI runtime: asked for again when the parent asked for one by name (its
   * label), and recorded on the fork as resumeSandbox reads the parent's. */
  json_t *asked = json_object_get(labels, LABEL_CONTAINER_RUNTIME);
  if (rc == 0 && json_is_string(asked) && json_string_length(asked) > 0 &&
      strcmp(json_string_value(asked), DEFAULT_CONTAINER_RUNTIME) != 0)
    rc = json_object_set_new(host, "Runtime", json_string(json_string_value(asked)));
  if (rc == 0) rc = set_str(labels, LABEL_CONTAINER_RUNTIME, runspec_container_runtime(ins));
  if (rc == 0) {
    rc = set_str(labels, LABEL_ID, n->fork_id) | set_str(labels, LABEL_WS_TYPE, "ephemeral") |
         set_str(labels, LABEL_WS_VOLUME, n->volume) | set_str(labels, LABEL_FORK_IMAGE, n->image) |
         set_str(labels, LABEL_FORK_PARENT, n->parent_id) | set_str(labels, LABEL_FORK_BASE, n->base_image);
  }
  if (rc == 0) {
    rc = set_str(body, "Image", n->image) | json_object_set_new(body, "Labels", labels);
    labels = NULL;
  }
  if (rc == 0) {
    rc = json_object_set_new(host, "Mounts", mounts);
    mounts = NULL;
  }
  if (rc == 0) {
    rc = json_object_set_new(body, "HostConfig", host);
    host = NULL;
  }
  json_decref(labels);
  json_decref(mounts);
  json_decref(host);
  if (rc != 0) {
    json_decref(body);
    err_oom(err);
    return NULL;
  }
  return body;
}

json_t *forkspec_copy_helper(const char *image, const char *from_volume, const char *to_volume, const char *fork_id) {
  json_t *env = json_array();
  for (size_t i = 0; env != NULL && i < ROOT_EXEC_ENVC; i++) {
    if (json_array_append_new(env, json_string(ROOT_EXEC_ENV[i])) != 0) {
      json_decref(env);
      env = NULL;
    }
  }
  if (env == NULL) return NULL;
  /* Root runs /bin/cp with a fixed environment: nothing the image's PATH or loader
   * variables name is run (codec/runspec.h ROOT_EXEC_ENV). */
  return json_pack(
      "{s:s, s:[s], s:[s, s, s], s:o, s:s, s:{s:s}, s:b, s:b,"
      " s:{s:s, s:[s], s:[s, s, s, s, s], s:[s], s:b, s:[{s:s, s:s, s:s, s:b}, {s:s, s:s, s:s}]}}",
      "Image", image, "Entrypoint", "/bin/cp", "Cmd", "-a", FORK_COPY_FROM "/.", FORK_COPY_TO "/", "Env", env, "User",
      "0:0", "Labels",
      LABEL_ID, fork_id, "AttachStdout", 0, "AttachStderr", 0, "HostConfig", "NetworkMode", "none", "CapDrop", "ALL",
      "CapAdd", "CHOWN", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "FSETID", "SecurityOpt", "no-new-privileges:true",
      "ReadonlyRootfs", 1, "Mounts", "Type", "volume", "Source", from_volume, "Target", FORK_COPY_FROM, "ReadOnly", 1,
      "Type", "volume", "Source", to_volume, "Target", FORK_COPY_TO);
}

json_t *forkspec_commit_config(const char *fork_id) { return json_pack("{s:{s:s}}", "Labels", LABEL_ID, fork_id); }
