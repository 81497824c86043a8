/*
 * runspec.c - container create body, port mapping and the environment of what the
 * package runs as root in a container (see runspec.h).
 */
#include "codec/runspec.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "codec/sh/keep_alive_sh.h"

const char *const ROOT_EXEC_ENV[ROOT_EXEC_ENVC] = {
    "PATH=" ROOT_PATH, "LC_ALL=C",    "ENV=",        "BASH_ENV=",        "SHELLOPTS=",
    "BASHOPTS=",       "CDPATH=",     "LD_PRELOAD=", "LD_LIBRARY_PATH=", "LD_AUDIT=",
};

char *container_name_for(const char *id) {
  buf_t b;
  buf_init(&b, 0);
  if (buf_printf(&b, "anvia-sandbox-%s", id) != 0) {
    buf_free(&b);
    return NULL;
  }
  return buf_steal(&b, NULL);
}

/* value * 10^9 exactly, from a JS number's shortest decimal text ("1.5", "2", "1e-7"). */
int parse_nano_cpus(const char *text, int64_t *nanos) {
  const char *p = text;
  char digits[64];
  size_t nd = 0;
  int point = -1; /* digits before the decimal point */
  for (; *p && *p != 'e' && *p != 'E'; p++) {
    if (*p == '.') {
      if (point >= 0) return -1;
      point = (int)nd;
    } else if (*p >= '0' && *p <= '9') {
      if (nd >= sizeof(digits)) return -1;
      digits[nd++] = *p;
    } else {
      return -1;
    }
  }
  if (nd == 0) return -1;
  if (point < 0) point = (int)nd;
  long exp10 = 0;
  if (*p == 'e' || *p == 'E') {
    char *end = NULL;
    exp10 = strtol(p + 1, &end, 10);
    if (end == p + 1 || *end != 0 || exp10 > 100 || exp10 < -100) return -1;
  }
  /* value = 0.d1d2... * 10^(point + exp10); nanos = digits * 10^(point + exp10 + 9 - nd) */
  long shift = (long)point + exp10 + 9 - (long)nd;
  /* Drop trailing zero digits first (they cannot make the value fractional). */
  while (nd > 0 && digits[nd - 1] == '0' && shift < 0) {
    nd--;
    shift++;
  }
  if (shift < 0) return -1; /* too precise: fractional nanoseconds */
  int64_t v = 0;
  for (size_t i = 0; i < nd; i++) {
    if (v > (INT64_MAX - 9) / 10) return -1;
    v = v * 10 + (digits[i] - '0');
  }
  for (long i = 0; i < shift; i++) {
    if (v > INT64_MAX / 10) return -1;
    v *= 10;
  }
  *nanos = v;
  return 0;
}

char *seccomp_compact(const uint8_t *text, size_t len, const char *path, err_t *err) {
  json_error_t jerr;
  json_t *j = json_loadb((const char *)(text ? text : (const uint8_t *)""), len, 0, &jerr);
  if (j == NULL) {
    err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, "compacting json for seccomp profile (%s) failed: %s", path,
                jerr.text);
    return NULL;
  }
  char *compact = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
  json_decref(j);
  if (compact == NULL) err_oom(err);
  return compact;
}

static int set_str(json_t *obj, const char *key, const char *value) {
  return json_object_set_new(obj, key, json_string(value));
}

/* The labels a sandbox is resumed from: the caller's, then the schema, id, workdir,
 * workspace, network, runtime limits and container runtime. */
static json_t *labels_for(const create_opts_t *o, const char *volume) {
  json_t *labels = json_object();
  if (labels == NULL) return NULL;
  char num[32];
  for (size_t i = 0; i < o->labels.count; i++) set_str(labels, o->labels.items[i].key, o->labels.items[i].value);
  set_str(labels, LABEL_SCHEMA, SBX_SCHEMA_VERSION);
  set_str(labels, LABEL_ID, o->id);
  set_str(labels, LABEL_WORKDIR, o->workdir);
  set_str(labels, LABEL_WS_TYPE, o->ws_ephemeral ? "ephemeral" : "docker-volume");
  set_str(labels, LABEL_WS_VOLUME, volume);
  set_str(labels, LABEL_NETWORK_MODE, o->net_bridge ? "bridge" : "none");
  const struct {
    const char *label;
    int64_t value;
  } limits[] = {
      {LABEL_CMD_TIMEOUT, o->runtime.command_timeout_ms},
      {LABEL_MAX_OUTPUT, o->runtime.max_output_bytes},
      {LABEL_MAX_FILE, o->runtime.max_file_bytes},
      {LABEL_MAX_PROCESSES, o->runtime.max_processes},
  };
  for (size_t i = 0; i < sizeof(limits) / sizeof(limits[0]); i++) {
    snprintf(num, sizeof(num), "%lld", (long long)limits[i].value);
    set_str(labels, limits[i].label, num);
  }
  json_object_set_new(labels, LABEL_CONTAINER_RUNTIME,
                      o->container_runtime ? json_stringn(o->container_runtime, o->container_runtime_len)
                                           : json_string(DEFAULT_CONTAINER_RUNTIME));
  return labels;
}

