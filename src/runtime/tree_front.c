/*
 * tree_front.c - the front of importTree and exportTree (see tree_front.h): what JavaScript talks to,
 * whatever transport carries the bytes.
 *
 * Import: JavaScript pushes entries and chunks (lib/tree.js pulls them from the caller's
 * iterable or a host directory walk); each entry is judged here (writeFile's path rules,
 * the quotas, byteLength against the bytes that came, duplicates, a file on the way of
 * another entry), missing parent directories are made entries of their own, and the
 * admitted entries go to the backend. A push answers "wait" while the backend holds
 * TREE_IMPORT_HIGH bytes or more; the "drain" event says when to go on. A failure found
 * here stops the backend (which removes what it staged) and the promise rejects once it
 * has, with the failure and how far the import got.
 *
 * Export: the backend hands over members as its source names them; each is mapped to a
 * workspace path (hostile names refused), judged (links, devices and the like refused or
 * skipped, quotas, duplicates) and queued as events for JavaScript, which are handed over
 * from the loop (never from inside a backend's libcurl callback). JavaScript's
 * flow control (native.control) and the size of the queue pause and resume the backend.
 *
 * Owns: the ops (their requests, path sets, queued events, timers) and the channel struct
 * shared with the channel's JavaScript object (freed by whichever lets go last).
 */
#include "runtime/tree_front.h"

#include <stdlib.h>
#include <string.h>

#include "codec/paths.h"
#include "engine/timer.h"
#include "napi/args.h"
#include "napi/convert.h"
#include "napi/values.h"

/* The export queue not yet handed to JavaScript: above this the backend is paused. A
 * file's bytes count, and so does each entry (its path and EXPORT_ENTRY_COST for the
 * event), so a flood of directory headers pauses the source as file bytes do. */
#define EXPORT_NATIVE_HIGH (4 * 1024 * 1024)
#define EXPORT_ENTRY_COST 64

enum { T_READY = 0, T_RUNNING, T_COMMITTING, T_FAILING, T_STOPPING, T_DONE };

/* ================= requests ================= */

static void tree_import_req_free(tree_import_req_t *r) {
  free(r->dest);
  memset(r, 0, sizeof(*r));
}

static void tree_export_req_free(tree_export_req_t *r) {
  free(r->path);
  args_string_array_free(r->paths, r->npaths);
  memset(r, 0, sizeof(*r));
}

static const char *const QUOTA_NAMES[5] = {"maxFiles", "maxFileBytes", "maxTotalBytes", "maxPathBytes", "maxDepth"};

/* options.quotas: undefined, or an object whose fields are undefined or non-negative
 * safe integers. */
static int read_quotas(napi_env env, napi_value options, sandbox_t *sb, tree_quota_t *q, err_t *err) {
  tree_quota_defaults(q, (uint64_t)sb->runtime.max_file_bytes);
  napi_value v = nu_get(env, options, "quotas");
  if (nu_is_undefined(env, v)) return 0;
  if (!nu_is_record(env, v)) return err_type(err, "quotas must be an object.");
  uint64_t *fields[5] = {&q->max_files, &q->max_file_bytes, &q->max_total_bytes, &q->max_path_bytes, &q->max_depth};
  for (int i = 0; i < 5; i++) {
    napi_value f = nu_get(env, v, QUOTA_NAMES[i]);
    if (nu_is_undefined(env, f)) continue;
    int64_t n = 0;
    if (!nu_safe_integer(env, f, &n) || n < 0)
      return err_range(err, "quotas.%s must be a non-negative safe integer.", QUOTA_NAMES[i]);
    *fields[i] = (uint64_t)n;
  }
  return 0;
}

/* A normalized path without its trailing slashes ("." stays "."). */
static void strip_slashes(char *p) {
  size_t n = strlen(p);
  while (n > 1 && p[n - 1] == '/') p[--n] = 0;
}

/* ================= import ================= */

typedef struct tree_chan {
  tree_import_t *t;
  int refs;
} tree_chan_t;

static const napi_type_tag CHAN_TAG = {0x5b3e8d1c7a2f4e09ULL, 0xc6a19f3e2d7b5804ULL};

static void chan_unref(tree_chan_t *c) {
  if (c != NULL && --c->refs == 0) free(c);
}

static void chan_finalize(napi_env env, void *data, void *hint) {
  (void)env;
  (void)hint;
  chan_unref(data);
}

static napi_value import_result(op_t *o);

static napi_value summary(napi_env env, const tree_counts_t *c, uint64_t started_ns) {
  napi_value out;
  napi_create_object(env, &out);
  napi_set_named_property(env, out, "files", nu_number(env, (double)c->files));
  napi_set_named_property(env, out, "directories", nu_number(env, (double)c->directories));
  napi_set_named_property(env, out, "bytes", nu_number(env, (double)c->bytes));
  napi_set_named_property(env, out, "skipped", nu_number(env, (double)c->skipped));
  napi_set_named_property(env, out, "durationMs", nu_number(env, (double)(uv_hrtime() - started_ns) / 1e6));
  return out;
}

static napi_value import_result(op_t *o) {
  tree_import_t *t = (tree_import_t *)o;
  return summary(o->js->env, &t->counts, t->started_ns);
}

