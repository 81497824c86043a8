/*
 * create_opts.c - createSandbox's options: read from JavaScript, validated and copied
 * into the plain C snapshot the create uses (see create_opts.h).
 *
 * The checks run in the original's order so the first error a caller sees is the same
 * one the original reported.
 */
#include "lifecycle/create_opts.h"

#include "base/rand.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "napi/args.h"
#include "napi/convert.h"
#include "napi/jsenv.h"
#include "napi/checks.h"
#include "napi/values.h"
#include "codec/names.h"
#include "codec/paths.h"
#include "engine/exec_task.h"

#define LABEL_PREFIX "anvia.sandbox."

/* Node's message for path functions called with a non-string (ERR_INVALID_ARG_TYPE). */
static int invalid_path_arg(napi_env env, napi_value v, err_t *err) {
  napi_valuetype t = nu_typeof(env, v);
  char *shown = nu_to_display(env, v);
  if (t == napi_number || t == napi_boolean || t == napi_bigint) {
    err_type(err, "The \"path\" argument must be of type string. Received type %s (%s%s)",
             t == napi_number ? "number" : t == napi_boolean ? "boolean" : "bigint", shown ? shown : "",
             t == napi_bigint ? "n" : "");
  } else if (t == napi_function) {
    char *name = nu_strdup(env, nu_get(env, v, "name"));
    err_type(err, "The \"path\" argument must be of type string. Received function %s",
             name && name[0] ? name : "anonymous");
    free(name);
  } else if (t == napi_object) {
    napi_value ctor = nu_get(env, v, "constructor");
    char *name = nu_strdup(env, nu_get(env, ctor, "name"));
    err_type(err, "The \"path\" argument must be of type string. Received an instance of %s",
             name && name[0] ? name : "Object");
    free(name);
  } else {
    err_type(err, "The \"path\" argument must be of type string. Received %s", shown ? shown : "a value");
  }
  free(shown);
  err->code = "ERR_INVALID_ARG_TYPE";
  return -1;
}

static int read_ports(napi_env env, napi_value ports, create_opts_t *o, err_t *err) {
  uint32_t n = 0;
  napi_get_array_length(env, ports, &n);
  if (n == 0) return 0;
  o->ports = calloc(n, sizeof(int));
  if (o->ports == NULL) return err_oom(err);
  for (uint32_t i = 0; i < n; i++) {
    napi_value p;
    napi_get_element(env, ports, i, &p);
    double d = 0;
    if (!nu_integer(env, p, &d) || d < 1 || d > 65535) {
      char *shown = nu_to_display(env, p);
      err_sandbox(err, CODE_PORT, "Sandbox port must be an integer from 1 to 65535: %s", shown ? shown : "");
      free(shown);
      return -1;
    }
    for (size_t j = 0; j < o->nports; j++) {
      if (o->ports[j] == (int)d) return err_sandbox(err, CODE_PORT, "Sandbox port is duplicated: %d", (int)d);
    }
    o->ports[o->nports++] = (int)d;
  }
  return 0;
}

static int read_runtime(napi_env env, napi_value r, create_opts_t *o, err_t *err) {
  o->runtime.command_timeout_ms = DEFAULT_COMMAND_TIMEOUT_MS;
  o->runtime.max_output_bytes = DEFAULT_MAX_OUTPUT_BYTES;
  o->runtime.max_file_bytes = DEFAULT_MAX_FILE_BYTES;
  o->runtime.max_processes = DEFAULT_MAX_PROCESSES;
  if (nu_is_undefined(env, r)) return 0;
  if (!nu_is_record(env, r)) return err_type(err, "runtime must be an object.");
  napi_value v;
  v = nu_get(env, r, "commandTimeoutMs");
  if (!nu_is_undefined(env, v) && check_positive_safe_integer(env, v, "commandTimeoutMs", &o->runtime.command_timeout_ms, err))
    return -1;
  v = nu_get(env, r, "maxOutputBytes");
  if (!nu_is_undefined(env, v) && check_nonnegative_safe_integer(env, v, "maxOutputBytes", &o->runtime.max_output_bytes, err))
    return -1;
  v = nu_get(env, r, "maxFileBytes");
  if (!nu_is_undefined(env, v) && check_nonnegative_safe_integer(env, v, "maxFileBytes", &o->runtime.max_file_bytes, err))
    return -1;
  v = nu_get(env, r, "maxProcesses");
  if (!nu_is_undefined(env, v) && check_nonnegative_safe_integer(env, v, "maxProcesses", &o->runtime.max_processes, err))
    return -1;
  return 0;
}

