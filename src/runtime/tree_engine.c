/*
 * tree_engine.c - the engine's backends for importTree and exportTree (tree_front.h's seam).
 *
 * Import. The entries become one tar stream, built as they are pushed (codec/tarstream.h)
 * and never held whole. It is staged in a hidden directory of the workspace,
 * .anvia-import.<random>, and published into the destination only once every byte is in
 * (a rename when the destination does not exist yet, else a merge that first checks the
 * whole tree for conflicts, then renames entry by entry, never writing through a link).
 * A failure, or an abort, leaves the destination as it was: the staging directory is
 * removed.
 *  - Root sandbox user: PUT /containers/{id}/archive of the staging directory, streamed
 *    (engine/stream.h: chunked, paused while the producer is behind), after HEAD probes
 *    have refused a link or a file on the destination's way (runtime/ancestry.c); then
 *    one exec of the import script (tree_script.h, shared with the agent's backend)
 *    publishes (or removes the staging directory when the upload failed). The engine runs
 *    as root and follows links, which is no more than a root user
 *    can do in the sandbox anyway; the publish step re-checks the destination without a
 *    race (cd -P, then pwd -P compared with what was expected, as files_user.c does).
 *  - Any other user: the archive endpoints would write as root through links the user
 *    can plant (even in the staging directory, which sits in the user's workspace and can
 *    be renamed away mid-upload). So the import is one exec, as that user, of the import
 *    script in "extract" mode: the destination's way is checked, `tar -x` reads the
 *    stream from stdin into the staging directory, and the same publish step follows. The
 *    stream ends with a marker member: a stream that stops early (an abort, a failure on
 *    this side) never has it, and the script then removes what it extracted. Exec stdin
 *    has no drain signal of its own, so the script reports how much tar has read
 *    (/proc/<pid>/io rchar, every 20 ms, on stdout) and at most IMPORT_WINDOW bytes are
 *    written ahead of that: memory stays bounded however slow the sandbox's disk is.
 *
 * Export. The selection comes as a tar stream read as it arrives (codec/tarstream.h), each
 * member handed to the front, which judges it.
 *  - Root user: GET /containers/{id}/archive of the selection (one per file for a "files"
 *    selection), after HEAD probes of its ancestors; the reply's path stat header must say
 *    directory (or regular file). Back-pressure pauses the libcurl transfer, so the engine's
 *    writes to the connection block.
 *  - Any other user: one exec, as that user, of the export script (links on the way
 *    refused, then `tar -c`), its output read as the stream and paused the same way (the
 *    exec's connection stops being read).
 * (The in-sandbox agent's backends, tree_agent.c, run the same scripts for every user.)
 *
 * Owns: each backend state's archive buffer, requests, exec tasks, timers and tar reader.
 */
#include "runtime/tree_engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "codec/paths.h"
#include "codec/pathstat.h"
#include "codec/tarstream.h"
#include "codec/userspec.h"
#include "engine/exec_task.h"
#include "engine/stream.h"
#include "engine/timer.h"
#include "runtime/ancestry.h"
#include "runtime/tree_script.h"
#include "sandbox/owner.h"

/* Bytes written to the command's stdin ahead of what its tar has read (non-root import). */
#define IMPORT_WINDOW (8u * 1024u * 1024u)
/* ================= import ================= */

enum { IP_PREREQ = 1, IP_SEND, IP_PUBLISH, IP_DISCARD, IP_DONE };

typedef struct eng_import {
  tree_import_t *t;
  int as_user;
  char stage[64];
  char marker[64];
  buf_t out; /* archive bytes not sent yet, from `off` */
  size_t off;
  uint64_t file_left; /* bytes of the current member still to come from the caller */
  int ended;          /* the end of the archive is in `out` */
  int stopping;
  int phase;
  err_t err; /* the transport's failure, reported at the end */
  owner_task_t *owner;
  ancestry_t *anc;
  int have_owner, have_anc;
  ancestry_result_t anc_result;
  stream_req_t *put;
  exec_task_t *task;
  sbx_timer_t *timer;
  /* root: the publish exec, started with the upload, told the verdict on its stdin */
  exec_task_t *pub;
  int pub_ready;
  const char *verdict; /* "publish" or "discard", once the upload is over */
  int verdict_sent;
  /* as the user: bytes written to the command, bytes its tar has read */
  uint64_t sent, acked;
  int opened, eof_sent;
  uint64_t ack_value;
  int ack_digits;
} eng_import_t;

static size_t pending(const eng_import_t *b) { return b->out.len - b->off; }