static void import_start(op_t *o) {
  tree_import_t *t = (tree_import_t *)o;
  t->started_ns = uv_hrtime();
  t->state = T_RUNNING;
  /* The first "drain" says the transport is ready for entries. */
  t->want_drain = 1;
  err_t err = ERR_INIT;
  if (t->backend->start(t, &err) != 0) {
    t->state = T_DONE;
    op_settle(o, &err);
  }
}

static void import_cancel(op_t *o) {
  tree_import_t *t = (tree_import_t *)o;
  if (o->teardown) {
    if (t->state != T_READY && t->state != T_DONE) t->backend->stop(t, 1);
    t->state = T_DONE;
    op_release(o);
    return;
  }
  op_reject_cancelled(o);
  if (t->state == T_RUNNING || t->state == T_COMMITTING) {
    t->state = T_STOPPING;
    t->backend->stop(t, 0); /* tree_import_done releases */
  } else if (t->state == T_FAILING) {
    t->state = T_STOPPING; /* already stopping: done releases */
  } else {
    op_release(o);
  }
}

static void import_destroy(op_t *o) {
  tree_import_t *t = (tree_import_t *)o;
  sbx_timer_cancel(t->drain_timer);
  if (t->chan) {
    t->chan->t = NULL;
    chan_unref(t->chan);
  }
  if (t->be && t->backend->free) t->backend->free(t);
  tree_import_req_free(&t->req);
  tree_pathset_free(t->seen);
  free(t->file_path);
  err_clear(&t->failure);
}

static const op_vtable_t import_vt = {.name = "importTree",
    .start = import_start, .cancel = import_cancel, .result = import_result, .destroy = import_destroy};

void tree_import_done(tree_import_t *t, err_t *err) {
  op_t *o = &t->op;
  int state = t->state;
  t->state = T_DONE;
  if (state == T_STOPPING || o->settled) {
    if (err) err_clear(err);
    op_release(o);
    return;
  }
  if (state == T_FAILING) {
    if (err) err_clear(err);
    op_settle(o, &t->failure);
    return;
  }
  if (state == T_RUNNING && (err == NULL || !err_is_set(err))) {
    /* The backend may not finish before every entry was given. */
    err_t e = ERR_INIT;
    err_sandbox(&e, CODE_DOCKER_COMMAND_FAILED, "The import ended before all its entries were sent.");
    op_settle(o, &e);
    return;
  }
  op_settle(o, err);
}

static void on_drain_timer(void *ud) {
  tree_import_t *t = ud;
  t->drain_timer = NULL;
  t->drain_scheduled = 0;
  if (!t->want_drain || t->state != T_RUNNING) return;
  t->want_drain = 0;
  jsenv_scope_t s;
  if (jsenv_enter(t->op.js, &s) != 0) return;
  napi_value argv[1] = {nu_string(t->op.js->env, "drain")};
  op_emit(&t->op, 1, argv);
  jsenv_leave(t->op.js, &s);
}

void tree_import_drained(tree_import_t *t) {
  if (!t->want_drain || t->drain_scheduled || t->state != T_RUNNING) return;
  t->drain_timer = sbx_timer_start(t->op.js->io, 0, on_drain_timer, t);
  t->drain_scheduled = t->drain_timer != NULL;
}

/* A failure found by the front: the backend stops, the promise rejects with `err` once it
 * has. The op may be gone when this returns: callers return at once. */
static int import_fail(tree_import_t *t, err_t *err) {
  if (t->state != T_RUNNING && t->state != T_COMMITTING) {
    err_clear(err);
    return TREE_PUSH_STOP;
  }
  /* How far it got, unless the error already says (a quota breach does). */
  if (err->details == NULL && err->kind == ERRK_SANDBOX) err_set_details(err, tree_counts_json(&t->counts));
  err_move(&t->failure, err);
  t->state = T_FAILING;
  t->backend->stop(t, 0);
  return TREE_PUSH_STOP;
}

static int flow(tree_import_t *t) {
  if (t->state != T_RUNNING) return TREE_PUSH_STOP;
  if (t->backend->buffered(t) >= TREE_IMPORT_HIGH) {
    t->want_drain = 1;
    return TREE_PUSH_WAIT;
  }
  return TREE_PUSH_GO;
}

static tree_import_t *chan_import(napi_env env, napi_value v) {
  bool tagged = false;
  void *ptr = NULL;
  if (napi_check_object_type_tag(env, v, &CHAN_TAG, &tagged) != napi_ok || !tagged ||
      napi_get_value_external(env, v, &ptr) != napi_ok || ptr == NULL) {
    napi_throw_type_error(env, NULL, "Expected an import channel.");
    return NULL;
  }
  return ((tree_chan_t *)ptr)->t;
}

/* The file whose bytes were coming is over: it must have had exactly its byteLength. */
static int close_file(tree_import_t *t, err_t *err) {
  if (t->file_path == NULL) return 0;
  if (t->file_got != t->file_size) {
    err_sandbox(err, CODE_INVALID_ENTRY, "Import entry yielded %llu bytes, not its byteLength %llu: %s",
                (unsigned long long)t->file_got, (unsigned long long)t->file_size, t->file_path);
    return -1;
  }
  free(t->file_path);
  t->file_path = NULL;
  return 0;
}