static int read_resources(napi_env env, napi_value r, create_opts_t *o, err_t *err) {
  if (nu_is_undefined(env, r)) return 0;
  if (!nu_is_record(env, r)) return err_type(err, "resources must be an object.");
  napi_value v = nu_get(env, r, "memoryMb");
  if (!nu_is_undefined(env, v)) {
    if (check_positive_safe_integer(env, v, "memoryMb", &o->memory_mb, err)) return -1;
    o->has_memory_mb = 1;
  }
  v = nu_get(env, r, "pidsLimit");
  if (!nu_is_undefined(env, v)) {
    if (check_positive_safe_integer(env, v, "pidsLimit", &o->pids_limit, err)) return -1;
    o->has_pids_limit = 1;
  }
  v = nu_get(env, r, "sharedMemoryMb");
  if (!nu_is_undefined(env, v)) {
    if (check_positive_safe_integer(env, v, "sharedMemoryMb", &o->shm_mb, err)) return -1;
    o->has_shm_mb = 1;
  }
  v = nu_get(env, r, "cpus");
  if (!nu_is_undefined(env, v)) {
    double d = 0;
    if (!nu_number_value(env, v, &d) || !isfinite(d) || d <= 0)
      return err_range(err, "cpus must be a positive finite number.");
    o->cpus_text = nu_to_display(env, v); /* String(cpus): the text the CLI parsed */
    if (o->cpus_text == NULL) return err_oom(err);
  }
  return 0;
}

/* A capability list; duplicates are whole strings (NULs included), as the original's Set
 * compared them. `hit` learns the first capability holding a NUL. */
static int read_caps(napi_env env, napi_value arr, const char *name, char ***out, size_t *count, nul_hit_t *hit,
                     err_t *err) {
  uint32_t n = 0;
  napi_get_array_length(env, arr, &n);
  if (n == 0) return 0;
  *out = calloc(n, sizeof(char *));
  size_t *lens = calloc(n, sizeof(size_t));
  if (*out == NULL || lens == NULL) {
    free(lens);
    return err_oom(err);
  }
  char label[64];
  snprintf(label, sizeof(label), "%s value", name);
  int rc = 0;
  for (uint32_t i = 0; rc == 0 && i < n; i++) {
    napi_value c;
    napi_get_element(env, arr, i, &c);
    if (check_nonempty_string(env, c, label, err)) {
      rc = -1;
      break;
    }
    size_t len = 0;
    char *s = nu_strdup_len(env, c, &len);
    if (s == NULL) {
      rc = err_oom(err);
      break;
    }
    for (size_t j = 0; j < *count; j++) {
      if (lens[j] == len && memcmp((*out)[j], s, len) == 0) {
        err_type(err, "%s contains a duplicate: %s", name, s);
        free(s);
        rc = -1;
        break;
      }
    }
    if (rc != 0) break;
    if (strlen(s) != len) args_nul_hit_note(hit, *count, NULL, c);
    lens[*count] = len;
    (*out)[(*count)++] = s;
  }
  free(lens);
  return rc;
}

/* Where the original found NULs in createSandbox's options (see late_error). */
typedef struct create_nuls {
  napi_value user;
  nul_hit_t labels, env, drop, add;
} create_nuls_t;