static void compact(eng_import_t *b) {
  if (b->off > 0 && (b->off >= b->out.len / 2 || b->off >= 1024 * 1024)) {
    buf_consume(&b->out, b->off);
    b->off = 0;
  }
}

static size_t import_buffered(const tree_import_t *t) {
  const eng_import_t *b = t->be;
  if (b == NULL) return 0;
  /* As the user, what was written ahead of tar is bounded by IMPORT_WINDOW on its own. */
  size_t n = pending(b);
  /* Until the transport is ready, nothing more is taken. */
  if (b->phase == IP_PREREQ || (b->as_user && !b->opened)) n += TREE_IMPORT_HIGH;
  return n;
}

static void import_report(void *ud);

/* Reports once, from the loop: a timer so that a report found inside a call (stop) comes
 * after it. */
static void report_later(eng_import_t *b) {
  b->phase = IP_DONE;
  sbx_timer_cancel(b->timer);
  b->timer = sbx_timer_start(b->t->op.js->io, 0, import_report, b);
  if (b->timer == NULL) import_report(b);
}

static void import_report(void *ud) {
  eng_import_t *b = ud;
  b->timer = NULL;
  err_t err = ERR_INIT;
  err_move(&err, &b->err);
  tree_import_done(b->t, err_is_set(&err) ? &err : NULL); /* may free b */
  err_clear(&err);
}

static void fail_with(eng_import_t *b, err_t *err) {
  if (!err_is_set(&b->err)) err_move(&b->err, err);
  else err_clear(err);
}

/* ---- discard (root path: the upload failed or was stopped) ---- */

static void on_discarded(void *ud, exec_result_t *result, err_t *err) {
  eng_import_t *b = ud;
  b->task = NULL;
  exec_result_free(result);
  if (err) err_clear(err); /* best effort: the failure that led here is what is reported */
  report_later(b);
}

static void discard(eng_import_t *b) {
  sandbox_t *sb = b->t->op.sb;
  b->phase = IP_DISCARD;
  const char *argv[10];
  size_t argc = tree_import_argv(argv, b->t, b->stage, "discard", b->marker, NULL);
  exec_callbacks_t cbs = {.on_done = on_discarded};
  err_t err = ERR_INIT;
  b->task = tree_run_script(sb, argv, argc, 0, &cbs, b, &err);
  err_clear(&err);
  if (b->task == NULL) report_later(b);
}

/* ---- publish (root path) ---- */

static void on_published(void *ud, exec_result_t *result, err_t *err) {
  eng_import_t *b = ud;
  b->task = NULL;
  err_t e = ERR_INIT;
  if (err != NULL) {
    err_move(&e, err);
    exec_result_free(result);
  } else if (result->exit_code != 0) {
    tree_import_verdict(b->t, b->as_user, result, &e); /* takes result */
  } else {
    exec_result_free(result);
  }
  if (err_is_set(&e)) fail_with(b, &e);
  report_later(b);
}

static void publish(eng_import_t *b) {
  sandbox_t *sb = b->t->op.sb;
  b->phase = IP_PUBLISH;
  const char *argv[10];
  size_t argc = tree_import_argv(argv, b->t, b->stage, "publish", b->marker, NULL);
  exec_callbacks_t cbs = {.on_done = on_published};
  err_t err = ERR_INIT;
  b->task = tree_run_script(sb, argv, argc, 0, &cbs, b, &err);
  if (b->task == NULL) {
    fail_with(b, &err);
    discard(b);
  }
}

/* ---- the publish exec, asked for with the upload (root path) ----
 * It is created when the upload starts and told "publish" or "discard" on its stdin once
 * the upload is over. The engine holds the container's lock during an archive upload, so
 * its creation waits for the upload's end anyway (measured: exec create answered with the
 * PUT, to the millisecond); what this saves is the round trip between the upload's end
 * and a request made only then. If it cannot start or dies before it is told, a publish
 * (or discard) exec of its own is run instead. */

static void send_verdict(eng_import_t *b);

static void on_verdict_retry(void *ud) {
  eng_import_t *b = ud;
  b->timer = NULL;
  send_verdict(b);
}

/* The exec takes stdin once it exists (its stream need not be open yet: the bytes wait
 * for it); while it is still being created, a few milliseconds later. */
static void send_verdict(eng_import_t *b) {
  if (b->pub == NULL || b->verdict == NULL || b->verdict_sent) return;
  char line[16];
  snprintf(line, sizeof(line), "%s\n", b->verdict);
  if (exec_task_write(b->pub, (const uint8_t *)line, strlen(line)) != 0) {
    if (b->timer == NULL) b->timer = sbx_timer_start(b->t->op.js->io, 2, on_verdict_retry, b);
    return;
  }
  b->verdict_sent = 1;
  exec_task_end_stdin(b->pub);
}

