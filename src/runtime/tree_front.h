/*
 * tree_front.h - importTree and exportTree: one operation per call, in two halves joined by a
 * seam any transport can sit behind.
 *
 *  - The front (tree_front.c) is what JavaScript talks to, the same for every transport: it
 *    reads the call's options once into a plain request (tree_import_req_t,
 *    tree_export_req_t: the transport-neutral description of the transfer), checks every
 *    entry (the writeFile path rules, the quotas of codec/tree_rules.h, byteLength against the
 *    bytes that came), counts what crossed, carries flow control both ways and settles the
 *    promise with the summary or with what went wrong and how far it got.
 *  - A backend (tree_import_backend_t, tree_export_backend_t) moves admitted entries and
 *    their bytes: the engine's archive endpoints (tree_engine.c) and the in-sandbox agent
 *    (tree_agent.c). Each transport's table names its two (runtime/table.h); dispatch.c
 *    calls tree_import_prepare / tree_export_prepare with them.
 *
 * JavaScript's side of an import (lib/tree.js): native.prepareImportTree(sandbox, options)
 * returns { token, channel }; native.start(token, onEvent) starts it; entries and bytes
 * are pushed with native.treeImportEntry(channel, isDirectory, path, mode, byteLength),
 * native.treeImportData(channel, chunk) and native.treeImportEnd(channel), each answering
 * TREE_PUSH_* (go on, wait for the "drain" event, or stop: the promise says why). An
 * export: native.prepareExportTree(sandbox, selection, options) returns a token; its
 * events are "entry" ({ kind, path, mode, byteLength }), "data" (a Uint8Array) and "end"
 * (of a file), in order; native.control(token, OP_PAUSE / OP_RESUME) is the flow control.
 * Both resolve with { files, directories, bytes, skipped, durationMs }.
 *
 * Owns: an import or export op owns its request, its backend state (freed through the
 * backend), its queued events and its channel's half.
 */
#ifndef SBX_TREE_H
#define SBX_TREE_H

#include <node_api.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "codec/tree_rules.h"
#include "napi/op.h"
#include "sandbox/sandbox.h"

enum { TREE_PUSH_STOP = -1, TREE_PUSH_GO = 0, TREE_PUSH_WAIT = 1 };

/* Flow control of an import: a push answers WAIT at or above HIGH bytes buffered by the
 * backend; "drain" comes once the backend is below LOW. */
#define TREE_IMPORT_HIGH (1024 * 1024)
#define TREE_IMPORT_LOW (256 * 1024)

/* ---- the requests: what to transfer, read once from the call ---- */

typedef struct tree_import_req {
  char *dest; /* workspace path imported into, normalized, "." for the workspace */
  tree_quota_t quota;
} tree_import_req_t;

typedef enum { TREE_SEL_WORKSPACE = 0, TREE_SEL_SUBTREE, TREE_SEL_FILES } tree_sel_kind_t;

typedef struct tree_export_req {
  tree_sel_kind_t kind;
  char *path;   /* TREE_SEL_SUBTREE: normalized workspace path */
  char **paths; /* TREE_SEL_FILES */
  size_t npaths;
  tree_quota_t quota;
  int skip_unsupported; /* specialFiles: "skip" (links, devices, fifos, sockets, non-UTF-8 names) */
  uint64_t idle_ms;     /* idleTimeoutMs: nothing from the source this long fails the export */
} tree_export_req_t;

/* An export's idle deadline when idleTimeoutMs is not given. */
#define TREE_EXPORT_IDLE_MS 60000u

/* ---- import ---- */

typedef struct tree_import tree_import_t;

typedef struct tree_import_backend {
  const char *name;
  /* The op was started: begin (connections, staging). 0, or -1 with err set. */
  int (*start)(tree_import_t *t, err_t *err);
  /* One admitted entry (missing parents come first as entries of their own); a file's
   * bytes follow through data(), exactly e->size of them, before the next entry. */
  int (*entry)(tree_import_t *t, const tree_entry_t *e, err_t *err);
  int (*data)(tree_import_t *t, const uint8_t *data, size_t len, err_t *err);
  /* Every entry was given: publish them. */
  int (*commit)(tree_import_t *t, err_t *err);
  /* Stop: nothing is published, what was staged is removed, then tree_import_done. With
   * `now` (the environment ends) everything is dropped at once and nothing is reported. */
  void (*stop)(tree_import_t *t, int now);
  /* Bytes accepted and not handed on yet. */
  size_t (*buffered)(const tree_import_t *t);
  /* Frees the backend state (after done, or after stop(now)). */
  void (*free)(tree_import_t *t);
} tree_import_backend_t;