static int read_security(napi_env env, napi_value s, create_opts_t *o, create_nuls_t *nuls, err_t *err) {
  o->no_new_privileges = 1;
  if (nu_is_undefined(env, s)) return 0;
  if (!nu_is_record(env, s)) return err_type(err, "security must be an object.");
  napi_value drop = nu_get(env, s, "dropCapabilities");
  napi_value add = nu_get(env, s, "addCapabilities");
  if (!nu_is_undefined(env, drop) && !nu_is_array(env, drop)) return err_type(err, "dropCapabilities must be an array.");
  if (!nu_is_undefined(env, add) && !nu_is_array(env, add)) return err_type(err, "addCapabilities must be an array.");
  napi_value ro = nu_get(env, s, "readonlyRootfs");
  if (!nu_is_undefined(env, ro) && nu_typeof(env, ro) != napi_boolean) return err_type(err, "readonlyRootfs must be a boolean.");
  napi_value nnp = nu_get(env, s, "noNewPrivileges");
  if (!nu_is_undefined(env, nnp) && nu_typeof(env, nnp) != napi_boolean)
    return err_type(err, "noNewPrivileges must be a boolean.");
  napi_value sec = nu_get(env, s, "seccompProfile");
  if (!nu_is_undefined(env, sec)) {
    napi_value type = nu_get(env, sec, "type");
    char *t = nu_strdup(env, type);
    int ok = nu_is_record(env, sec) && t != NULL && strcmp(t, "path") == 0;
    free(t);
    if (!ok) return err_type(err, "seccompProfile must be a { type: \"path\", path } object.");
    napi_value p = nu_get(env, sec, "path");
    if (check_nonempty_string(env, p, "seccompProfile.path", err)) return -1;
    size_t len = 0;
    napi_get_value_string_utf8(env, p, NULL, 0, &len);
    o->seccomp_path = nu_strdup(env, p);
    if (o->seccomp_path == NULL) return err_oom(err);
    if (o->seccomp_path[0] != '/' || strlen(o->seccomp_path) != len)
      return err_type(err, "seccompProfile.path must be an absolute host path.");
  }
  if (!nu_is_undefined(env, drop)) {
    o->cap_drop_given = 1;
    if (read_caps(env, drop, "dropCapabilities", &o->cap_drop, &o->ncap_drop, &nuls->drop, err)) return -1;
  }
  if (!nu_is_undefined(env, add) && read_caps(env, add, "addCapabilities", &o->cap_add, &o->ncap_add, &nuls->add, err))
    return -1;
  if (!nu_is_undefined(env, ro)) {
    bool b = false;
    napi_get_value_bool(env, ro, &b);
    o->readonly_rootfs = b;
  }
  if (!nu_is_undefined(env, nnp)) {
    bool b = true;
    napi_get_value_bool(env, nnp, &b);
    o->no_new_privileges = b;
  }
  return 0;
}

static int read_dirs(napi_env env, napi_value dirs, create_opts_t *o, err_t *err) {
  if (nu_is_undefined(env, dirs)) return 0;
  if (!nu_is_array(env, dirs)) return err_type(err, "directories must be an array.");
  uint32_t n = 0;
  napi_get_array_length(env, dirs, &n);
  if (n == 0) return 0;
  o->dirs = calloc(n, sizeof(char *));
  if (o->dirs == NULL) return err_oom(err);
  for (uint32_t i = 0; i < n; i++) {
    napi_value d;
    napi_get_element(env, dirs, i, &d);
    if (nu_typeof(env, d) != napi_string) return err_type(err, "directories must contain strings.");
    char *norm = args_sandbox_path(env, d, "directory", 0, err);
    if (norm == NULL) return -1;
    o->dirs[o->ndirs++] = norm;
  }
  return 0;
}