static void on_pub_output(void *ud, int stream, const uint8_t *data, size_t len) {
  eng_import_t *b = ud;
  if (stream != 1 || b->pub_ready) return;
  if (memmem(data, len, "ready", 5) != NULL) {
    b->pub_ready = 1;
    send_verdict(b);
  }
}

static void on_pub_done(void *ud, exec_result_t *result, err_t *err) {
  eng_import_t *b = ud;
  b->pub = NULL;
  sbx_timer_cancel(b->timer);
  b->timer = NULL;
  if (!b->verdict_sent) {
    /* It ended before it was told anything: the upload's end runs an exec of its own. */
    exec_result_free(result);
    if (err) err_clear(err);
    if (b->verdict != NULL) {
      if (strcmp(b->verdict, "publish") == 0) publish(b);
      else discard(b);
    }
    return;
  }
  if (strcmp(b->verdict, "publish") == 0) {
    on_published(b, result, err);
    return;
  }
  exec_result_free(result);
  if (err) err_clear(err);
  report_later(b);
}

static void start_pub(eng_import_t *b) {
  sandbox_t *sb = b->t->op.sb;
  const char *argv[10];
  size_t argc = tree_import_argv(argv, b->t, b->stage, "await", b->marker, NULL);
  exec_callbacks_t cbs = {.on_output = on_pub_output, .on_done = on_pub_done};
  err_t err = ERR_INIT;
  b->pub = tree_run_script(sb, argv, argc, 1, &cbs, b, &err);
  err_clear(&err); /* without it, the upload's end runs its own exec */
}

/* The upload is over: publish or discard, through the waiting exec when it is there. */
static void conclude(eng_import_t *b, int ok) {
  b->verdict = ok ? "publish" : "discard";
  b->phase = ok ? IP_PUBLISH : IP_DISCARD;
  if (b->pub != NULL) {
    send_verdict(b);
    return;
  }
  if (ok) publish(b);
  else discard(b);
}

/* ---- the upload (root path) ---- */

/* Inside libcurl. */
static size_t on_body(void *ud, uint8_t *buf, size_t max) {
  eng_import_t *b = ud;
  size_t avail = pending(b);
  if (avail == 0) return (b->ended || b->stopping) ? 0 : STREAM_BODY_PAUSE;
  size_t n = avail < max ? avail : max;
  memcpy(buf, b->out.data + b->off, n);
  b->off += n;
  compact(b);
  if (!b->stopping && import_buffered(b->t) < TREE_IMPORT_LOW) tree_import_drained(b->t);
  return n;
}

static void on_uploaded(void *ud, stream_req_t *r) {
  eng_import_t *b = ud;
  b->put = NULL;
  sbx_timer_cancel(b->timer);
  b->timer = NULL;
  int ok = stream_req_ok(r) && !b->stopping;
  if (!stream_req_ok(r)) {
    err_t err = ERR_INIT;
    stream_req_error(r, &err);
    fail_with(b, &err);
  }
  stream_req_free(r);
  conclude(b, ok);
}

static const stream_req_cbs_t put_cbs = {.on_body = on_body, .on_done = on_uploaded};

static int start_upload(eng_import_t *b, err_t *err) {
  sandbox_t *sb = b->t->op.sb;
  tar_out_entry_t top = {.path = b->stage, .is_dir = 1, .mode = 0700, .uid = sb->uid, .gid = sb->gid, .mtime = time(NULL)};
  /* The staging directory's header goes before everything already queued. */
  buf_t head;
  buf_init(&head, 0);
  if (tar_write_header(&head, &top) != 0 || buf_append(&head, b->out.data + b->off, pending(b)) != 0) {
    buf_free(&head);
    return err_oom(err);
  }
  buf_free(&b->out);
  b->out = head;
  b->off = 0;
  char *name = url_escape(sb->container_name);
  char *ws = url_escape(sb->workdir);
  if (name && ws)
    b->put = stream_req_new(sb->eng, "PUT", "/containers/%s/archive?path=%s&noOverwriteDirNonDir=true", name, ws);
  free(name);
  free(ws);
  if (b->put == NULL || stream_req_set_body(b->put, "application/x-tar") != 0) return err_oom(err);
  if (stream_req_start(b->put, &put_cbs, b, err) != 0) {
    stream_req_free(b->put);
    b->put = NULL;
    return -1;
  }
  b->phase = IP_SEND;
  start_pub(b);
  tree_import_drained(b->t);
  return 0;
}