/* ["KEY=value", ...] */
static json_t *env_for(const create_opts_t *o) {
  json_t *env = json_array();
  for (size_t i = 0; env != NULL && i < o->env.count; i++) {
    buf_t kv;
    buf_init(&kv, 0);
    if (buf_printf(&kv, "%s=%s", o->env.items[i].key, o->env.items[i].value) != 0 || buf_terminate(&kv) != 0) {
      buf_free(&kv);
      json_decref(env);
      return NULL;
    }
    json_array_append_new(env, json_string((char *)kv.data));
    buf_free(&kv);
  }
  return env;
}

/* --network none, or bridge with 127.0.0.1::PORT/tcp publishes. */
static void set_network(json_t *body, json_t *host, const create_opts_t *o) {
  if (!o->net_bridge) {
    set_str(host, "NetworkMode", "none");
    return;
  }
  set_str(host, "NetworkMode", "bridge");
  if (o->nports == 0) return;
  char num[32];
  json_t *exposed = json_object(), *bindings = json_object();
  for (size_t i = 0; i < o->nports; i++) {
    snprintf(num, sizeof(num), "%d/tcp", o->ports[i]);
    json_object_set_new(exposed, num, json_object());
    json_object_set_new(bindings, num, json_pack("[{s:s, s:s}]", "HostIp", "127.0.0.1", "HostPort", ""));
  }
  json_object_set_new(body, "ExposedPorts", exposed);
  json_object_set_new(host, "PortBindings", bindings);
}

/* --memory, --cpus (exact nano CPUs), --pids-limit, --shm-size. 0, or -1 with err set. */
static int set_resources(json_t *host, const create_opts_t *o, err_t *err) {
  if (o->has_memory_mb) {
    if (o->memory_mb > INT64_MAX / (1024 * 1024))
      return err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, "Docker cannot apply memoryMb %lld: out of range.",
                         (long long)o->memory_mb);
    json_object_set_new(host, "Memory", json_integer(o->memory_mb * 1024 * 1024));
  }
  if (o->cpus_text) {
    int64_t nanos = 0;
    if (parse_nano_cpus(o->cpus_text, &nanos) != 0 || nanos <= 0)
      return err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, "Docker cannot apply cpus %s: value is too precise.",
                         o->cpus_text);
    json_object_set_new(host, "NanoCpus", json_integer(nanos));
  }
  if (o->has_pids_limit) json_object_set_new(host, "PidsLimit", json_integer(o->pids_limit));
  if (o->has_shm_mb) {
    if (o->shm_mb > INT64_MAX / (1024 * 1024))
      return err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, "Docker cannot apply sharedMemoryMb %lld: out of range.",
                         (long long)o->shm_mb);
    json_object_set_new(host, "ShmSize", json_integer(o->shm_mb * 1024 * 1024));
  }
  return 0;
}

static json_t *string_array(char **items, size_t n) {
  json_t *a = json_array();
  for (size_t i = 0; a != NULL && i < n; i++) json_array_append_new(a, json_string(items[i]));
  return a;
}

/* --read-only, --security-opt (no-new-privileges, seccomp=<compact JSON> or, for Podman,
 * seccomp=<the profile's path on the engine's host>), --cap-drop
 * (ALL unless given), --cap-add. 0, or -1 when out of memory. */
static int set_security(json_t *host, const create_opts_t *o) {
  if (o->readonly_rootfs) {
    json_object_set_new(host, "ReadonlyRootfs", json_true());
    /* Where the in-sandbox agent is written when the rootfs refuses it: a small tmpfs of
     * its own (root's, executable), invisible to the archive endpoints. */
    json_object_set_new(host, "Tmpfs", json_pack("{s:s}", AGENT_TMPFS_PATH, AGENT_TMPFS_OPTIONS));
  }
  json_t *secopt = json_array();
  if (secopt == NULL) return -1;
  if (o->no_new_privileges) json_array_append_new(secopt, json_string("no-new-privileges:true"));
  if (o->seccomp_json) {
    buf_t s;
    buf_init(&s, 0);
    if (buf_printf(&s, "seccomp=%s", o->seccomp_ref ? o->seccomp_ref : o->seccomp_json) != 0 || buf_terminate(&s) != 0) {
      buf_free(&s);
      json_decref(secopt);
      return -1;
    }
    json_array_append_new(secopt, json_string((char *)s.data));
    buf_free(&s);
  }
  if (json_array_size(secopt) > 0) json_object_set_new(host, "SecurityOpt", secopt);
  else json_decref(secopt);
  char *all[] = {"ALL"};
  json_object_set_new(host, "CapDrop", o->cap_drop_given ? string_array(o->cap_drop, o->ncap_drop) : string_array(all, 1));
  if (o->ncap_add > 0) json_object_set_new(host, "CapAdd", string_array(o->cap_add, o->ncap_add));
  return 0;
}