struct tree_import {
  op_t op;
  tree_import_req_t req;
  const tree_import_backend_t *backend;
  void *be; /* the backend's state */
  /* the rest is the front's (tree_front.c) */
  struct tree_chan *chan;
  tree_pathset_t *seen;
  tree_counts_t counts;
  char *file_path; /* the file whose bytes are coming */
  uint64_t file_size, file_got;
  int state;
  int want_drain;
  int drain_scheduled;
  void *drain_timer;
  err_t failure;
  uint64_t started_ns;
};

/* The backend is below TREE_IMPORT_LOW again (any context, libcurl callbacks included). */
void tree_import_drained(tree_import_t *t);
/* The backend finished: published (err NULL) or failed, or stopped. From the loop only. */
void tree_import_done(tree_import_t *t, err_t *err);
/* A transport's table row: reads the call, returns { token, channel }. */
napi_value tree_import_prepare(napi_env env, sandbox_t *sb, napi_value *argv,
                               const tree_import_backend_t *backend);

/* ---- export ---- */

typedef struct tree_export tree_export_t;

typedef struct tree_export_backend {
  const char *name;
  int (*start)(tree_export_t *x, err_t *err);
  /* Flow control from the front (never from inside the backend's own callbacks). */
  void (*pause)(tree_export_t *x);
  void (*resume)(tree_export_t *x);
  /* Stop at once; nothing is reported afterwards. */
  void (*stop)(tree_export_t *x);
  void (*free)(tree_export_t *x);
} tree_export_backend_t;

/* What a backend reads, before the front judges it. */
typedef enum { TREE_SRC_FILE = 0, TREE_SRC_DIRECTORY, TREE_SRC_SYMLINK, TREE_SRC_HARDLINK, TREE_SRC_OTHER } tree_src_kind_t;

struct tree_export {
  op_t op;
  tree_export_req_t req;
  const tree_export_backend_t *backend;
  void *be;
  /* the rest is the front's (tree_front.c) */
  tree_counts_t counts;
  tree_pathset_t *wanted; /* TREE_SEL_FILES: the paths asked for */
  tree_pathset_t *seen;
  int in_entry;  /* between an entry and its end */
  int skipping;  /* the current entry is skipped (its bytes are dropped) */
  int entry_is_file;
  uint64_t entry_size, entry_got;
  struct tree_event *head, *tail; /* events not yet handed to JavaScript */
  size_t queued_bytes;
  int js_paused;
  int flushing; /* events are being handed to JavaScript */
  int source_done;
  int state;
  void *flush_timer;
  void *idle_timer; /* the idle deadline (req.idle_ms), while the source runs */
  uint64_t heard_ns; /* when the source last gave bytes, or the host last let it go on */
  err_t failure;
  uint64_t started_ns;
};

/*
 * Bytes of the archive came from the source (any context, libcurl callbacks included; a
 * stream beside the archive, as tar's stderr, does not count): the idle deadline starts
 * again. An export whose source gives nothing for req.idle_ms while the host is not
 * holding it back (tree_export_should_pause) fails with `timeout`.
 */
void tree_export_heard(tree_export_t *x);

/*
 * A member the backend read, named as its source names it: `root` is the source's top
 * name and `prefix` the selection's workspace path (codec/tree_rules.h's tree_map_name). 0, or
 * -1 with err set (the backend stops and reports it through tree_export_done).
 */
int tree_export_entry(tree_export_t *x, const char *name, size_t len, const char *root, const char *prefix,
                      tree_src_kind_t kind, unsigned mode, uint64_t size, err_t *err);
int tree_export_data(tree_export_t *x, const uint8_t *data, size_t len, err_t *err);
int tree_export_entry_end(tree_export_t *x, err_t *err);
/* Whether the backend should stop reading for now (the consumer is behind). */
int tree_export_should_pause(const tree_export_t *x);
/* The backend finished: everything was read (err NULL) or it failed. From the loop only. */
void tree_export_done(tree_export_t *x, err_t *err);
/* A transport's table row: reads the call, returns the op token. */
napi_value tree_export_prepare(napi_env env, sandbox_t *sb, napi_value *argv,
                               const tree_export_backend_t *backend);

/* native.treeImportEntry / treeImportData / treeImportEnd / treeImportCounts. */
void tree_register(napi_env env, napi_value exports);

#endif