static void prereqs_done(eng_import_t *b) {
  if (!b->have_owner || !b->have_anc) return;
  err_t err = ERR_INIT;
  const ancestry_result_t *r = &b->anc_result;
  if (r->blocked) {
    char *probe = NULL;
    char **anc = NULL;
    size_t n = 0;
    if (asprintf(&probe, "%s/x", b->t->req.dest) < 0) probe = NULL;
    if (probe) path_ancestors(probe, &anc, &n);
    const char *what = anc && r->blocked_index < n ? anc[r->blocked_index] : b->t->req.dest;
    if (r->blocked_kind == PS_SYMLINK)
      err_sandbox(&err, CODE_INVALID_PATH, "Sandbox path passes through a symbolic link: %s", what);
    else
      err_sandbox(&err, CODE_DOCKER_COMMAND_FAILED, "Unable to create sandbox directory: %s", what);
    err_set_details(&err, json_pack("{s:s, s:s}", "path", b->t->req.dest, "blocking", what));
    path_ancestors_free(anc, n);
    free(probe);
    fail_with(b, &err);
    report_later(b);
    return;
  }
  if (start_upload(b, &err) != 0) {
    fail_with(b, &err);
    report_later(b);
  }
}

static void on_owner(void *ud, err_t *err) {
  eng_import_t *b = ud;
  b->owner = NULL;
  if (err != NULL) {
    ancestry_cancel(b->anc);
    b->anc = NULL;
    err_t e = ERR_INIT;
    err_move(&e, err);
    fail_with(b, &e);
    report_later(b);
    return;
  }
  b->have_owner = 1;
  prereqs_done(b);
}

static void on_ancestry(void *ud, const ancestry_result_t *r, err_t *err) {
  eng_import_t *b = ud;
  b->anc = NULL;
  if (err != NULL) {
    owner_cancel(b->owner);
    b->owner = NULL;
    err_t e = ERR_INIT;
    err_move(&e, err);
    fail_with(b, &e);
    report_later(b);
    return;
  }
  b->anc_result = *r;
  b->have_anc = 1;
  prereqs_done(b);
}

/* ---- as the user: one exec, the archive on its stdin ---- */

static void pump(eng_import_t *b) {
  if (!b->opened || b->task == NULL || b->eof_sent) return;
  while (pending(b) > 0 && b->sent - b->acked < IMPORT_WINDOW) {
    size_t n = pending(b);
    size_t room = (size_t)(IMPORT_WINDOW - (b->sent - b->acked));
    if (n > room) n = room;
    if (n > 256 * 1024) n = 256 * 1024;
    if (exec_task_write(b->task, b->out.data + b->off, n) != 0) return; /* the command is ending: its result says why */
    b->off += n;
    b->sent += n;
    compact(b);
  }
  if (pending(b) == 0 && (b->ended || b->stopping)) {
    b->eof_sent = 1;
    exec_task_end_stdin(b->task);
  }
  if (!b->stopping && import_buffered(b->t) < TREE_IMPORT_LOW) tree_import_drained(b->t);
}

static void on_import_output(void *ud, int stream, const uint8_t *data, size_t len) {
  eng_import_t *b = ud;
  if (stream != 1) return;
  for (size_t i = 0; i < len; i++) {
    uint8_t c = data[i];
    if (c >= '0' && c <= '9') {
      if (b->ack_digits < 19) b->ack_value = b->ack_value * 10 + (uint64_t)(c - '0');
      b->ack_digits++;
    } else if (c == '\n') {
      if (b->ack_digits > 0) {
        uint64_t v = b->ack_value > b->sent ? b->sent : b->ack_value;
        if (v > b->acked) b->acked = v;
        b->opened = 1;
      }
      b->ack_value = 0;
      b->ack_digits = 0;
    }
  }
  pump(b);
}

static void on_extracted(void *ud, exec_result_t *result, err_t *err) {
  eng_import_t *b = ud;
  b->task = NULL;
  sbx_timer_cancel(b->timer);
  b->timer = NULL;
  err_t e = ERR_INIT;
  if (err != NULL) {
    err_move(&e, err);
    exec_result_free(result);
  } else if (result->exit_code != 0) {
    tree_import_verdict(b->t, b->as_user, result, &e);
  } else {
    exec_result_free(result);
  }
  if (err_is_set(&e)) fail_with(b, &e);
  b->phase = IP_DONE;
  report_later(b);
}

