/*
 * agent_files.c - readFile, writeFile and listFiles through the agent (see agent_op.h).
 *
 * The agent works as the sandbox's own user and resolves every path beneath the workdir
 * with no symbolic link followed anywhere on it (openat2 RESOLVE_BENEATH |
 * RESOLVE_NO_SYMLINKS, or an O_NOFOLLOW walk): nothing here can be redirected by a link
 * the sandbox plants, whatever it swaps while the call runs. A write lands in a temporary
 * file renamed over the target. A listing's names are bytes (length-prefixed on the wire):
 * they are decoded as the engine path decodes them (ill-formed UTF-8 replaced by U+FFFD).
 * Errors carry the engine path's messages. A listing has the engine path's deadline, the
 * runtime's commandTimeoutMs (there the deadline of its find): an agent that never
 * answers (or a directory that takes longer) fails the call as a timed-out find does, and
 * the request is cancelled; the connection stays.
 *
 * Owns: each operation its request (path, data), the bytes read, the entries listed, and
 * a listing its deadline's timer.
 */
#include "runtime/agent_files.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/findparse.h"
#include "codec/paths.h"
#include "codec/textpage.h"
#include "engine/timer.h"
#include "napi/args.h"
#include "napi/convert.h"
#include "napi/values.h"
#include "runtime/agent_op.h"
#include "runtime/engine_files.h"
#include "runtime/listing.h"

#define LIST_WINDOW (256u * 1024u)
/* What one listing may hold on the host, whatever the agent sends: at most
 * LIST_MAX_ENTRIES entries (the max_entries the agent is asked for) and LIST_MAX_BYTES of
 * them (each entry's path plus its record, as counted by add_entry). More is a lie of the
 * agent: the call fails and so does the connection. */
#define LIST_MAX_ENTRIES 100000u
#define LIST_MAX_BYTES (16u * 1024u * 1024u)

/* ================= read ================= */

typedef struct agent_read_op {
  agent_op_t base;
  char *path;
  uint64_t max;
  buf_t bytes;
} agent_read_op_t;

static void read_event(agent_req_t *req, const agent_event_t *ev, void *ud) {
  (void)req;
  agent_read_op_t *op = ud;
  err_t err = ERR_INIT;
  switch (ev->type) {
    case AE_DATA:
      if (buf_append(&op->bytes, ev->data, ev->len) != 0) {
        /* More bytes than the bound: the file grew while it was read. */
        agent_req_cancel(op->base.req);
        op->base.req = NULL;
        err_sandbox(&err, CODE_FILE_TOO_LARGE, "Sandbox file exceeds maxFileBytes (more than %llu bytes): %s",
                    (unsigned long long)op->max, op->path);
        agent_op_fail(&op->base, &err);
      }
      return;
    case AE_RESULT:
      op->base.req = NULL;
      if (ev->res.read.flags & AW_READF_TRUNCATED)
        err_sandbox(&err, CODE_FILE_TOO_LARGE, "Sandbox file exceeds maxFileBytes (more than %llu bytes): %s",
                    (unsigned long long)op->max, op->path);
      op_settle(&op->base.op, &err);
      return;
    case AE_ERROR:
      op->base.req = NULL;
      if (ev->error.kind == AW_E_TOO_LARGE)
        err_sandbox(&err, CODE_FILE_TOO_LARGE, "Sandbox file exceeds maxFileBytes (%llu > %llu): %s",
                    (unsigned long long)ev->error.value, (unsigned long long)op->max, op->path);
      else if (ev->error.kind == AW_E_PERMISSION)
        err_sandbox(&err, CODE_DOCKER_COMMAND_FAILED, "Unable to read sandbox file as user %s: %s",
                    op->base.op.sb->user[0] ? op->base.op.sb->user : "root", op->path);
      else if (ev->error.kind == AW_E_SYMLINK && ev->error.detail.len == strlen(op->path) &&
               memcmp(ev->error.detail.p, op->path, ev->error.detail.len) == 0)
        /* The file itself is a link: as the engine path says it. */
        err_sandbox(&err, CODE_INVALID_PATH, "Sandbox path is not a regular file: %s", op->path);
      else
        agent_error_to_err(&ev->error, "read sandbox file", op->path, &err);
      agent_op_fail(&op->base, &err);
      return;
    case AE_FAILED:
      agent_op_lost(&op->base, ev);
      return;
    default:
      return;
  }
}