static int admit_dir(tree_import_t *t, const char *path, unsigned mode, int count, err_t *err) {
  tree_entry_t e = {.kind = TREE_DIRECTORY, .path = path, .mode = mode, .size = 0};
  /* A directory given again was admitted the first time: it is not a new entry. */
  if (count && tree_quota_admit(&t->req.quota, &t->counts, &e, err) != 0) return -1;
  if (t->backend->entry(t, &e, err) != 0) return -1;
  if (count) {
    if (tree_pathset_add(t->seen, path, TREE_DIRECTORY) != 0) return err_oom(err);
    t->counts.directories++;
  }
  return 0;
}

/* native.treeImportEntry(channel, isDirectory, path, mode, byteLength) */
static napi_value js_import_entry(napi_env env, napi_callback_info info) {
  napi_value argv[5];
  if (nu_args(env, info, argv, 5) < 0) return NULL;
  tree_import_t *t = chan_import(env, argv[0]);
  if (t == NULL) return nu_number(env, TREE_PUSH_STOP);
  if (t->state != T_RUNNING) return nu_number(env, TREE_PUSH_STOP);
  err_t err = ERR_INIT;
  char *path = NULL;
  bool is_dir = false;
  napi_get_value_bool(env, argv[1], &is_dir);
  if (close_file(t, &err) != 0) goto fail;
  path = args_sandbox_path(env, argv[2], "path", 0, &err);
  if (path == NULL) goto fail;
  size_t plen = strlen(path);
  if (path[plen - 1] == '/') {
    if (!is_dir) {
      err_sandbox(&err, CODE_INVALID_PATH, "Import entry names a directory, not a file: %s", path);
      goto fail;
    }
    strip_slashes(path);
    plen = strlen(path);
  }
  int64_t mode = is_dir ? 0755 : 0644;
  if (!nu_is_undefined(env, argv[3]) && nu_typeof(env, argv[3]) != napi_null &&
      (!nu_safe_integer(env, argv[3], &mode) || mode < 0 || mode > 07777)) {
    err_range(&err, "mode must be an integer from 0 to 0o7777: %s", path);
    goto fail;
  }
  int64_t size = 0;
  if (!is_dir && (!nu_safe_integer(env, argv[4], &size) || size < 0)) {
    err_range(&err, "byteLength must be a non-negative safe integer: %s", path);
    goto fail;
  }
  /* The path in the workspace stays within the bounds of a path argument. */
  size_t dlen = strcmp(t->req.dest, ".") == 0 ? 0 : strlen(t->req.dest) + 1;
  size_t depth = tree_path_depth(path) + (dlen ? tree_path_depth(t->req.dest) : 0);
  if (dlen + plen > SANDBOX_PATH_MAX_BYTES) {
    err_sandbox(&err, CODE_INVALID_PATH, "Sandbox path is too long: %zu bytes (at most %d).", dlen + plen,
                SANDBOX_PATH_MAX_BYTES);
    goto fail;
  }
  if (depth > SANDBOX_PATH_MAX_DEPTH) {
    err_sandbox(&err, CODE_INVALID_PATH, "Sandbox path is too deep: %zu components (at most %d).", depth,
                SANDBOX_PATH_MAX_DEPTH);
    goto fail;
  }
  /* Parents first: a file on the way is refused, a missing directory becomes an entry. */
  for (size_t i = 1; i < plen; i++) {
    if (path[i] != '/') continue;
    path[i] = 0;
    int kind = tree_pathset_get(t->seen, path);
    int rc = 0;
    if (kind == TREE_FILE) {
      err_sandbox(&err, CODE_INVALID_PATH, "Import entry is inside a file of the import: %s", path);
      rc = -1;
    } else if (kind < 0) {
      rc = admit_dir(t, path, 0755, 1, &err);
    }
    path[i] = '/';
    if (rc != 0) goto fail;
  }
  int seen = tree_pathset_get(t->seen, path);
  if (seen == TREE_FILE || (seen == TREE_DIRECTORY && !is_dir)) {
    err_sandbox(&err, CODE_INVALID_ENTRY, "Import holds this path twice: %s", path);
    goto fail;
  }
  if (is_dir) {
    /* Given again (it was a parent made earlier): its mode is applied, it counts once. */
    if (admit_dir(t, path, (unsigned)mode, seen < 0, &err) != 0) goto fail;
    free(path);
    return nu_number(env, flow(t));
  }
  tree_entry_t e = {.kind = TREE_FILE, .path = path, .mode = (unsigned)mode, .size = (uint64_t)size};
  if (tree_quota_admit(&t->req.quota, &t->counts, &e, &err) != 0) goto fail;
  if (t->backend->entry(t, &e, &err) != 0) goto fail;
  if (tree_pathset_add(t->seen, path, TREE_FILE) != 0) {
    err_oom(&err);
    goto fail;
  }
  t->file_path = path;
  t->file_size = (uint64_t)size;
  t->file_got = 0;
  if (size == 0) t->counts.files++; /* complete already */
  return nu_number(env, flow(t));
fail:
  free(path);
  return nu_number(env, import_fail(t, &err));
}