static int start_as_user(eng_import_t *b, err_t *err) {
  sandbox_t *sb = b->t->op.sb;
  const char *argv[10];
  size_t argc = tree_import_argv(argv, b->t, b->stage, "extract", b->marker, NULL);
  exec_callbacks_t cbs = {.on_output = on_import_output, .on_done = on_extracted};
  b->task = tree_run_script(sb, argv, argc, 1, &cbs, b, err);
  if (b->task == NULL) return -1;
  b->phase = IP_SEND;
  return 0;
}

/* A stopped exec that does not wind down: cut it, then remove what it staged. */
static void on_user_grace(void *ud) {
  eng_import_t *b = ud;
  b->timer = NULL;
  exec_task_cancel(b->task);
  b->task = NULL;
  discard(b);
}

/* A stopped upload that does not wind down: drop the connection, then discard. */
static void on_put_grace(void *ud) {
  eng_import_t *b = ud;
  b->timer = NULL;
  stream_req_free(b->put);
  b->put = NULL;
  discard(b);
}

/* ---- the backend ---- */

static void kick(eng_import_t *b) {
  if (b->as_user) pump(b);
  else stream_req_resume(b->put);
}

static int import_start(tree_import_t *t, err_t *err) {
  eng_import_t *b = calloc(1, sizeof(*b));
  if (b == NULL) return err_oom(err);
  t->be = b;
  b->t = t;
  buf_init(&b->out, 0);
  err_init(&b->err);
  b->phase = IP_PREREQ;
  if (tree_random_name(b->stage, sizeof(b->stage), "import") != 0 || tree_random_name(b->marker, sizeof(b->marker), "commit") != 0)
    return err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, "No randomness for the staging directory's name.");
  sandbox_t *sb = t->op.sb;
  b->as_user = !user_is_root(sb->user);
  if (b->as_user) return start_as_user(b, err);
  int rc = owner_ensure(sb, on_owner, b, &b->owner, err);
  if (rc < 0) return -1;
  b->have_owner = rc == 1;
  b->have_anc = 1;
  if (strcmp(t->req.dest, ".") != 0) {
    /* The destination itself is probed too: it is the parent of "<dest>/x". */
    char *probe = NULL;
    if (asprintf(&probe, "%s/x", t->req.dest) < 0) {
      owner_cancel(b->owner);
      b->owner = NULL;
      return err_oom(err);
    }
    rc = ancestry_start(sb, probe, on_ancestry, b, &b->anc, &b->anc_result, err);
    free(probe);
    if (rc < 0) {
      owner_cancel(b->owner);
      b->owner = NULL;
      return -1;
    }
    b->have_anc = rc == 1;
  }
  if (b->have_owner && b->have_anc) {
    if (start_upload(b, err) != 0) return -1;
  }
  return 0;
}

static int import_entry(tree_import_t *t, const tree_entry_t *e, err_t *err) {
  eng_import_t *b = t->be;
  sandbox_t *sb = t->op.sb;
  char *path = NULL;
  if (b->as_user) path = strdup(e->path);
  else if (asprintf(&path, "%s/%s", b->stage, e->path) < 0) path = NULL;
  if (path == NULL) return err_oom(err);
  tar_out_entry_t h = {.path = path,
                       .is_dir = e->kind == TREE_DIRECTORY,
                       .size = e->size,
                       .mode = e->mode,
                       .uid = b->as_user ? 0 : sb->uid,
                       .gid = b->as_user ? 0 : sb->gid,
                       .mtime = time(NULL)};
  int rc = tar_write_header(&b->out, &h);
  free(path);
  if (rc != 0) return err_oom(err);
  b->file_left = e->kind == TREE_FILE ? e->size : 0;
  if (e->kind == TREE_FILE && e->size == 0 && tar_write_padding(&b->out, 0) != 0) return err_oom(err);
  kick(b);
  return 0;
}

static int import_data(tree_import_t *t, const uint8_t *data, size_t len, err_t *err) {
  eng_import_t *b = t->be;
  if (buf_append(&b->out, data, len) != 0) return err_oom(err);
  b->file_left -= len;
  /* The member is complete: its padding (the front counts t->file_got after this call). */
  if (b->file_left == 0 && tar_write_padding(&b->out, t->file_got + len) != 0) return err_oom(err);
  kick(b);
  return 0;
}

static int import_commit(tree_import_t *t, err_t *err) {
  eng_import_t *b = t->be;
  if (b->as_user) {
    tar_out_entry_t m = {.path = b->marker, .is_dir = 0, .size = 0, .mode = 0600, .mtime = time(NULL)};
    if (tar_write_header(&b->out, &m) != 0) return err_oom(err);
  }
  if (tar_write_end(&b->out) != 0) return err_oom(err);
  b->ended = 1;
  kick(b);
  return 0;
}

