/*
 * sandbox.h - the sandbox model: one sandbox's configuration (as created, or as rebuilt
 * from its container's labels on resume) and what its operations need to reach it.
 *
 * Owns: a sandbox_t owns its strings and port list, holds a reference to its engine, and
 * owns the state other layers attach to it (sandbox_attach), each freed by the function
 * its owner gave. It is reference counted: the JavaScript handle holds one (released when
 * the handle is collected), and every operation in flight holds one, so the handle may be
 * collected while work on it finishes.
 *
 * How its runtime operations are carried out is its transport, held here once and set by
 * its creator from the client's choice; runtime/transport.c turns it into the table each
 * call goes through (runtime/table.h).
 */
#ifndef SBX_SANDBOX_H
#define SBX_SANDBOX_H

#include <stdint.h>

#include "codec/runspec.h"
#include "codec/spec.h"
#include "engine/engine.h"

typedef struct sandbox_ext sandbox_ext_t;

/* How runtime operations reach the container: the Engine API's exec and archive
 * endpoints; the in-sandbox agent, the engine where the agent cannot run (the default);
 * the agent only. */
typedef enum { TRANSPORT_ENGINE = 0, TRANSPORT_AUTO, TRANSPORT_AGENT } transport_t;

typedef struct sandbox {
  int refs;
  engine_t *eng;
  char *id;
  char *container_name;
  char *workdir;
  char *volume_name;
  int ws_ephemeral;
  int owns_volume;
  kv_list_t env; /* applied to managed processes; empty after resume, as the original */
  runtime_limits_t runtime;
  published_port_t *ports;
  size_t nports;
  char *user; /* the container's effective user ("" = image default root) */
  char *container_runtime; /* the OCI runtime it runs under ("default": the daemon's own) */
  int readonly_rootfs;
  int find_lacks_printf; /* learned on the first listing: list with find -exec stat */
  int owner_known;
  uint32_t uid, gid; /* owner given to files and directories written through the API */
  transport_t transport; /* how its runtime operations are carried out */
  sandbox_ext_t *exts;    /* state attached by other layers */
} sandbox_t;

/* A sandbox on `eng` whose runtime operations go through `transport`. NULL when out of
 * memory. */
sandbox_t *sandbox_new(engine_t *eng, transport_t transport);
void sandbox_ref(sandbox_t *s);
/* NULL is fine. The last reference frees the sandbox and everything attached to it. */
void sandbox_unref(sandbox_t *s);

/*
 * State another layer keeps per sandbox (the process registry, say), found again by
 * `key` (the address of something of the owner's). `free_fn` runs when the sandbox is
 * freed. 0, or -1 when out of memory (nothing attached then).
 */
int sandbox_attach(sandbox_t *s, const void *key, void *state, void (*free_fn)(void *state));
void *sandbox_attached(const sandbox_t *s, const void *key);
/* The state under `key`, made (`size` zeroed bytes, freed with `free_fn`) and attached
 * when there is none yet. NULL when out of memory. */
void *sandbox_attached_new(sandbox_t *s, const void *key, size_t size, void (*free_fn)(void *state));

#endif
