/*
 * sandbox.h - the native half of a sandbox handle: its configuration (as created, or as
 * rebuilt from labels on resume) and what the runtime operations need to reach it.
 *
 * Owns: a sandbox_t owns its strings, port list and process registry, and holds a
 * reference to its engine. It is reference counted: the JavaScript handle holds one
 * (released by the external's finalizer), and every operation in flight holds one, so
 * the handle may be collected while work on it finishes.
 */
#ifndef SBX_SANDBOX_H
#define SBX_SANDBOX_H

#include <node_api.h>
#include <stdint.h>

#include "addon.h"
#include "engine.h"
#include "opts.h"
#include "runspec.h"

struct procmgr;
struct runtime_ops;

typedef struct sandbox {
  int refs;
  addon_t *addon;
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
  int readonly_rootfs;
  int find_lacks_printf; /* learned on the first listing: list with find -exec stat */
  int owner_known;
  uint32_t uid, gid; /* owner given to files and directories written through the API */
  struct procmgr *procs;
  const struct runtime_ops *ops; /* how its runtime operations are carried out (runtime_ops.h) */
} sandbox_t;

sandbox_t *sandbox_new(addon_t *a, engine_t *eng);
void sandbox_ref(sandbox_t *s);
void sandbox_unref(sandbox_t *s);
/* The sandbox behind a JS token, or NULL with a TypeError thrown. */
sandbox_t *sandbox_from_js(napi_env env, napi_value v);
/* { sandbox: <token>, id, workdir, publishedPorts: [...] } for the JS handle. */
napi_value sandbox_to_js(napi_env env, sandbox_t *s);
/* 1 when the user needs no lookup: unset, "root", "0", "0:0", "root:root". */
int user_is_root(const char *user);

#endif