static void import_stop(tree_import_t *t, int now) {
  eng_import_t *b = t->be;
  if (b == NULL) return;
  if (now) {
    owner_cancel(b->owner);
    b->owner = NULL;
    ancestry_cancel(b->anc);
    b->anc = NULL;
    stream_req_free(b->put);
    b->put = NULL;
    exec_task_cancel(b->task);
    b->task = NULL;
    exec_task_cancel(b->pub);
    b->pub = NULL;
    sbx_timer_cancel(b->timer);
    b->timer = NULL;
    b->phase = IP_DONE;
    return;
  }
  if (b->stopping) return;
  b->stopping = 1;
  /* What was not sent yet is dropped. */
  b->off = b->out.len;
  compact(b);
  switch (b->phase) {
    case IP_PREREQ:
      if (b->as_user) break;
      owner_cancel(b->owner);
      b->owner = NULL;
      ancestry_cancel(b->anc);
      b->anc = NULL;
      report_later(b); /* nothing was staged */
      return;
    case IP_SEND:
      if (b->as_user) {
        /* The stream ends without its marker: the script removes what it extracted. */
        if (!b->opened) {
          exec_task_cancel(b->task);
          b->task = NULL;
          discard(b);
          return;
        }
        pump(b);
        b->timer = sbx_timer_start(t->op.js->io, TREE_STOP_GRACE_MS, on_user_grace, b);
        return;
      } else {
        /* Whatever was sent, one block that cannot be a header makes the engine's
         * extraction fail and answer; the staging directory is removed after. */
        static const uint8_t garbage[512] = {[0 ... 511] = 0xff};
        if (buf_append(&b->out, garbage, sizeof(garbage)) != 0) {
          on_put_grace(b);
          return;
        }
        stream_req_resume(b->put);
        b->timer = sbx_timer_start(t->op.js->io, TREE_STOP_GRACE_MS, on_put_grace, b);
        return;
      }
    case IP_PUBLISH:
      /* Not told yet: it discards instead. Told: publishing runs to its end (a publish
       * cut halfway would leave half of it). */
      if (b->pub != NULL && !b->verdict_sent) {
        b->verdict = "discard";
        b->phase = IP_DISCARD;
      }
      return;
    default:
      /* A discard or a report is already on its way. */
      return;
  }
}

static void import_free(tree_import_t *t) {
  eng_import_t *b = t->be;
  if (b == NULL) return;
  import_stop(t, 1);
  buf_free(&b->out);
  err_clear(&b->err);
  free(b);
  t->be = NULL;
}

const tree_import_backend_t tree_engine_import_backend = {
    .name = "engine",
    .start = import_start,
    .entry = import_entry,
    .data = import_data,
    .commit = import_commit,
    .stop = import_stop,
    .buffered = import_buffered,
    .free = import_free,
};

/* ================= export ================= */

typedef struct eng_export {
  tree_export_t *x;
  int as_user;
  tree_src_t src; /* the archive being read */
  size_t index; /* files: the next path */
  int want_dir;
  int stat_checked;
  int paused;
  int failed;
  err_t early; /* found inside libcurl or an exec callback, reported from the loop */
  ancestry_t *anc;
  stream_req_t *get;
  exec_task_t *task;
  sbx_timer_t *timer;
} eng_export_t;

static int set_source(eng_export_t *b, const char *root, const char *prefix, const char *shown) {
  b->stat_checked = 0;
  return tree_src_set(&b->src, b->x, root, prefix, shown);
}

static void export_finish(eng_export_t *b, err_t *err) {
  tree_export_done(b->x, err); /* may free b */
}

static void next_source(eng_export_t *b);

/* ---- root: GET /containers/{id}/archive ---- */

static int check_stat(eng_export_t *b, stream_req_t *r, err_t *err) {
  b->stat_checked = 1;
  path_stat_t st;
  const char *h = stream_req_path_stat(r);
  if (h == NULL || path_stat_decode(h, &st) != 0)
    return err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, "Docker engine returned no usable path metadata for %s.", b->src.shown);
  path_kind_t kind = st.kind;
  path_stat_free(&st);
  if (kind == PS_SYMLINK) return err_sandbox(err, CODE_INVALID_PATH, "Sandbox path is a symbolic link: %s", b->src.shown);
  if (b->want_dir && kind != PS_DIRECTORY) return err_sandbox(err, CODE_INVALID_PATH, "Sandbox path is not a directory: %s", b->src.shown);
  if (!b->want_dir && kind != PS_FILE) return err_sandbox(err, CODE_INVALID_PATH, "Sandbox path is not a regular file: %s", b->src.shown);
  return 0;
}