static int read_files(napi_env env, napi_value files, napi_value runtime, create_opts_t *o, err_t *err) {
  if (nu_is_undefined(env, files)) return 0;
  if (!nu_is_record(env, files)) return err_type(err, "files must be an object.");
  nu_keys_t keys;
  if (nu_keys(env, files, &keys) != 0) return err_oom(err);
  if (keys.count == 0) return 0;
  o->files = calloc(keys.count, sizeof(init_file_t));
  if (o->files == NULL) return err_oom(err);
  /* options.runtime?.maxFileBytes ?? default, read as the original reads it. */
  double max_file = DEFAULT_MAX_FILE_BYTES;
  napi_value mfb = nu_get(env, runtime, "maxFileBytes");
  if (!nu_is_undefined(env, mfb) && nu_typeof(env, mfb) != napi_null) nu_number_value(env, mfb, &max_file);
  for (uint32_t i = 0; i < keys.count; i++) {
    napi_value key = nu_key_at(env, &keys, i);
    napi_value content;
    napi_get_property(env, files, key, &content);
    char *shown = nu_strdup(env, key);
    if (shown == NULL) return err_oom(err);
    init_file_t *f = &o->files[o->nfiles];
    f->path = args_sandbox_path(env, key, "path", 0, err);
    if (f->path == NULL) {
      free(shown);
      return -1;
    }
    o->nfiles++;
    uint8_t *bytes = NULL;
    size_t len = 0;
    if (nu_typeof(env, content) == napi_string) {
      napi_get_value_string_utf8(env, content, NULL, 0, &len);
      f->data = malloc(len + 1);
      if (f->data == NULL) {
        free(shown);
        return err_oom(err);
      }
      napi_get_value_string_utf8(env, content, (char *)f->data, len + 1, &len);
      f->len = len;
    } else if (nu_uint8array_view(env, content, &bytes, &len)) {
      f->data = malloc(len ? len : 1);
      if (f->data == NULL) {
        free(shown);
        return err_oom(err);
      }
      if (len) memcpy(f->data, bytes, len);
      f->len = len;
    } else {
      err_type(err, "Initial file must be a string or Uint8Array: %s", shown);
      free(shown);
      return -1;
    }
    if ((double)f->len > max_file) {
      err_sandbox(err, CODE_FILE_TOO_LARGE, "Initial file exceeds maxFileBytes (%zu > %.17g): %s", f->len, max_file,
                  shown);
      free(shown);
      return -1;
    }
    free(shown);
  }
  return 0;
}

/* options.workdir: /workspace when absent, else an absolute POSIX path. */
static int read_workdir(napi_env env, napi_value workdir, create_opts_t *o, err_t *err) {
  napi_valuetype wt = nu_typeof(env, workdir);
  if (wt == napi_undefined || wt == napi_null) {
    o->workdir = strdup(DEFAULT_WORKDIR);
  } else if (wt != napi_string) {
    return invalid_path_arg(env, workdir, err);
  } else {
    size_t len = 0;
    napi_get_value_string_utf8(env, workdir, NULL, 0, &len);
    o->workdir = nu_strdup(env, workdir);
    if (o->workdir && (o->workdir[0] != '/' || strlen(o->workdir) != len))
      return err_type(err, "workdir must be an absolute POSIX path.");
  }
  return o->workdir ? 0 : err_oom(err);
}

/* options.workspace: { type: "ephemeral" } or { type: "docker-volume", name }. */
static int read_workspace(napi_env env, napi_value ws, create_opts_t *o, err_t *err) {
  if (!nu_is_record(env, ws)) return err_type(err, "workspace must be an object.");
  char *ws_type = nu_strdup(env, nu_get(env, ws, "type"));
  int is_volume = ws_type && strcmp(ws_type, "docker-volume") == 0;
  int is_ephemeral = ws_type && strcmp(ws_type, "ephemeral") == 0;
  free(ws_type);
  if (is_volume) {
    napi_value name = nu_get(env, ws, "name");
    if (check_nonempty_string(env, name, "workspace.name", err)) return -1;
    size_t len = 0;
    o->ws_volume = nu_strdup_len(env, name, &len);
    if (o->ws_volume == NULL) return err_oom(err);
    /* The original refused "," and NUL with this message; the engine's own pattern (which
     * holds neither) is checked here too, so no other name reaches a URL. */
    if (strchr(o->ws_volume, ',') || strlen(o->ws_volume) != len || !volume_name_valid(o->ws_volume, len))
      return err_type(err, "workspace.name is not a valid Docker volume name.");
  }
  if (!is_volume && !is_ephemeral) return err_type(err, "workspace must use type ephemeral or docker-volume.");
  if (is_ephemeral && nu_has(env, ws, "name"))
    return err_type(err, "An ephemeral workspace cannot specify a Docker volume name.");
  o->ws_ephemeral = is_ephemeral;
  return 0;
}

