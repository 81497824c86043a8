/*
 * runspec.h - the container the original's `docker run` arguments describe, as the
 * Engine API's container create body, plus the labels that let a sandbox be resumed.
 *
 * Owns: nothing; returns new jansson values the caller owns.
 * Each CLI flag of the original's createRunArgs has its field here: --mount -> Mounts,
 * -w -> WorkingDir, --label -> Labels, --env -> Env, --user -> User, --network none ->
 * NetworkMode, --publish 127.0.0.1::P/tcp -> ExposedPorts + PortBindings (engine-chosen
 * host port), --memory -> Memory, --cpus -> NanoCpus (exact), --pids-limit -> PidsLimit,
 * --shm-size -> ShmSize, --read-only -> ReadonlyRootfs, --security-opt -> SecurityOpt
 * (a seccomp profile is sent as compact JSON, as the CLI does: the caller reads the file
 * and compacts it with seccomp_compact into create_opts_t.seccomp_json), --cap-drop
 * / --cap-add -> CapDrop / CapAdd, and the keep-alive command.
 */
#ifndef SBX_RUNSPEC_H
#define SBX_RUNSPEC_H

#include <jansson.h>
#include <stdint.h>

#include "base/err.h"
#include "codec/spec.h"

#define SBX_SCHEMA_VERSION "1"
#define LABEL_SCHEMA "anvia.sandbox.schema"
#define LABEL_ID "anvia.sandbox.id"
#define LABEL_WORKDIR "anvia.sandbox.workdir"
#define LABEL_WS_TYPE "anvia.sandbox.workspace.type"
#define LABEL_WS_VOLUME "anvia.sandbox.workspace.volume"
#define LABEL_NETWORK_MODE "anvia.sandbox.network.mode"
#define LABEL_CMD_TIMEOUT "anvia.sandbox.runtime.command-timeout-ms"
#define LABEL_MAX_OUTPUT "anvia.sandbox.runtime.max-output-bytes"
#define LABEL_MAX_FILE "anvia.sandbox.runtime.max-file-bytes"
#define LABEL_MAX_PROCESSES "anvia.sandbox.runtime.max-processes"
/* The OCI runtime the container runs under ("default" for the daemon's default). */
#define LABEL_CONTAINER_RUNTIME "anvia.sandbox.container-runtime"

/* A read-only rootfs gets this tmpfs for the in-sandbox agent (engine/agent_conn.c). */
#define AGENT_TMPFS_PATH "/.anvia"
#define AGENT_TMPFS_OPTIONS "rw,exec,nosuid,nodev,size=65536k,mode=755"

/*
 * The environment of every process the package itself runs as root in a container (the
 * agent's placement into a read-only rootfs's tmpfs, the fork's copy helper), added to
 * the container's own (which the engine passes on and nothing can remove, only write
 * over): a fixed PATH of system directories, the C locale (no locale file is read), and
 * empty values over what makes a shell or the dynamic loader run or load a file the
 * environment names (ENV, BASH_ENV, SHELLOPTS, BASHOPTS, CDPATH, LD_PRELOAD,
 * LD_LIBRARY_PATH, LD_AUDIT). Those processes also name every program by its absolute
 * path, so nothing the sandbox's user can write (a directory on its PATH, a file the
 * environment points into its workspace) is run or loaded by root.
 */
#define ROOT_PATH "/usr/sbin:/usr/bin:/sbin:/bin"
#define ROOT_EXEC_ENVC 10
extern const char *const ROOT_EXEC_ENV[ROOT_EXEC_ENVC];

/* anvia-sandbox-<id> */
char *container_name_for(const char *id);
/* The create body. `volume` is the workspace volume name. */
json_t *runspec_build(const create_opts_t *o, const char *volume, err_t *err);
/* A seccomp profile's text (read from `path`, named in messages) as compact JSON, keys in
 * their order, malloc'd; NULL with err set when it is not JSON. */
char *seccomp_compact(const uint8_t *text, size_t len, const char *path, err_t *err);
/* String(cpus) -> nano CPUs, exactly (big-rational arithmetic as the CLI): -1 when the
 * value is too precise or out of range. */
int parse_nano_cpus(const char *text, int64_t *nanos);

typedef struct published_port {
  int container_port;
  int host_port;
} published_port_t;

/* Host ports bound to 127.0.0.1 for each requested container port, from an inspection's
 * NetworkSettings.Ports. Missing -> port error "Docker did not publish port: N". */
int ports_from_inspection(json_t *inspection, const int *ports, size_t n, published_port_t *out, err_t *err);
/* Container ports configured in HostConfig.PortBindings ("N/tcp" keys), in key order. */
int configured_ports(json_t *inspection, int **ports, size_t *n);

/* The OCI runtime a container runs under, as upstream's resumeSandbox reads it: the
 * anvia.sandbox.container-runtime label when non-empty, else HostConfig.Runtime when
 * non-empty (a sandbox made before the label existed reports, say, "runc"), else
 * "default". Borrowed from `inspection`. */
const char *runspec_container_runtime(json_t *inspection);

#endif