static void read_run(agent_op_t *base, agent_conn_t *c) {
  agent_read_op_t *op = (agent_read_op_t *)base;
  agent_msg_t m = {.type = AW_T_READ};
  m.u.read.max_bytes = op->max;
  /* The whole file may come at once: it is held in memory anyway, up to the bound. */
  m.u.read.window = op->max + 1 < AW_MAX_WINDOW ? (uint32_t)(op->max + 1) : AW_MAX_WINDOW;
  m.u.read.path = (aw_bytes_t){(const uint8_t *)op->path, (uint32_t)strlen(op->path)};
  agent_op_send(base, c, &m, read_event);
}

static op_t *read_fallback(agent_op_t *base, err_t *err) {
  agent_read_op_t *op = (agent_read_op_t *)base;
  op_t *o = files_engine_read_op(base->op.js, base->op.sb, &op->path);
  if (o == NULL) err_oom(err);
  return o;
}

static napi_value read_result(op_t *o) {
  return convert_bytes(o->js, &((agent_read_op_t *)o)->bytes);
}

static void read_destroy(op_t *o) {
  agent_read_op_t *op = (agent_read_op_t *)o;
  agent_op_destroy(&op->base);
  free(op->path);
  buf_free(&op->bytes);
}

static const agent_op_kind_t read_kind = {
    .vt = {.name = "agentReadFile", .start = agent_op_start, .stop = agent_op_stop, .result = read_result,
           .destroy = read_destroy},
    .run = read_run,
    .fallback = read_fallback,
};

napi_value agent_read_prepare(napi_env env, sandbox_t *sb, napi_value *argv) {
  jsenv_t *js = jsenv_get(env);
  if (args_options(env, argv) == NULL) return NULL;
  err_t err = ERR_INIT;
  char *path = files_parse_read(env, argv, &err);
  if (path == NULL) return convert_throw_err(js, &err);
  agent_read_op_t *op = agent_op_prepare(env, &read_kind, sizeof(*op), sb);
  if (op == NULL) {
    free(path);
    return NULL;
  }
  op->path = path;
  op->max = (uint64_t)sb->runtime.max_file_bytes;
  buf_init(&op->bytes, op->max < SIZE_MAX ? (size_t)op->max : SIZE_MAX - 1);
  return op_prepared(&op->base.op, NULL);
}

/* ================= write ================= */

typedef struct agent_write_op {
  agent_op_t base;
  file_write_req_t req;
} agent_write_op_t;

static void write_event(agent_req_t *req, const agent_event_t *ev, void *ud) {
  (void)req;
  agent_write_op_t *op = ud;
  const char *path = op->req.path;
  err_t err = ERR_INIT;
  switch (ev->type) {
    case AE_RESULT:
      op->base.req = NULL;
      op_settle(&op->base.op, NULL);
      return;
    case AE_ERROR: {
      op->base.req = NULL;
      const aw_error_t *e = &ev->error;
      char *blocking = e->detail.len ? strndup((const char *)e->detail.p, e->detail.len) : NULL;
      const char *where = blocking ? blocking : path;
      if (e->kind == AW_E_SYMLINK) {
        err_sandbox(&err, CODE_INVALID_PATH, "Sandbox path passes through a symbolic link: %s", where);
        err_set_details(&err, json_pack("{s:s, s:s}", "path", path, "blocking", where));
      } else if (e->kind == AW_E_NOT_DIRECTORY) {
        err_sandbox(&err, CODE_DOCKER_COMMAND_FAILED, "Unable to create sandbox directory.");
        err_set_details(&err, json_pack("{s:s, s:s}", "path", path, "blocking", where));
      } else if (e->kind == AW_E_IS_DIRECTORY) {
        err_sandbox(&err, CODE_DOCKER_COMMAND_FAILED, "Sandbox path names a directory, not a file: %s", path);
      } else if (e->kind == AW_E_PERMISSION) {
        err_sandbox(&err, CODE_DOCKER_COMMAND_FAILED, "Unable to write sandbox file as user %s: %s",
                    op->base.op.sb->user[0] ? op->base.op.sb->user : "root", path);
      } else {
        agent_error_to_err(e, "write sandbox file", path, &err);
      }
      free(blocking);
      agent_op_fail(&op->base, &err);
      return;
    }
    case AE_FAILED:
      agent_op_lost(&op->base, ev);
      return;
    default:
      return;
  }
}