/* Inside libcurl: no libcurl call, no JavaScript (the front queues). */
static int on_download(void *ud, const uint8_t *data, size_t len) {
  eng_export_t *b = ud;
  if (b->failed) return -1;
  tree_export_heard(b->x);
  if (!b->stat_checked && check_stat(b, b->get, &b->early) != 0) {
    b->failed = 1;
    return -1;
  }
  if (b->paused || tree_export_should_pause(b->x)) {
    b->paused = 1;
    return 1;
  }
  if (tar_reader_feed(b->src.reader, data, len, &b->early) < 0) {
    b->failed = 1;
    return -1;
  }
  return 0;
}

static void on_downloaded(void *ud, stream_req_t *r) {
  eng_export_t *b = ud;
  b->get = NULL;
  err_t err = ERR_INIT;
  if (b->failed || err_is_set(&b->early)) {
    err_move(&err, &b->early);
    if (!err_is_set(&err)) err_sandbox(&err, CODE_DOCKER_COMMAND_FAILED, "The export stopped.");
  } else if (stream_req_not_found(r)) {
    err_sandbox(&err, CODE_DOCKER_COMMAND_FAILED, "Sandbox path does not exist: %s", b->src.shown);
  } else if (!stream_req_ok(r)) {
    stream_req_error(r, &err);
  } else if (!b->stat_checked && check_stat(b, r, &err) != 0) {
    /* err set */
  } else {
    tar_reader_finish(b->src.reader, &err);
  }
  stream_req_free(r);
  if (err_is_set(&err)) {
    export_finish(b, &err);
    err_clear(&err);
    return;
  }
  b->index++;
  next_source(b);
}

static const stream_req_cbs_t get_cbs = {.on_data = on_download, .on_done = on_downloaded};

static void start_get(eng_export_t *b, const char *rel) {
  sandbox_t *sb = b->x->op.sb;
  err_t err = ERR_INIT;
  char *abs = strcmp(rel, ".") == 0 ? strdup(sb->workdir) : paths_container(sb->workdir, rel, &err);
  char *eabs = abs ? url_escape(abs) : NULL;
  char *name = url_escape(sb->container_name);
  free(abs);
  if (eabs && name) b->get = stream_req_new(sb->eng, "GET", "/containers/%s/archive?path=%s", name, eabs);
  free(eabs);
  free(name);
  if (b->get == NULL) {
    if (!err_is_set(&err)) err_oom(&err);
  } else if (stream_req_start(b->get, &get_cbs, b, &err) != 0) {
    stream_req_free(b->get);
    b->get = NULL;
  }
  if (b->get == NULL) {
    export_finish(b, &err);
    err_clear(&err);
  }
}

static const char *current_rel(eng_export_t *b) {
  const tree_export_req_t *q = &b->x->req;
  return q->kind == TREE_SEL_WORKSPACE ? "." : q->kind == TREE_SEL_SUBTREE ? q->path : q->paths[b->index];
}

static void on_export_ancestry(void *ud, const ancestry_result_t *r, err_t *err) {
  eng_export_t *b = ud;
  b->anc = NULL;
  err_t e = ERR_INIT;
  if (err != NULL) {
    err_move(&e, err);
  } else if (r->blocked) {
    if (r->blocked_kind == PS_SYMLINK)
      err_sandbox(&e, CODE_INVALID_PATH, "Sandbox path passes through a symbolic link: %s", b->src.shown);
    else
      err_sandbox(&e, CODE_DOCKER_COMMAND_FAILED, "Sandbox path does not exist: %s", b->src.shown);
  }
  if (err_is_set(&e)) {
    export_finish(b, &e);
    err_clear(&e);
    return;
  }
  start_get(b, current_rel(b));
}