/* native.treeImportData(channel, chunk) */
static napi_value js_import_data(napi_env env, napi_callback_info info) {
  napi_value argv[2];
  if (nu_args(env, info, argv, 2) < 0) return NULL;
  tree_import_t *t = chan_import(env, argv[0]);
  if (t == NULL || t->state != T_RUNNING) return nu_number(env, TREE_PUSH_STOP);
  err_t err = ERR_INIT;
  uint8_t *data = NULL;
  size_t len = 0;
  if (!nu_uint8array_view(env, argv[1], &data, &len)) {
    err_type(&err, "A file's chunks must be Uint8Arrays%s%s.", t->file_path ? ": " : "", t->file_path ? t->file_path : "");
    return nu_number(env, import_fail(t, &err));
  }
  if (t->file_path == NULL) {
    err_sandbox(&err, CODE_INVALID_ENTRY, "Import bytes came without a file entry.");
    return nu_number(env, import_fail(t, &err));
  }
  if (len > t->file_size - t->file_got) {
    err_sandbox(&err, CODE_INVALID_ENTRY, "Import entry yielded more than its byteLength %llu: %s",
                (unsigned long long)t->file_size, t->file_path);
    return nu_number(env, import_fail(t, &err));
  }
  if (len == 0) return nu_number(env, flow(t));
  if (t->backend->data(t, data, len, &err) != 0) return nu_number(env, import_fail(t, &err));
  t->file_got += len;
  t->counts.bytes += len;
  if (t->file_got == t->file_size) t->counts.files++;
  return nu_number(env, flow(t));
}

/* native.treeImportEnd(channel): every entry was given. */
static napi_value js_import_end(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  int argc = nu_args(env, info, argv, 1);
  if (argc < 0) return NULL;
  tree_import_t *t = argc > 0 ? chan_import(env, argv[0]) : NULL;
  if (t == NULL || t->state != T_RUNNING) return nu_number(env, TREE_PUSH_STOP);
  err_t err = ERR_INIT;
  if (close_file(t, &err) != 0) return nu_number(env, import_fail(t, &err));
  t->state = T_COMMITTING;
  t->want_drain = 0;
  if (t->backend->commit(t, &err) != 0) return nu_number(env, import_fail(t, &err));
  return nu_number(env, TREE_PUSH_GO);
}

/* native.treeImportCounts(channel): [files, directories, bytes] so far, or null. */
static napi_value js_import_counts(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  int argc = nu_args(env, info, argv, 1);
  if (argc < 0) return NULL;
  tree_import_t *t = argc > 0 ? chan_import(env, argv[0]) : NULL;
  if (t == NULL) return nu_null(env);
  napi_value out;
  napi_create_array_with_length(env, 3, &out);
  napi_set_element(env, out, 0, nu_number(env, (double)t->counts.files));
  napi_set_element(env, out, 1, nu_number(env, (double)t->counts.directories));
  napi_set_element(env, out, 2, nu_number(env, (double)t->counts.bytes));
  return out;
}

napi_value tree_import_prepare(napi_env env, sandbox_t *sb, napi_value *argv,
                               const tree_import_backend_t *backend) {
  jsenv_t *js = jsenv_get(env);
  napi_value options = nu_is_undefined(env, argv[1]) ? NULL : args_options(env, argv);
  if (!nu_is_undefined(env, argv[1]) && options == NULL) return NULL;
  err_t err = ERR_INIT;
  tree_import_req_t req;
  memset(&req, 0, sizeof(req));
  napi_value path = options ? nu_get(env, options, "path") : nu_undefined(env);
  if (nu_is_undefined(env, path)) req.dest = strdup(".");
  else req.dest = args_sandbox_path(env, path, "path", 1, &err);
  if (req.dest == NULL) {
    if (!err_is_set(&err)) err_oom(&err);
    return convert_throw_err(js, &err);
  }
  strip_slashes(req.dest);
  if ((options ? read_quotas(env, options, sb, &req.quota, &err) : (tree_quota_defaults(&req.quota, (uint64_t)sb->runtime.max_file_bytes), 0)) != 0) {
    tree_import_req_free(&req);
    return convert_throw_err(js, &err);
  }
  tree_import_t *t = op_prepare(env, &import_vt, sizeof(*t), sb);
  if (t == NULL) {
    tree_import_req_free(&req);
    return NULL;
  }
  t->req = req;
  t->backend = backend;
  err_init(&t->failure);
  t->seen = tree_pathset_new();
  t->chan = calloc(1, sizeof(*t->chan));
  if (t->seen == NULL || t->chan == NULL) {
    err_oom(&err);
    return op_prepared(&t->op, &err);
  }
  t->chan->t = t;
  t->chan->refs = 1; /* the op's */
  napi_value chan = NULL, token = NULL, out = NULL;
  if (napi_create_external(env, t->chan, NULL, NULL, &chan) != napi_ok ||
      napi_type_tag_object(env, chan, &CHAN_TAG) != napi_ok ||
      napi_add_finalizer(env, chan, t->chan, chan_finalize, NULL, NULL) != napi_ok) {
    err_oom(&err);
    return op_prepared(&t->op, &err);
  }
  t->chan->refs++; /* the JavaScript object's */
  token = op_prepared(&t->op, NULL);
  if (token == NULL) return NULL;
  NU_CALL(env, napi_create_object(env, &out));
  NU_CALL(env, napi_set_named_property(env, out, "token", token));
  NU_CALL(env, napi_set_named_property(env, out, "channel", chan));
  return out;
}

