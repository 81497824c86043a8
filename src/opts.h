/*
 * opts.h - createSandbox options: read from JavaScript, validated exactly as the
 * original's validateCreateOptions (same order, classes and messages), and copied into a
 * plain C snapshot that the rest of the lifecycle uses.
 *
 * Owns: a create_opts_t owns every string, array and file buffer in it
 * (create_opts_free). Reading the options is the only place the caller's objects are
 * touched, so later changes to them cannot reach a sandbox being created.
 */
#ifndef SBX_OPTS_H
#define SBX_OPTS_H

#include <node_api.h>
#include <stddef.h>
#include <stdint.h>

#include "addon.h"
#include "err.h"

#define DEFAULT_WORKDIR "/workspace"
#define DEFAULT_COMMAND_TIMEOUT_MS 30000
#define DEFAULT_MAX_OUTPUT_BYTES (1024 * 1024)
#define DEFAULT_MAX_FILE_BYTES (10 * 1024 * 1024)
#define DEFAULT_MAX_PROCESSES 4

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
  int cap_drop_given;
  char **cap_drop;
  size_t ncap_drop;
  char **cap_add;
  size_t ncap_add;
} create_opts_t;

/* Reads and validates; returns 0, or -1 with err set (nothing to free then). */
int create_opts_read(napi_env env, napi_value options, create_opts_t *out, err_t *err);
void create_opts_free(create_opts_t *o);

void kv_list_free(kv_list_t *l);
/* copyStringRecord(value, name): undefined -> empty. */
int read_string_record(napi_env env, napi_value v, const char *name, kv_list_t *out, err_t *err);
/* The original's id pattern: /^[a-z0-9](?:[a-z0-9_.-]{0,62})$/ */
int sandbox_id_valid(const char *id);
/* assertSandboxId: a TypeError unless v is a string matching the pattern. */
int check_sandbox_id(napi_env env, napi_value v, err_t *err);
/* assertNonEmptyString(value, name) */
int check_nonempty_string(napi_env env, napi_value v, const char *name, err_t *err);
int check_positive_safe_integer(napi_env env, napi_value v, const char *name, int64_t *out, err_t *err);
int check_nonnegative_safe_integer(napi_env env, napi_value v, const char *name, int64_t *out, err_t *err);
/* A random RFC 4122 version 4 UUID, lowercase (randomUUID()). */
int uuid_v4(char out[37]);

#endif