/* options.network: { mode: "none" } or { mode: "bridge", ports? }. */
static int read_network(napi_env env, napi_value net, create_opts_t *o, err_t *err) {
  if (!nu_is_record(env, net)) return err_type(err, "network must be an object.");
  char *mode = nu_strdup(env, nu_get(env, net, "mode"));
  int none = mode && strcmp(mode, "none") == 0;
  int bridge = mode && strcmp(mode, "bridge") == 0;
  free(mode);
  if (!none && !bridge) return err_type(err, "network must use mode none or bridge.");
  if (none && nu_has(env, net, "ports")) return err_type(err, "Network mode none cannot publish ports.");
  o->net_bridge = bridge;
  napi_value ports = nu_get(env, net, "ports");
  if (!bridge || nu_is_undefined(env, ports)) return 0;
  if (!nu_is_array(env, ports)) return err_type(err, "network.ports must be an array.");
  return read_ports(env, ports, o, err);
}

/* options.env, options.labels (none under anvia.sandbox.), options.user. */
static int read_env_labels_user(napi_env env, napi_value options, create_opts_t *o, create_nuls_t *nuls, err_t *err) {
  if (check_string_record(env, nu_get(env, options, "env"), "env", &o->env, &nuls->env, err)) return -1;
  if (check_env_not_reserved(&o->env, err)) return -1;
  if (check_string_record(env, nu_get(env, options, "labels"), "labels", &o->labels, &nuls->labels, err)) return -1;
  for (size_t i = 0; i < o->labels.count; i++)
    if (strncmp(o->labels.items[i].key, LABEL_PREFIX, strlen(LABEL_PREFIX)) == 0)
      return err_type(err, "Docker label is reserved: %s", o->labels.items[i].key);
  napi_value user = nu_get(env, options, "user");
  if (nu_is_undefined(env, user)) return 0;
  if (check_nonempty_string(env, user, "user", err)) return -1;
  nuls->user = user;
  o->user = nu_strdup(env, user);
  return o->user ? 0 : err_oom(err);
}

/* containerRuntime (upstream 1.1.2): a non-empty string naming a runtime registered in the
 * daemon; omitted, or "default", is the daemon's default (nothing sent). Whether the daemon
 * has it is checked at create (lifecycle/create.c), before anything is made. */
static int read_container_runtime(napi_env env, napi_value v, create_opts_t *o, err_t *err) {
  if (nu_is_undefined(env, v)) return 0;
  if (check_nonempty_string(env, v, "containerRuntime", err)) return -1;
  size_t len = 0;
  char *name = nu_strdup_len(env, v, &len);
  if (name == NULL) return err_oom(err);
  if (len == strlen(DEFAULT_CONTAINER_RUNTIME) && memcmp(name, DEFAULT_CONTAINER_RUNTIME, len) == 0) {
    free(name);
    return 0;
  }
  o->container_runtime = name;
  o->container_runtime_len = len;
  return 0;
}

/* The image, and the id (given, or a new UUID), copied last as the original did. */
static int take_image_and_id(napi_env env, napi_value image, napi_value id, create_opts_t *o, err_t *err) {
  o->image = nu_strdup(env, image);
  if (o->image == NULL) return err_oom(err);
  if (!nu_is_undefined(env, id) && nu_typeof(env, id) != napi_null) {
    o->id = nu_strdup(env, id);
  } else {
    char uuid[37];
    if (uuid_v4(uuid) != 0) return err_oom(err);
    o->id = strdup(uuid);
  }
  return o->id ? 0 : err_oom(err);
}

/*
 * Where `docker run` (createRunArgs) put each user-given argument that may hold a NUL:
 * "run -d --name <c> --mount <m> -w <workdir>", a "--label k=v" pair per user label then
 * the 11 runtime labels (upstream 1.1.2 added anvia.sandbox.container-runtime), "--env k=v" per env entry, "--user u", the network ("--network
 * none" or a "--publish" per port), "--memory", "--cpus", "--pids-limit", "--shm-size",
 * "--read-only", "--security-opt no-new-privileges:true", "--security-opt seccomp=...",
 * "--cap-drop c" per dropped capability (["ALL"] unless given), "--cap-add c" per added
 * one, "--runtime r" (upstream 1.1.2; never reached with a NUL in r: the daemon check
 * before the run refuses that name), then the image and its command.
 */