/* ================= export ================= */

typedef enum { EV_ENTRY = 0, EV_DATA, EV_END } ev_type_t;

typedef struct tree_event {
  struct tree_event *next;
  ev_type_t type;
  tree_kind_t kind;
  unsigned mode;
  uint64_t size;
  char *path;    /* EV_ENTRY */
  uint8_t *data; /* EV_DATA */
  size_t len;    /* EV_DATA: its bytes; EV_ENTRY: what it counts in queued_bytes */
} tree_event_t;

static void event_free(tree_event_t *e) {
  free(e->path);
  free(e->data);
  free(e);
}

static void drop_queue(tree_export_t *x) {
  while (x->head) {
    tree_event_t *e = x->head;
    x->head = e->next;
    event_free(e);
  }
  x->tail = NULL;
  x->queued_bytes = 0;
}

static napi_value export_result(op_t *o) {
  tree_export_t *x = (tree_export_t *)o;
  return summary(o->js->env, &x->counts, x->started_ns);
}

void tree_export_heard(tree_export_t *x) { x->heard_ns = uv_hrtime(); }

static void stop_idle(tree_export_t *x) {
  sbx_timer_cancel(x->idle_timer);
  x->idle_timer = NULL;
}

static void settle_export(tree_export_t *x);

/* The idle deadline: checked when it would fall, moved by what was heard meanwhile. */
static void on_idle(void *ud) {
  tree_export_t *x = ud;
  x->idle_timer = NULL;
  if (x->state != T_RUNNING || x->source_done) return;
  uint64_t now = uv_hrtime();
  uint64_t idle_ns = x->req.idle_ms > UINT64_MAX / 1000000u ? UINT64_MAX : x->req.idle_ms * 1000000u;
  /* Held back by the host (the consumer is behind): not the source's silence. */
  if (tree_export_should_pause(x)) x->heard_ns = now;
  uint64_t quiet = now - x->heard_ns;
  if (quiet < idle_ns) {
    uint64_t left_ms = (idle_ns - quiet + 999999u) / 1000000u;
    x->idle_timer = sbx_timer_start(x->op.js->io, left_ms, on_idle, x);
    return; /* without a timer (the addon is shutting down) the export ends with it */
  }
  x->backend->stop(x);
  x->source_done = 1;
  err_sandbox(&x->failure, CODE_TIMEOUT,
              "The export stopped: nothing came from the sandbox for %llu ms (idleTimeoutMs; the consumer was not "
              "holding it back).",
              (unsigned long long)x->req.idle_ms);
  err_set_details(&x->failure, tree_counts_json(&x->counts));
  sbx_timer_cancel(x->flush_timer);
  x->flush_timer = NULL;
  settle_export(x);
}

static void export_start(op_t *o) {
  tree_export_t *x = (tree_export_t *)o;
  x->started_ns = uv_hrtime();
  x->heard_ns = x->started_ns;
  x->state = T_RUNNING;
  err_t err = ERR_INIT;
  if (x->backend->start(x, &err) != 0) {
    x->state = T_DONE;
    op_settle(o, &err);
    return;
  }
  if (x->state == T_RUNNING && !x->source_done)
    x->idle_timer = sbx_timer_start(o->js->io, x->req.idle_ms, on_idle, x);
}

static int flushing_now(tree_export_t *x);

static void export_cancel(op_t *o) {
  tree_export_t *x = (tree_export_t *)o;
  if (x->state == T_RUNNING) x->backend->stop(x);
  x->state = T_DONE;
  drop_queue(x);
  stop_idle(x);
  sbx_timer_cancel(x->flush_timer);
  x->flush_timer = NULL;
  if (!o->teardown) op_reject_cancelled(o);
  /* Inside a flush (the consumer aborted from an event), the flush releases. */
  if (!flushing_now(x) || o->teardown) op_release(o);
}

static void export_control(op_t *o, int command) {
  tree_export_t *x = (tree_export_t *)o;
  if (x->state != T_RUNNING) return;
  if (command == OP_PAUSE) {
    x->js_paused = 1;
    x->backend->pause(x);
  } else {
    x->js_paused = 0;
    if (!tree_export_should_pause(x)) {
      x->heard_ns = uv_hrtime(); /* the deadline counts from here */
      x->backend->resume(x);
    }
  }
}

static void export_destroy(op_t *o) {
  tree_export_t *x = (tree_export_t *)o;
  sbx_timer_cancel(x->flush_timer);
  stop_idle(x);
  drop_queue(x);
  if (x->be && x->backend->free) x->backend->free(x);
  tree_export_req_free(&x->req);
  tree_pathset_free(x->wanted);
  tree_pathset_free(x->seen);
  err_clear(&x->failure);
}

static const op_vtable_t export_vt = {.name = "exportTree",
    .start = export_start, .cancel = export_cancel, .result = export_result,
    .destroy = export_destroy, .control = export_control};

static int flushing_now(tree_export_t *x) { return x->flushing; }

int tree_export_should_pause(const tree_export_t *x) { return x->js_paused || x->queued_bytes > EXPORT_NATIVE_HIGH; }