static void write_run(agent_op_t *base, agent_conn_t *c) {
  agent_write_op_t *op = (agent_write_op_t *)base;
  err_t err = ERR_INIT;
  agent_msg_t m = {.type = AW_T_WRITE};
  m.u.write.length = op->req.len;
  m.u.write.mode = 0644;
  m.u.write.path = (aw_bytes_t){(const uint8_t *)op->req.path, (uint32_t)strlen(op->req.path)};
  if (agent_op_send(base, c, &m, write_event) != 0) return;
  if (agent_req_write(base->req, op->req.data, op->req.len, 1) != 0) {
    agent_req_cancel(base->req);
    base->req = NULL;
    err_oom(&err);
    agent_op_fail(base, &err);
    return;
  }
  free(op->req.data); /* the request holds its own copy */
  op->req.data = NULL;
}

static op_t *write_fallback(agent_op_t *base, err_t *err) {
  agent_write_op_t *op = (agent_write_op_t *)base;
  op_t *o = files_engine_write_op(base->op.js, base->op.sb, &op->req);
  if (o == NULL) err_oom(err);
  return o;
}

static void write_destroy(op_t *o) {
  agent_write_op_t *op = (agent_write_op_t *)o;
  agent_op_destroy(&op->base);
  file_write_req_free(&op->req);
}

static const agent_op_kind_t write_kind = {
    .vt = {.name = "agentWriteFile", .start = agent_op_start, .stop = agent_op_stop, .destroy = write_destroy},
    .run = write_run,
    .fallback = write_fallback,
};

napi_value agent_write_prepare(napi_env env, sandbox_t *sb, napi_value *argv) {
  jsenv_t *js = jsenv_get(env);
  if (args_options(env, argv) == NULL) return NULL;
  err_t err = ERR_INIT;
  file_write_req_t req;
  if (files_parse_write(env, sb, argv, &req, &err) != 0) return convert_throw_err(js, &err);
  agent_write_op_t *op = agent_op_prepare(env, &write_kind, sizeof(*op), sb);
  if (op == NULL) {
    file_write_req_free(&req);
    return NULL;
  }
  op->req = req;
  return op_prepared(&op->base.op, NULL);
}

/* ================= list ================= */

typedef struct agent_list_op {
  agent_op_t base;
  char *path; /* normalized, relative; "." for the root */
  buf_t partial; /* a record cut between two DATA frames */
  list_entries_t entries;
  size_t cap;
  size_t kept; /* bytes the entries hold, bounded by LIST_MAX_BYTES */
  const char *breach; /* the bound the agent passed, NULL while within them */
  sbx_timer_t *deadline; /* commandTimeoutMs from the request's start */
} agent_list_op_t;

static file_type_t entry_type(uint8_t t) {
  switch (t) {
    case AW_ENT_FILE: return FILE_TYPE_FILE;
    case AW_ENT_DIR: return FILE_TYPE_DIRECTORY;
    case AW_ENT_SYMLINK: return FILE_TYPE_SYMLINK;
    default: return FILE_TYPE_OTHER;
  }
}