static void next_source(eng_export_t *b) {
  tree_export_t *x = b->x;
  sandbox_t *sb = x->op.sb;
  if ((x->req.kind != TREE_SEL_FILES && b->index > 0) || (x->req.kind == TREE_SEL_FILES && b->index >= x->req.npaths)) {
    export_finish(b, NULL);
    return;
  }
  err_t err = ERR_INIT;
  const char *rel = current_rel(b);
  int rc;
  if (x->req.kind == TREE_SEL_WORKSPACE) {
    b->want_dir = 1;
    rc = set_source(b, tree_base_name(sb->workdir), "", ".");
  } else {
    b->want_dir = x->req.kind == TREE_SEL_SUBTREE;
    rc = set_source(b, tree_base_name(rel), rel, rel);
  }
  if (rc != 0) {
    err_oom(&err);
    export_finish(b, &err);
    err_clear(&err);
    return;
  }
  if (strcmp(rel, ".") != 0) {
    ancestry_result_t r;
    rc = ancestry_start(sb, rel, on_export_ancestry, b, &b->anc, &r, &err);
    if (rc < 0) {
      export_finish(b, &err);
      err_clear(&err);
      return;
    }
    if (rc == 0) return;
  }
  start_get(b, rel);
}

/* ---- any other user: tar -c in an exec ---- */

static void on_export_failed(void *ud) {
  eng_export_t *b = ud;
  b->timer = NULL;
  exec_task_cancel(b->task);
  b->task = NULL;
  err_t err = ERR_INIT;
  err_move(&err, &b->early);
  export_finish(b, &err);
  err_clear(&err);
}

static void on_export_output(void *ud, int stream, const uint8_t *data, size_t len) {
  eng_export_t *b = ud;
  if (stream != 1 || b->failed) return;
  tree_export_heard(b->x);
  if (tar_reader_feed(b->src.reader, data, len, &b->early) < 0) {
    b->failed = 1;
    exec_task_pause(b->task);
    b->timer = sbx_timer_start(b->x->op.js->io, 0, on_export_failed, b);
    return;
  }
  if (tree_export_should_pause(b->x)) {
    b->paused = 1;
    exec_task_pause(b->task);
  }
}

static void on_export_done(void *ud, exec_result_t *result, err_t *err) {
  eng_export_t *b = ud;
  b->task = NULL;
  if (b->failed) {
    /* on_export_failed reports */
    exec_result_free(result);
    if (err) err_clear(err);
    return;
  }
  err_t e = ERR_INIT;
  if (err != NULL) {
    err_move(&e, err);
  } else if (result->exit_code != 0) {
    tree_export_verdict(&b->src, result, &e); /* takes result */
    result = NULL;
  } else {
    tar_reader_finish(b->src.reader, &e);
  }
  exec_result_free(result);
  export_finish(b, err_is_set(&e) ? &e : NULL);
  err_clear(&e);
}

static int start_export_as_user(eng_export_t *b, err_t *err) {
  size_t n = 0;
  const char **argv = tree_export_argv(&b->src, b->x, &n);
  if (argv == NULL) return err_oom(err);
  exec_callbacks_t cbs = {.on_output = on_export_output, .on_done = on_export_done};
  b->task = tree_run_script(b->x->op.sb, argv, n, 0, &cbs, b, err);
  free(argv);
  return b->task == NULL ? -1 : 0;
}

/* ---- the backend ---- */

static int export_start(tree_export_t *x, err_t *err) {
  eng_export_t *b = calloc(1, sizeof(*b));
  if (b == NULL) return err_oom(err);
  x->be = b;
  b->x = x;
  err_init(&b->early);
  b->as_user = !user_is_root(x->op.sb->user);
  if (b->as_user) return start_export_as_user(b, err);
  next_source(b);
  return 0;
}

static void export_pause(tree_export_t *x) {
  eng_export_t *b = x->be;
  if (b == NULL) return;
  b->paused = 1;
  if (b->as_user && b->task) exec_task_pause(b->task);
}

static void export_resume(tree_export_t *x) {
  eng_export_t *b = x->be;
  if (b == NULL || b->failed) return;
  b->paused = 0;
  if (b->as_user) {
    if (b->task) exec_task_resume(b->task);
  } else {
    stream_req_resume(b->get);
  }
}

static void export_stop(tree_export_t *x) {
  eng_export_t *b = x->be;
  if (b == NULL) return;
  ancestry_cancel(b->anc);
  b->anc = NULL;
  stream_req_free(b->get);
  b->get = NULL;
  exec_task_cancel(b->task);
  b->task = NULL;
  sbx_timer_cancel(b->timer);
  b->timer = NULL;
}

static void export_free(tree_export_t *x) {
  eng_export_t *b = x->be;
  if (b == NULL) return;
  export_stop(x);
  tree_src_free(&b->src);
  err_clear(&b->early);
  free(b);
  x->be = NULL;
}

const tree_export_backend_t tree_engine_export_backend = {
    .name = "engine",
    .start = export_start,
    .pause = export_pause,
    .resume = export_resume,
    .stop = export_stop,
    .free = export_free,
};