static void settle_export(tree_export_t *x) {
  x->state = T_DONE;
  stop_idle(x);
  if (err_is_set(&x->failure)) {
    drop_queue(x);
    op_settle(&x->op, &x->failure);
  } else {
    op_settle(&x->op, NULL);
  }
}

static void on_flush(void *ud) {
  tree_export_t *x = ud;
  x->flush_timer = NULL;
  op_t *o = &x->op;
  if (o->settled) return;
  jsenv_t *js = o->js;
  jsenv_scope_t s;
  if (jsenv_enter(js, &s) != 0) return;
  napi_env env = js->env;
  x->flushing = 1;
  while (x->head != NULL && !o->settled && !o->cancelled) {
    tree_event_t *e = x->head;
    x->head = e->next;
    if (x->head == NULL) x->tail = NULL;
    napi_value argv[2];
    if (e->type == EV_ENTRY) {
      x->queued_bytes -= e->len;
      napi_value v;
      napi_create_object(env, &v);
      napi_set_named_property(env, v, "kind", nu_string(env, e->kind == TREE_FILE ? "file" : "directory"));
      napi_set_named_property(env, v, "path", nu_string(env, e->path));
      napi_set_named_property(env, v, "mode", nu_number(env, e->mode));
      napi_set_named_property(env, v, "byteLength", nu_number(env, (double)e->size));
      argv[0] = nu_string(env, "entry");
      argv[1] = v;
    } else if (e->type == EV_DATA) {
      x->queued_bytes -= e->len;
      argv[0] = nu_string(env, "data");
      /* A copy in memory V8 allocates and counts: handed over as external buffers, a
       * gigabyte of chunks piled up before the collector ran (measured: +85 MiB RSS). */
      argv[1] = nu_uint8array(env, e->data, e->len);
    } else {
      argv[0] = nu_string(env, "end");
      argv[1] = nu_undefined(env);
    }
    event_free(e);
    op_emit(o, 2, argv);
  }
  x->flushing = 0;
  if (o->cancelled) {
    jsenv_leave(js, &s);
    if (!o->teardown) op_release(o);
    return;
  }
  /* Settling may free the op: nothing of it is touched afterwards. */
  if (!o->settled) {
    if (x->source_done && x->head == NULL) settle_export(x);
    else if (x->state == T_RUNNING && !tree_export_should_pause(x)) {
      x->heard_ns = uv_hrtime();
      x->backend->resume(x);
    }
  }
  jsenv_leave(js, &s);
}

static int enqueue(tree_export_t *x, tree_event_t *e, err_t *err) {
  if (x->tail) x->tail->next = e;
  else x->head = e;
  x->tail = e;
  if (x->flush_timer == NULL) {
    x->flush_timer = sbx_timer_start(x->op.js->io, 0, on_flush, x);
    if (x->flush_timer == NULL) return err_sandbox(err, CODE_INVALID_STATE, "The addon is shutting down.");
  }
  return 0;
}

static const char *src_kind_name(tree_src_kind_t k) {
  switch (k) {
    case TREE_SRC_SYMLINK:
      return "a symbolic link";
    case TREE_SRC_HARDLINK:
      return "a hard link";
    default:
      return "not a regular file or directory";
  }
}