/* One record: "<path>/<name>" with the name decoded as the engine path decodes names. */
static int add_entry(agent_list_op_t *op, const aw_entry_t *e) {
  /* The agent was asked for at most LIST_MAX_ENTRIES: one more is a lie, refused before
   * anything is kept for it. */
  if (op->entries.count >= LIST_MAX_ENTRIES) {
    op->breach = "more listing entries than the 100000 asked for";
    return -1;
  }
  if (op->entries.count == op->cap) {
    size_t cap = op->cap ? op->cap * 2 : 32;
    list_entry_t *items = realloc(op->entries.items, cap * sizeof(*items));
    if (items == NULL) return -1;
    op->entries.items = items;
    op->cap = cap;
  }
  buf_t p;
  buf_init(&p, 0);
  int root = strcmp(op->path, ".") == 0;
  if ((!root && (buf_append_str(&p, op->path) != 0 || buf_append(&p, "/", 1) != 0)) ||
      utf8_decode_lossy(e->name.p, e->name.len, &p) != 0 || buf_terminate(&p) != 0) {
    buf_free(&p);
    return -1;
  }
  /* What keeping it costs (its path, at most 4096 + 1 + 3 * 255 bytes, and its entry):
   * past LIST_MAX_BYTES in all, the listing is refused. */
  size_t cost = p.len + 1 + sizeof(list_entry_t);
  if (op->kept + cost > LIST_MAX_BYTES) {
    buf_free(&p);
    op->breach = "a listing larger than the 16 MiB a listing may hold";
    return -1;
  }
  op->kept += cost;
  /* Kept at its size (a buffer's capacity is at least 256 bytes, and what is counted is
   * what is kept). */
  size_t len = 0;
  char *path = (char *)buf_steal(&p, &len);
  char *tight = path ? realloc(path, len + 1) : NULL;
  if (tight != NULL) path = tight;
  list_entry_t *it = &op->entries.items[op->entries.count++];
  it->path = path;
  it->type = entry_type(e->type);
  it->has_size = it->type == FILE_TYPE_FILE;
  it->size = e->size;
  return 0;
}

/* Records arrive in DATA frames; one may straddle two. -1 when they do not decode. */
static int take_records(agent_list_op_t *op, const uint8_t *data, size_t len) {
  if (op->partial.len > 0 || len == 0) {
    if (buf_append(&op->partial, data, len) != 0) return -1;
    data = op->partial.data;
    len = op->partial.len;
  }
  const uint8_t *p = data;
  size_t left = len;
  for (;;) {
    const uint8_t *at = p;
    size_t before = left;
    aw_entry_t e;
    int rc = aw_entry_next(&p, &left, &e);
    if (rc == 0) break;
    if (rc == AW_ERR_SHORT) {
      /* Cut: keep the rest for the next frame. */
      p = at;
      left = before;
      break;
    }
    if (rc < 0) return -1;
    if (add_entry(op, &e) != 0) return -1;
  }
  if (op->partial.len > 0 && data == op->partial.data) {
    buf_consume(&op->partial, len - left);
  } else if (left > 0) {
    if (buf_append(&op->partial, p, left) != 0) return -1;
  }
  return 0;
}

static void list_event(agent_req_t *req, const agent_event_t *ev, void *ud) {
  (void)req;
  agent_list_op_t *op = ud;
  err_t err = ERR_INIT;
  switch (ev->type) {
    case AE_DATA:
      if (take_records(op, ev->data, ev->len) != 0) {
        op->base.req = NULL;
        if (op->breach != NULL) {
          /* A bound passed: the agent lies (it was asked for no more); the connection ends. */
          agent_req_violation(req, op->breach);
          err_sandbox(&err, CODE_DOCKER_COMMAND_FAILED,
                      "Unable to list sandbox files: the sandbox agent sent %s (the listing was refused).", op->breach);
          err_set_details(&err, json_pack("{s:s, s:I, s:I}", "path", op->path, "maxEntries", (json_int_t)LIST_MAX_ENTRIES,
                                          "maxBytes", (json_int_t)LIST_MAX_BYTES));
        } else {
          agent_req_cancel(req);
          err_sandbox(&err, CODE_DOCKER_COMMAND_FAILED, "Docker returned invalid file metadata.");
        }
        agent_op_fail(&op->base, &err);
        return;
      }
      agent_req_grant(op->base.req, AW_S_OUT, (uint32_t)ev->len);
      return;
    case AE_RESULT:
      op->base.req = NULL;
      if (op->partial.len > 0) {
        err_sandbox(&err, CODE_DOCKER_COMMAND_FAILED, "Docker returned invalid file metadata.");
      } else if (ev->res.list.count != op->entries.count) {
        /* The RESULT counts what was sent: a count that does not match is a lie. */
        agent_req_violation(req, "a listing result that does not match the entries it sent");
        err_sandbox(&err, CODE_DOCKER_COMMAND_FAILED,
                    "Unable to list sandbox files: the sandbox agent's result does not match the entries it sent.");
      }
      op_settle(&op->base.op, &err);
      return;
    case AE_ERROR: {
      op->base.req = NULL;
      const aw_error_t *e = &ev->error;
      size_t plen = strlen(op->path);
      int at_end = e->detail.len == 0 || (e->detail.len == plen && memcmp(e->detail.p, op->path, plen) == 0);
      /* As find: a link or a file named as the directory lists nothing. */
      if ((e->kind == AW_E_SYMLINK && at_end) || (e->kind == AW_E_NOT_DIRECTORY && at_end)) {
        op_settle(&op->base.op, NULL);
        return;
      }
      if (e->kind == AW_E_NOT_FOUND || e->kind == AW_E_NOT_DIRECTORY) {
        err_sandbox(&err, CODE_DOCKER_COMMAND_FAILED, "Unable to list sandbox files.");
        err_set_details(&err, json_pack("{s:s, s:i, s:s}", "status", "exited", "exitCode", 1, "path", op->path));
      } else {
        agent_error_to_err(e, "list sandbox files", op->path, &err);
      }
      agent_op_fail(&op->base, &err);
      return;
    }
    case AE_FAILED:
      agent_op_lost(&op->base, ev);
      return;
    default:
      return;
  }
}