static void note_run_args(napi_env env, const create_opts_t *o, create_nuls_t *nuls, argv_nul_t *n) {
  size_t pos = 8;
  args_argv_nul_note_hit(env, n, pos + 2 * nuls->labels.index + 1, &nuls->labels);
  pos += 2 * (o->labels.count + 11);
  args_argv_nul_note_hit(env, n, pos + 2 * nuls->env.index + 1, &nuls->env);
  pos += 2 * o->env.count;
  if (nuls->user) {
    args_argv_nul_note(env, n, pos + 1, nuls->user);
    pos += 2;
  }
  pos += o->net_bridge ? 2 * o->nports : 2;
  pos += 2 * ((o->has_memory_mb != 0) + (o->cpus_text != NULL) + (o->has_pids_limit != 0) + (o->has_shm_mb != 0));
  pos += o->readonly_rootfs ? 1 : 0;
  pos += o->no_new_privileges ? 2 : 0;
  pos += o->seccomp_path ? 2 : 0;
  args_argv_nul_note_hit(env, n, pos + 2 * nuls->drop.index + 1, &nuls->drop);
  pos += 2 * (o->cap_drop_given ? o->ncap_drop : 1);
  args_argv_nul_note_hit(env, n, pos + 2 * nuls->add.index + 1, &nuls->add);
}

/*
 * What the original found only once it began, after the container check, in its order:
 * a NUL in the image (Node refused `docker image inspect <image>`, position 2), an image
 * name no image can have (`docker image inspect` answered "No such image", the engine
 * refusing the reference: image_not_found), a NUL in an argument of `docker run`. *out
 * is NULL when there is nothing, else the error (a JavaScript value) to fail with at
 * start; -1 when out of memory.
 */
static int late_error(napi_env env, napi_value image, create_opts_t *o, create_nuls_t *nuls, napi_value *out,
                      err_t *err) {
  *out = NULL;
  argv_nul_t n = {0};
  args_argv_nul_note(env, &n, 2, image);
  if (n.found) {
    *out = args_argv_nul_error(env, &n, err);
    return *out ? 0 : -1;
  }
  size_t len = 0;
  char *bytes = nu_strdup_len(env, image, &len);
  if (bytes == NULL) return err_oom(err);
  int valid = image_reference_valid(bytes, len);
  free(bytes);
  if (!valid) {
    err_t late = ERR_INIT;
    err_sandbox(&late, CODE_IMAGE_NOT_FOUND, "Docker image is not available locally: %s", o->image);
    *out = convert_error_value(jsenv_get(env), &late);
    err_clear(&late);
    return *out ? 0 : err_oom(err);
  }
  note_run_args(env, o, nuls, &n);
  if (!n.found) return 0;
  *out = args_argv_nul_error(env, &n, err);
  return *out ? 0 : -1;
}

int create_opts_read(napi_env env, napi_value options, create_opts_t *o, napi_value *late, err_t *err) {
  memset(o, 0, sizeof(*o));
  *late = NULL;
  create_nuls_t nuls;
  memset(&nuls, 0, sizeof(nuls));
  if (nu_typeof(env, options) != napi_object) return err_type(err, "options must be an object.");
  napi_value image = nu_get(env, options, "image");
  napi_value id = nu_get(env, options, "id");
  napi_value runtime = nu_get(env, options, "runtime");
  /* In the original's order: the first check that fails is the error the caller sees. */
  if (check_nonempty_string(env, image, "image", err) ||
      (!nu_is_undefined(env, id) && check_sandbox_id(env, id, err)) ||
      read_workdir(env, nu_get(env, options, "workdir"), o, err) ||
      read_workspace(env, nu_get(env, options, "workspace"), o, err) ||
      read_network(env, nu_get(env, options, "network"), o, err) || read_runtime(env, runtime, o, err) ||
      read_resources(env, nu_get(env, options, "resources"), o, err) ||
      read_security(env, nu_get(env, options, "security"), o, &nuls, err) ||
      read_env_labels_user(env, options, o, &nuls, err) ||
      read_dirs(env, nu_get(env, options, "directories"), o, err) ||
      read_files(env, nu_get(env, options, "files"), runtime, o, err) ||
      read_container_runtime(env, nu_get(env, options, "containerRuntime"), o, err) ||
      take_image_and_id(env, image, id, o, err) ||
      late_error(env, image, o, &nuls, late, err)) {
    create_opts_free(o);
    *late = NULL;
    return -1;
  }
  return 0;
}