int tree_export_entry(tree_export_t *x, const char *name, size_t len, const char *root, const char *prefix,
                      tree_src_kind_t kind, unsigned mode, uint64_t size, err_t *err) {
  if (x->in_entry) return err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, "The archive's members overlap.");
  int is_root = 0;
  char *path = tree_map_name(name, len, root, prefix, &is_root, err);
  if (path == NULL) {
    if (x->req.skip_unsupported && err->code != NULL && strcmp(err->code, CODE_INVALID_ENTRY) == 0) {
      err_clear(err);
      x->counts.skipped++;
      x->in_entry = 1;
      x->skipping = 1;
      return 0;
    }
    if (err->details == NULL) err_set_details(err, tree_counts_json(&x->counts));
    return -1;
  }
  /* The workspace itself is not an entry of its export. */
  if (is_root && x->req.kind == TREE_SEL_WORKSPACE) {
    free(path);
    if (kind != TREE_SRC_DIRECTORY)
      return err_sandbox(err, CODE_INVALID_PATH, "The workspace is not a directory.");
    x->in_entry = 1;
    x->skipping = 1;
    return 0;
  }
  if (kind != TREE_SRC_FILE && kind != TREE_SRC_DIRECTORY) {
    if (x->req.skip_unsupported && !(is_root && x->req.kind != TREE_SEL_WORKSPACE)) {
      free(path);
      x->counts.skipped++;
      x->in_entry = 1;
      x->skipping = 1;
      return 0;
    }
    err_sandbox(err, is_root ? CODE_INVALID_PATH : CODE_INVALID_ENTRY, "Sandbox entry is %s: %s", src_kind_name(kind),
                path);
    err_set_details(err, json_pack("{s:s, s:I, s:I, s:I}", "path", path, "files", (json_int_t)x->counts.files,
                                   "directories", (json_int_t)x->counts.directories, "bytes",
                                   (json_int_t)x->counts.bytes));
    free(path);
    return -1;
  }
  int rc = 0;
  if (x->req.kind == TREE_SEL_FILES) {
    if (kind != TREE_SRC_FILE) rc = err_sandbox(err, CODE_INVALID_PATH, "Sandbox path is not a regular file: %s", path);
    else if (tree_pathset_get(x->wanted, path) < 0)
      rc = err_sandbox(err, CODE_INVALID_PATH, "The archive holds a file that was not asked for: %s", path);
  } else if (x->req.kind == TREE_SEL_SUBTREE && is_root && kind != TREE_SRC_DIRECTORY) {
    rc = err_sandbox(err, CODE_INVALID_PATH, "Sandbox path is not a directory: %s", path);
  }
  if (rc == 0 && tree_pathset_get(x->seen, path) >= 0)
    rc = err_sandbox(err, CODE_INVALID_ENTRY, "The archive holds this path twice: %s", path);
  for (size_t i = 1; rc == 0 && path[i]; i++) {
    if (path[i] != '/') continue;
    path[i] = 0;
    if (tree_pathset_get(x->seen, path) == TREE_FILE)
      rc = err_sandbox(err, CODE_INVALID_ENTRY, "The archive holds an entry inside a file: %s", path);
    path[i] = '/';
  }
  tree_entry_t e = {.kind = kind == TREE_SRC_FILE ? TREE_FILE : TREE_DIRECTORY, .path = path, .mode = mode & 0777, .size = size};
  if (rc == 0) rc = tree_quota_admit(&x->req.quota, &x->counts, &e, err);
  if (rc == 0 && tree_pathset_add(x->seen, path, e.kind) != 0) rc = err_oom(err);
  if (rc != 0) {
    free(path);
    return -1;
  }
  tree_event_t *ev = calloc(1, sizeof(*ev));
  if (ev == NULL) {
    free(path);
    return err_oom(err);
  }
  ev->type = EV_ENTRY;
  ev->kind = e.kind;
  ev->mode = e.mode;
  ev->size = e.kind == TREE_FILE ? size : 0;
  ev->path = path;
  ev->len = EXPORT_ENTRY_COST + strlen(path);
  x->queued_bytes += ev->len;
  x->in_entry = 1;
  x->skipping = 0;
  x->entry_is_file = e.kind == TREE_FILE;
  x->entry_size = ev->size;
  x->entry_got = 0;
  if (e.kind == TREE_DIRECTORY) x->counts.directories++;
  return enqueue(x, ev, err);
}

int tree_export_data(tree_export_t *x, const uint8_t *data, size_t len, err_t *err) {
  if (!x->in_entry) return err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, "The archive has data outside a member.");
  if (x->skipping || len == 0) return 0;
  if (!x->entry_is_file || len > x->entry_size - x->entry_got)
    return err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, "The archive's member holds more bytes than it announced.");
  tree_event_t *ev = calloc(1, sizeof(*ev));
  uint8_t *copy = malloc(len);
  if (ev == NULL || copy == NULL) {
    free(ev);
    free(copy);
    return err_oom(err);
  }
  memcpy(copy, data, len);
  ev->type = EV_DATA;
  ev->data = copy;
  ev->len = len;
  x->entry_got += len;
  x->counts.bytes += len;
  x->queued_bytes += len;
  return enqueue(x, ev, err);
}

int tree_export_entry_end(tree_export_t *x, err_t *err) {
  if (!x->in_entry) return err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, "The archive ended a member it did not start.");
  x->in_entry = 0;
  if (x->skipping) {
    x->skipping = 0;
    return 0;
  }
  if (!x->entry_is_file) return 0;
  if (x->entry_got != x->entry_size)
    return err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, "The archive's member holds fewer bytes than it announced.");
  x->counts.files++;
  tree_event_t *ev = calloc(1, sizeof(*ev));
  if (ev == NULL) return err_oom(err);
  ev->type = EV_END;
  return enqueue(x, ev, err);
}

void tree_export_done(tree_export_t *x, err_t *err) {
  if (x->state != T_RUNNING) {
    if (err) err_clear(err);
    return;
  }
  x->source_done = 1;
  stop_idle(x);
  if (err != NULL && err_is_set(err)) {
    err_move(&x->failure, err);
    sbx_timer_cancel(x->flush_timer);
    x->flush_timer = NULL;
    settle_export(x);
    return;
  }
  if (x->req.kind == TREE_SEL_FILES && tree_pathset_count(x->seen) != x->req.npaths) {
    err_sandbox(&x->failure, CODE_DOCKER_COMMAND_FAILED, "The archive lacks files that were asked for (%zu of %zu).",
                tree_pathset_count(x->seen), x->req.npaths);
    sbx_timer_cancel(x->flush_timer);
    x->flush_timer = NULL;
    settle_export(x);
    return;
  }
  /* The queue goes out first; the last flush settles. */
  if (x->head == NULL && x->flush_timer == NULL) {
    x->flush_timer = sbx_timer_start(x->op.js->io, 0, on_flush, x);
    if (x->flush_timer == NULL) settle_export(x);
  }
}