json_t *runspec_build(const create_opts_t *o, const char *volume, err_t *err) {
  json_t *body = json_object();
  json_t *host = json_object();
  json_t *labels = labels_for(o, volume);
  json_t *env = env_for(o);
  json_t *cmd = json_pack("[s, s, s]", "sh", "-c", KEEP_ALIVE_SH);
  json_t *mounts = json_pack("[{s:s, s:s, s:s}]", "Type", "volume", "Source", volume, "Target", o->workdir);
  if (!body || !host || !labels || !env || !cmd || !mounts) goto oom;
  json_object_set_new(body, "Image", json_string(o->image));
  json_object_set_new(body, "Cmd", cmd);
  json_object_set_new(body, "WorkingDir", json_string(o->workdir));
  json_object_set_new(body, "Labels", labels);
  json_object_set_new(body, "Env", env);
  cmd = labels = env = NULL; /* the body holds them */
  if (o->user) set_str(body, "User", o->user);
  json_object_set_new(host, "Mounts", mounts);
  mounts = NULL;
  set_network(body, host, o);
  if (set_resources(host, o, err) != 0) goto fail;
  if (set_security(host, o) != 0) goto oom;
  if (o->container_runtime)
    json_object_set_new(host, "Runtime", json_stringn(o->container_runtime, o->container_runtime_len));
  json_object_set_new(body, "HostConfig", host);
  return body;
oom:
  err_oom(err);
fail:
  json_decref(body);
  json_decref(host);
  json_decref(labels);
  json_decref(env);
  json_decref(cmd);
  json_decref(mounts);
  return NULL;
}

static int port_number(const char *s, int *out) {
  char *end = NULL;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (end == s || *end != 0 || errno != 0 || v < 1 || v > 65535) return -1;
  *out = (int)v;
  return 0;
}

int ports_from_inspection(json_t *inspection, const int *ports, size_t n, published_port_t *out, err_t *err) {
  json_t *map = json_object_get(json_object_get(inspection, "NetworkSettings"), "Ports");
  for (size_t i = 0; i < n; i++) {
    char key[32];
    snprintf(key, sizeof(key), "%d/tcp", ports[i]);
    json_t *entries = json_object_get(map, key);
    int host_port = 0;
    size_t idx;
    json_t *entry;
    json_array_foreach(entries, idx, entry) {
      json_t *ip = json_object_get(entry, "HostIp");
      if (json_is_string(ip) && strcmp(json_string_value(ip), "127.0.0.1") == 0) {
        json_t *hp = json_object_get(entry, "HostPort");
        if (!json_is_string(hp) || port_number(json_string_value(hp), &host_port) != 0) host_port = 0;
        break;
      }
    }
    if (host_port == 0) return err_sandbox(err, CODE_PORT, "Docker did not publish port: %d", ports[i]);
    out[i].container_port = ports[i];
    out[i].host_port = host_port;
  }
  return 0;
}

int configured_ports(json_t *inspection, int **ports, size_t *n) {
  json_t *bindings = json_object_get(json_object_get(inspection, "HostConfig"), "PortBindings");
  *ports = NULL;
  *n = 0;
  size_t count = json_object_size(bindings);
  if (count == 0) return 0;
  *ports = calloc(count, sizeof(int));
  if (*ports == NULL) return -1;
  const char *key;
  json_t *value;
  json_object_foreach(bindings, key, value) {
    (void)value;
    size_t len = strlen(key);
    if (len <= 4 || strcmp(key + len - 4, "/tcp") != 0) continue;
    char digits[16];
    if (len - 4 >= sizeof(digits)) continue;
    memcpy(digits, key, len - 4);
    digits[len - 4] = 0;
    int all_digits = 1;
    for (char *p = digits; *p; p++)
      if (*p < '0' || *p > '9') all_digits = 0;
    int port = 0;
    if (all_digits && port_number(digits, &port) == 0) (*ports)[(*n)++] = port;
  }
  return 0;
}

const char *runspec_container_runtime(json_t *inspection) {
  json_t *label = json_object_get(json_object_get(json_object_get(inspection, "Config"), "Labels"), LABEL_CONTAINER_RUNTIME);
  if (json_is_string(label) && json_string_length(label) > 0) return json_string_value(label);
  json_t *host = json_object_get(json_object_get(inspection, "HostConfig"), "Runtime");
  if (json_is_string(host) && json_string_length(host) > 0) return json_string_value(host);
  return DEFAULT_CONTAINER_RUNTIME;
}
