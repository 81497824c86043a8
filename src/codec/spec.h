/*
 * spec.h - a sandbox's configuration as plain C: the createSandbox options once read and
 * validated (create_opts_t), their defaults, and the small value types the sandbox model
 * keeps (environment and label lists, runtime limits).
 *
 * Owns: a create_opts_t owns every string, array and file buffer in it
 * (create_opts_free); a kv_list_t owns its keys and values (kv_list_free).
 * Reading the options from JavaScript is lifecycle/create_opts.c's job; nothing here knows N-API.
 */
#ifndef SBX_SPEC_H
#define SBX_SPEC_H

#include <stddef.h>
#include <stdint.h>

#define DEFAULT_WORKDIR "/workspace"
#define DEFAULT_COMMAND_TIMEOUT_MS 30000
#define DEFAULT_MAX_OUTPUT_BYTES (1024 * 1024)
#define DEFAULT_MAX_FILE_BYTES (10 * 1024 * 1024)
#define DEFAULT_MAX_PROCESSES 4
#define DEFAULT_CONTAINER_RUNTIME "default"

typedef struct kv {
  char *key;
  char *value;
} kv_t;

typedef struct kv_list {
  kv_t *items;
  size_t count;
} kv_list_t;

typedef struct runtime_limits {
  int64_t command_timeout_ms;
  int64_t max_output_bytes;
  int64_t max_file_bytes;
  int64_t max_processes;
} runtime_limits_t;

typedef struct init_file {
  char *path; /* normalized sandbox path */
  uint8_t *data;
  size_t len;
} init_file_t;

typedef struct create_opts {
  char *id; /* given or generated */
  char *image;
  char *workdir;
  int ws_ephemeral;
  char *ws_volume; /* docker-volume name */
  int net_bridge;
  int *ports;
  size_t nports;
  char **dirs; /* normalized */
  size_t ndirs;
  init_file_t *files;
  size_t nfiles;
  kv_list_t env;
  kv_list_t labels;
  char *user;
  int has_memory_mb;
  int64_t memory_mb;
  char *cpus_text; /* String(cpus), as the CLI received it */
  int has_pids_limit;
  int64_t pids_limit;
  int has_shm_mb;
  int64_t shm_mb;
  runtime_limits_t runtime;
  int readonly_rootfs;
  int no_new_privileges;
  char *seccomp_path;
  char *seccomp_json; /* the profile as compact JSON, once read (lifecycle/create.c) */
  /* Sent after "seccomp=" instead of the JSON when set: the profile's path on the engine's
   * own host (Podman reads the value as a path). Borrowed: lifecycle/create.c owns it. */
  const char *seccomp_ref;
  int cap_drop_given;
  char **cap_drop;
  size_t ncap_drop;
  char **cap_add;
  size_t ncap_add;
  /* The OCI runtime registered in the daemon (HostConfig.Runtime, e.g. "runsc"); NULL for
   * the daemon's default, which the label records as "default". The caller's string may
   * hold a NUL (no daemon has such a runtime: the create's check refuses it), hence the
   * length. */
  char *container_runtime;
  size_t container_runtime_len;
} create_opts_t;

void create_opts_free(create_opts_t *o);
void kv_list_free(kv_list_t *l);
/* Whether an initial file is also a directory (named in `directories`, or the parent of
 * another entry): 1 with *path set to that file's path, 0 when none is, -1 when out of
 * memory. O(n log n). */
int spec_find_conflict(const create_opts_t *o, const char **path);
/* The original's id pattern: /^[a-z0-9](?:[a-z0-9_.-]{0,62})$/ */
int spec_id_valid(const char *id);

#endif