static int read_selection(napi_env env, napi_value sel, tree_export_req_t *req, err_t *err) {
  if (!nu_is_record(env, sel)) return err_type(err, "selection must be an object.");
  napi_value kind = nu_get(env, sel, "kind");
  char *k = nu_typeof(env, kind) == napi_string ? nu_strdup(env, kind) : NULL;
  int rc = 0;
  if (k != NULL && strcmp(k, "workspace") == 0) {
    req->kind = TREE_SEL_WORKSPACE;
  } else if (k != NULL && strcmp(k, "subtree") == 0) {
    req->kind = TREE_SEL_SUBTREE;
    req->path = args_sandbox_path(env, nu_get(env, sel, "path"), "selection.path", 1, err);
    if (req->path == NULL) rc = -1;
    else {
      strip_slashes(req->path);
      if (strcmp(req->path, ".") == 0) req->kind = TREE_SEL_WORKSPACE;
    }
  } else if (k != NULL && strcmp(k, "files") == 0) {
    req->kind = TREE_SEL_FILES;
    napi_value paths = nu_get(env, sel, "paths");
    uint32_t n = 0;
    if (!nu_is_array(env, paths) || napi_get_array_length(env, paths, &n) != napi_ok || n == 0) {
      rc = err_type(err, "selection.paths must be a non-empty array of strings.");
    } else if ((req->paths = calloc(n, sizeof(char *))) == NULL) {
      rc = err_oom(err);
    } else {
      for (uint32_t i = 0; rc == 0 && i < n; i++) {
        napi_value v;
        napi_get_element(env, paths, i, &v);
        char *p = args_sandbox_path(env, v, "selection.paths[]", 0, err);
        if (p == NULL) {
          rc = -1;
          break;
        }
        req->paths[req->npaths++] = p;
        if (p[strlen(p) - 1] == '/') rc = err_sandbox(err, CODE_INVALID_PATH, "Sandbox path names a directory, not a file: %s", p);
        for (size_t j = 0; rc == 0 && j + 1 < req->npaths; j++)
          if (strcmp(req->paths[j], p) == 0) rc = err_sandbox(err, CODE_INVALID_PATH, "selection.paths lists a path twice: %s", p);
      }
    }
  } else {
    rc = err_type(err, "selection.kind must be \"workspace\", \"subtree\" or \"files\".");
  }
  free(k);
  return rc;
}

napi_value tree_export_prepare(napi_env env, sandbox_t *sb, napi_value *argv,
                               const tree_export_backend_t *backend) {
  jsenv_t *js = jsenv_get(env);
  err_t err = ERR_INIT;
  tree_export_req_t req;
  memset(&req, 0, sizeof(req));
  napi_value options = argv[2];
  if (read_selection(env, argv[1], &req, &err) != 0) goto fail;
  if (!nu_is_undefined(env, options) && !nu_is_record(env, options)) {
    err_type(&err, "options must be an object.");
    goto fail;
  }
  if (nu_is_undefined(env, options)) tree_quota_defaults(&req.quota, (uint64_t)sb->runtime.max_file_bytes);
  else if (read_quotas(env, options, sb, &req.quota, &err) != 0) goto fail;
  req.idle_ms = TREE_EXPORT_IDLE_MS;
  napi_value idle = nu_is_undefined(env, options) ? options : nu_get(env, options, "idleTimeoutMs");
  if (!nu_is_undefined(env, idle)) {
    int64_t ms = 0;
    if (!nu_safe_integer(env, idle, &ms) || ms <= 0) {
      err_range(&err, "idleTimeoutMs must be a positive safe integer.");
      goto fail;
    }
    req.idle_ms = (uint64_t)ms;
  }
  napi_value special = nu_is_undefined(env, options) ? options : nu_get(env, options, "specialFiles");
  if (!nu_is_undefined(env, special)) {
    char *s = nu_typeof(env, special) == napi_string ? nu_strdup(env, special) : NULL;
    int ok = s != NULL && (strcmp(s, "refuse") == 0 || strcmp(s, "skip") == 0);
    req.skip_unsupported = ok && strcmp(s, "skip") == 0;
    free(s);
    if (!ok) {
      err_type(&err, "specialFiles must be \"refuse\" or \"skip\".");
      goto fail;
    }
  }
  tree_export_t *x = op_prepare(env, &export_vt, sizeof(*x), sb);
  if (x == NULL) {
    tree_export_req_free(&req);
    return NULL;
  }
  x->req = req;
  x->backend = backend;
  err_init(&x->failure);
  x->seen = tree_pathset_new();
  if (x->seen == NULL) err_oom(&err);
  if (req.kind == TREE_SEL_FILES) {
    x->wanted = tree_pathset_new();
    if (x->wanted == NULL) err_oom(&err);
    for (size_t i = 0; x->wanted && i < req.npaths; i++)
      if (tree_pathset_add(x->wanted, req.paths[i], TREE_FILE) != 0) err_oom(&err);
  }
  return op_prepared(&x->op, &err);
fail:
  tree_export_req_free(&req);
  return convert_throw_err(js, &err);
}

void tree_register(napi_env env, napi_value exports) {
  napi_property_descriptor fns[] = {
      {"treeImportEntry", NULL, js_import_entry, NULL, NULL, NULL, napi_default, NULL},
      {"treeImportData", NULL, js_import_data, NULL, NULL, NULL, napi_default, NULL},
      {"treeImportEnd", NULL, js_import_end, NULL, NULL, NULL, napi_default, NULL},
      {"treeImportCounts", NULL, js_import_counts, NULL, NULL, NULL, napi_default, NULL},
  };
  napi_define_properties(env, exports, sizeof(fns) / sizeof(fns[0]), fns);
}