/* commandTimeoutMs passed with the request still running (every end clears base.req). */
static void on_list_deadline(void *ud) {
  agent_list_op_t *op = ud;
  op->deadline = NULL;
  if (op->base.req == NULL) return;
  agent_req_cancel(op->base.req);
  op->base.req = NULL;
  err_t err = ERR_INIT;
  err_sandbox(&err, CODE_DOCKER_COMMAND_FAILED, "Unable to list sandbox files.");
  err_set_details(&err, json_pack("{s:s, s:s, s:I}", "status", "timed_out", "path", op->path, "timeoutMs",
                                  (json_int_t)op->base.op.sb->runtime.command_timeout_ms));
  agent_op_fail(&op->base, &err);
}

static void list_run(agent_op_t *base, agent_conn_t *c) {
  agent_list_op_t *op = (agent_list_op_t *)base;
  agent_msg_t m = {.type = AW_T_LIST};
  m.u.list.max_entries = LIST_MAX_ENTRIES;
  m.u.list.window = LIST_WINDOW;
  const char *path = strcmp(op->path, ".") == 0 ? "" : op->path;
  m.u.list.path = (aw_bytes_t){(const uint8_t *)path, (uint32_t)strlen(path)};
  if (agent_op_send(base, c, &m, list_event) != 0) return;
  /* Without a timer (the addon is shutting down) the listing waits as the caller does. */
  op->deadline = sbx_timer_start(engine_io(base->op.sb->eng), (uint64_t)base->op.sb->runtime.command_timeout_ms,
                                 on_list_deadline, op);
}

static op_t *list_fallback(agent_op_t *base, err_t *err) {
  agent_list_op_t *op = (agent_list_op_t *)base;
  return listing_engine_op(base->op.js, base->op.sb, op->path, err);
}

static napi_value list_result(op_t *o) { return convert_list_entries(o->js->env, &((agent_list_op_t *)o)->entries); }

static void list_destroy(op_t *o) {
  agent_list_op_t *op = (agent_list_op_t *)o;
  sbx_timer_cancel(op->deadline);
  agent_op_destroy(&op->base);
  free(op->path);
  buf_free(&op->partial);
  list_entries_free(&op->entries);
}

static const agent_op_kind_t list_kind = {
    .vt = {.name = "agentListFiles", .start = agent_op_start, .stop = agent_op_stop, .result = list_result,
           .destroy = list_destroy},
    .run = list_run,
    .fallback = list_fallback,
};

napi_value agent_list_prepare(napi_env env, sandbox_t *sb, napi_value *argv) {
  jsenv_t *js = jsenv_get(env);
  napi_value options = args_options(env, argv);
  if (options == NULL) return NULL;
  err_t err = ERR_INIT;
  char *path = listing_parse(env, options, &err);
  if (path == NULL) return convert_throw_err(js, &err);
  agent_list_op_t *op = agent_op_prepare(env, &list_kind, sizeof(*op), sb);
  if (op == NULL) {
    free(path);
    return NULL;
  }
  /* "dir/" names the same directory as "dir": the names are joined to it. */
  size_t n = strlen(path);
  while (n > 1 && path[n - 1] == '/') path[--n] = 0;
  op->path = path;
  buf_init(&op->partial, AW_ENTRY_MAX * 2);
  return op_prepared(&op->base.op, NULL);
}
