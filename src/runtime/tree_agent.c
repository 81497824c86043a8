/*
 * tree_agent.c - the in-sandbox agent's backends for importTree and exportTree (tree_front.h's
 * seam). A transfer is ONE agent EXEC, for every sandbox user (root included), of the
 * scripts the engine's backends run (tree_script.h), its tar stream carried in the agent's
 * DATA frames (engine/agent_conn.h).
 *
 * Import. The entries become one tar stream (codec/tarstream.h), handed to the EXEC's
 * stdin as it is built: the import script in "stream" mode checks the destination's way,
 * extracts into a hidden staging directory with `tar -x` and publishes it without a race
 * once the stream's last member, a random marker, has come (tree_engine.c describes the
 * publish step). The agent's credit on stdin and the connection's write queue are the
 * back-pressure: bytes leave only as the agent has passed earlier ones to tar's pipe and
 * while fewer than AGENT_TX_HIGH wait to be written to it (an agent that grants credit and
 * never reads holds nothing more here), and what waits (agent_req_unsent) is what the
 * front's flow control counts, so memory stays bounded however slow the sandbox's disk is
 * or whatever the agent grants; the "drain" comes from the agent's WINDOW frames and from
 * the write queue emptying.
 *  - A stream that stops early never has its marker: the script removes what it staged.
 *  - Stopped (an abort, a failure found by the front) before the end of the archive was
 *    handed on: the request is cancelled (the agent ends the script's whole tree), then one
 *    engine exec of the script in "discard" mode kills that process group too (should the
 *    agent not have) and removes the staging directory. After the end: the publish runs to
 *    its end, unless it takes longer than TREE_STOP_GRACE_MS, as on the engine path.
 *  - The agent dies mid-transfer (killed, or exiting: the script is a detached command,
 *    which an exiting agent does not end, so no publish is ever cut by it): the
 *    connection's typed error, once one engine exec has run the script in "discard" mode
 *    (before the end) or in "settle" mode (after it: the script, which may be publishing,
 *    is waited for, and whatever it left staged is removed). Nothing is left
 *    half-published; the next call starts a new agent. Should this process die, the
 *    agent exits, the script's stdin ends, and the script removes what it staged.
 *
 * Export. One EXEC of the export script (links on the way refused, then `tar -c`); its
 * stdout is the archive, read as it arrives (tree_script.h's source: each member judged by
 * the front). The credit granted on stdout is the back-pressure: while the front says
 * pause, the bytes that arrive are not credited again, so the agent stops reading tar's
 * pipe and tar blocks.
 *
 * Everything the agent sends is checked: agent_conn.c its frames and its credit, the tar
 * reader and the front the archive, and here the RESULT's output counts against what came.
 *
 * Where the agent cannot run, transport "auto" hands the transfer to the engine's backends
 * (before any entry was taken: the first "drain" comes from the backend that runs it), and
 * transport "agent" fails with docker_unavailable, as every agent operation does.
 *
 * Owns: each backend state's archive bytes not handed on yet, its agent request, its
 * engine exec, its timer, the script's collected output and the export's tar source.
 */
#include "runtime/tree_agent.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "codec/userspec.h"
#include "engine/agent_conn.h"
#include "engine/timer.h"
#include "runtime/agent_exec.h"
#include "runtime/agent_op.h"
#include "runtime/table.h"
#include "runtime/tree_engine.h"
#include "runtime/tree_script.h"

/* Credit for the scripts' output that is only collected (bounded, credited again as it
 * comes): the import script's stdout and stderr. */
#define SCRIPT_WINDOW (64u * 1024u)
/* Credit for the export's archive (and its stderr): how far the agent may read tar's
 * output ahead of what the front has taken. */
#define EXPORT_WINDOW (2u * 1024u * 1024u)
/* Archive bytes gathered here before they go to the request: fuller frames. */
#define GATHER AW_MAX_DATA

static void collect(exec_result_t *r, const agent_event_t *ev) {
  head_collector_accept(ev->stream == AW_S_ERR ? &r->err : &r->out, ev->data, ev->len);
}

/* The agent's RESULT against what came: its output counts must be what was received. */
static int result_lies(const aw_exit_t *x, const uint64_t *got) {
  return x->out_bytes != got[AW_S_OUT] || x->err_bytes != got[AW_S_ERR];
}

static void copy_err(err_t *to, const err_t *from) {
  err_clear(to);
  err_set(to, from->kind, from->code, "%s", from->message ? from->message : "The sandbox agent cannot run here.");
}

/* ================= waiting for the agent =================
 * Both transfers begin the same way: the agent ready now, the backend begins; not yet, the
 * wake (which may come from inside agent_conn_when_ready, when connecting fails at once)
 * is handled from a timer; the agent cannot be used, the engine's backend takes the
 * transfer in transport "auto" (before any entry was taken) or it fails (agent_op_refuse). */

typedef struct ag_wait_ops {
  int (*begin)(void *b, err_t *err);           /* the agent is ready: 0, or -1 with err set */
  int (*fall_back)(void *front, err_t *err);    /* the engine's backend takes it (b freed) */
  void (*failed)(void *front, err_t *err);      /* a later begin or fall-back failed: the end */
} ag_wait_ops_t;

typedef struct ag_wait {
  const ag_wait_ops_t *ops;
  void *b, *front;
  sandbox_t *sb;
  io_t *io;
  agent_conn_t *conn;
  agent_waiter_t waiter;
  err_t why;          /* the agent cannot be used: why (between the wake and its handling) */
  sbx_timer_t *timer; /* the wake's handling */
} ag_wait_t;

static int wait_init(ag_wait_t *w, const ag_wait_ops_t *ops, void *b, void *front, sandbox_t *sb, io_t *io,
                     err_t *err) {
  *w = (ag_wait_t){.ops = ops, .b = b, .front = front, .sb = sb, .io = io, .why = ERR_INIT};
  w->conn = agent_op_conn(sb);
  return w->conn == NULL ? err_oom(err) : 0;
}

/* Stops waiting (nothing is begun after it). */
static void wait_cancel(ag_wait_t *w) {
  if (w->conn) agent_conn_cancel_wait(w->conn, &w->waiter);
  sbx_timer_cancel(w->timer);
  w->timer = NULL;
}

static void wait_free(ag_wait_t *w) {
  wait_cancel(w);
  err_clear(&w->why);
}

static int wait_fall_back(ag_wait_t *w, const err_t *why, err_t *err) {
  if (agent_op_refuse(w->sb, why ? why->message : NULL, err)) return -1;
  return w->ops->fall_back(w->front, err); /* frees w */
}

static void on_wake(agent_waiter_t *aw, const err_t *why);

/* Begins now, once the agent is ready, or falls back. 0, or -1 with err set. */
static int wait_try(ag_wait_t *w, err_t *err) {
  err_t why = ERR_INIT;
  w->waiter.fn = on_wake;
  int rc = agent_conn_when_ready(w->conn, &w->waiter, &why);
  if (rc == 1) return w->ops->begin(w->b, err);
  if (rc == 0) return 0;
  rc = wait_fall_back(w, &why, err);
  err_clear(&why);
  return rc;
}

static void on_woken(void *ud) {
  ag_wait_t *w = ud;
  w->timer = NULL;
  const ag_wait_ops_t *ops = w->ops;
  void *front = w->front;
  err_t err = ERR_INIT, why = ERR_INIT;
  int rc;
  if (err_is_set(&w->why)) {
    err_move(&why, &w->why);
    rc = wait_fall_back(w, &why, &err); /* frees w */
  } else {
    rc = wait_try(w, &err);
  }
  if (rc != 0) ops->failed(front, &err);
  err_clear(&why);
  err_clear(&err);
}

static void on_wake(agent_waiter_t *aw, const err_t *why) {
  ag_wait_t *w = (ag_wait_t *)((char *)aw - offsetof(ag_wait_t, waiter));
  if (why != NULL) copy_err(&w->why, why);
  sbx_timer_cancel(w->timer);
  w->timer = sbx_timer_start(w->io, 0, on_woken, w);
  if (w->timer == NULL) {
    err_t err = ERR_INIT;
    err_sandbox(&err, CODE_INVALID_STATE, "The addon is shutting down.");
    w->ops->failed(w->front, &err);
    err_clear(&err);
  }
}

/* ================= import ================= */

enum { AI_WAIT = 1, AI_SEND, AI_CLEAN, AI_DONE };

typedef struct ag_import {
  tree_import_t *t;
  ag_wait_t wait;
  agent_req_t *req;
  int as_user;
  char stage[64];
  char marker[64];
  buf_t out;          /* archive bytes not handed to the request yet */
  uint64_t file_left; /* bytes of the current member still to come from the caller */
  int ended;          /* the end of the archive (and of stdin) was handed to the request */
  int stopping;
  int phase;
  uint32_t pgid;     /* the script's process group, from STARTED until EXITED */
  uint64_t got[4];   /* output bytes received, by stream */
  exec_result_t *result;
  err_t err;          /* the failure, reported at the end */
  exec_task_t *clean; /* the engine exec that discards or settles */
  sbx_timer_t *timer;
} ag_import_t;

static void import_free(tree_import_t *t);

static void import_report(void *ud) {
  ag_import_t *b = ud;
  b->timer = NULL;
  err_t err = ERR_INIT;
  err_move(&err, &b->err);
  tree_import_done(b->t, err_is_set(&err) ? &err : NULL); /* may free b */
  err_clear(&err);
}

/* Reports once, from the loop: a timer, so that a report found inside a call (stop) comes
 * after it. */
static void report_later(ag_import_t *b) {
  b->phase = AI_DONE;
  sbx_timer_cancel(b->timer);
  b->timer = sbx_timer_start(b->t->op.js->io, 0, import_report, b);
  if (b->timer == NULL) import_report(b);
}

static void fail_with(ag_import_t *b, err_t *err) {
  if (!err_is_set(&b->err)) err_move(&b->err, err);
  else err_clear(err);
}

/* ---- cleaning up through the engine ---- */

static void on_cleaned(void *ud, exec_result_t *result, err_t *err) {
  ag_import_t *b = ud;
  b->clean = NULL;
  exec_result_free(result);
  if (err) err_clear(err); /* best effort: what led here is what is reported */
  report_later(b);
}

/* One engine exec of the import script: "discard" (the script's group, if it may still
 * run, killed first) or "settle" (the script waited for); then the report. */
static void clean_up(ag_import_t *b, const char *mode) {
  char group[16] = "";
  if (b->pgid > 1) snprintf(group, sizeof(group), "%u", (unsigned)b->pgid);
  b->pgid = 0;
  b->phase = AI_CLEAN;
  const char *argv[10];
  size_t argc = tree_import_argv(argv, b->t, b->stage, mode, b->marker, group[0] ? group : NULL);
  exec_callbacks_t cbs = {.on_done = on_cleaned};
  err_t err = ERR_INIT;
  b->clean = tree_run_script(b->t->op.sb, argv, argc, 0, &cbs, b, &err);
  err_clear(&err);
  if (b->clean == NULL) report_later(b);
}

/* Ends the script now (its tree, by the agent), then discards what it staged. */
static void cut(ag_import_t *b) {
  agent_req_cancel(b->req);
  b->req = NULL;
  clean_up(b, "discard");
}

/* ---- the EXEC ---- */

static void import_result(ag_import_t *b, const aw_exit_t *x) {
  err_t e = ERR_INIT;
  exec_result_t *r = b->result;
  b->result = NULL;
  int killed = x->how != AW_EXIT_CODE || (x->flags & (AW_EXITF_CANCELLED | AW_EXITF_TIMED_OUT)) != 0;
  if (result_lies(x, b->got)) {
    exec_result_free(r);
    err_sandbox(&e, CODE_DOCKER_COMMAND_FAILED, "The sandbox agent's result does not match the output it sent.");
    killed = 1;
  } else if (x->flags & (AW_EXITF_CANCELLED | AW_EXITF_TIMED_OUT)) {
    /* Not this side's cancel (that one has no result): the agent is exiting. */
    exec_result_free(r);
    err_sandbox(&e, CODE_DOCKER_COMMAND_FAILED, "The sandbox agent ended the import before it was published (the agent is exiting).");
  } else if (x->code != 0) {
    r->exit_code = x->code;
    tree_import_verdict(b->t, b->as_user, r, &e); /* takes r */
  } else {
    exec_result_free(r);
  }
  if (err_is_set(&e)) fail_with(b, &e);
  /* The script removes what it staged whenever it fails, unless it was killed. */
  if (killed) clean_up(b, "discard");
  else report_later(b);
}

static void on_import_event(agent_req_t *req, const agent_event_t *ev, void *ud) {
  ag_import_t *b = ud;
  err_t e = ERR_INIT;
  switch (ev->type) {
    case AE_STARTED:
      b->pgid = ev->started.pgid;
      return;
    case AE_EXITED:
      b->pgid = 0; /* reaped: the group may be reused */
      return;
    case AE_DATA:
      b->got[ev->stream] += ev->len;
      collect(b->result, ev);
      agent_req_grant(req, ev->stream, (uint32_t)ev->len);
      return;
    case AE_RESULT:
      b->req = NULL;
      import_result(b, &ev->exit);
      return;
    case AE_ERROR:
      b->req = NULL;
      agent_error_to_err(&ev->error, "import into the sandbox", b->t->req.dest, &e);
      fail_with(b, &e);
      /* A spawn failure ran nothing; any other ended the script's tree. */
      if (ev->error.kind == AW_E_SPAWN) report_later(b);
      else clean_up(b, "discard");
      return;
    case AE_FAILED:
      /* The agent died: its commands may live on (a killed agent does not end them). */
      b->req = NULL;
      agent_failure_to_err(ev->fail, &e);
      fail_with(b, &e);
      clean_up(b, b->ended ? "settle" : "discard");
      return;
  }
}

static size_t import_buffered(const tree_import_t *t) {
  const ag_import_t *b = t->be;
  /* Until the script runs (and once it ended), nothing more is taken. */
  if (b == NULL || b->phase != AI_SEND || b->req == NULL) return TREE_IMPORT_HIGH;
  return b->out.len + agent_req_unsent(b->req);
}

/* The agent's credit let bytes go. */
static void on_sent(agent_req_t *req, size_t unsent, void *ud) {
  (void)req;
  (void)unsent;
  ag_import_t *b = ud;
  if (!b->stopping && import_buffered(b->t) < TREE_IMPORT_LOW) tree_import_drained(b->t);
}

/* Hands what was gathered to the request: once there is a frame's worth, or all of it with
 * `end`. Once the script ended, bytes are dropped (its result says why). */
static int hand_on(ag_import_t *b, int end, err_t *err) {
  if (b->req == NULL) {
    buf_reset(&b->out);
    return 0;
  }
  if (!end && b->out.len < GATHER) return 0;
  if (agent_req_write(b->req, b->out.data, b->out.len, end) != 0) return err_oom(err);
  buf_reset(&b->out);
  return 0;
}

static int import_begin(void *ud, err_t *err) {
  ag_import_t *b = ud;
  const char *argv[10];
  size_t argc = tree_import_argv(argv, b->t, b->stage, "stream", b->marker, NULL);
  exec_spec_t spec;
  agent_exec_msg_t m;
  b->result = exec_result_new(TREE_SCRIPT_OUTPUT);
  if (b->result == NULL || tree_script_spec(&spec, argv, argc, 1) != 0) return err_oom(err);
  /* Detached: an agent that exits (its host gone silent, a signal) closes the script's
   * stdin without killing it, so the script still removes what it staged, or finishes
   * a publish it began; the agent never cuts one halfway. */
  if (agent_exec_msg_init(&m, &spec, AW_EXEC_STDIN | AW_EXEC_DETACHED, SCRIPT_WINDOW) != 0) {
    exec_spec_free(&spec);
    return err_oom(err);
  }
  b->req = agent_req_start(b->wait.conn, &m.msg, on_import_event, b, err);
  agent_exec_msg_free(&m);
  exec_spec_free(&spec);
  if (b->req == NULL) return -1;
  agent_req_on_sent(b->req, on_sent);
  b->phase = AI_SEND;
  tree_import_drained(b->t); /* the first "drain": entries may come */
  return 0;
}

/* The agent cannot be used: the engine's backend takes the import (b is freed). */
static int import_fall_back(void *front, err_t *err) {
  tree_import_t *t = front;
  import_free(t);
  t->backend = engine_runtime_ops.tree_import;
  return t->backend->start(t, err);
}

static void import_failed(void *front, err_t *err) { tree_import_done(front, err); }

static const ag_wait_ops_t import_wait = {.begin = import_begin, .fall_back = import_fall_back, .failed = import_failed};

static int import_start(tree_import_t *t, err_t *err) {
  ag_import_t *b = calloc(1, sizeof(*b));
  if (b == NULL) return err_oom(err);
  t->be = b;
  b->t = t;
  buf_init(&b->out, 0);
  err_init(&b->err);
  b->phase = AI_WAIT;
  if (tree_random_name(b->stage, sizeof(b->stage), "import") != 0 ||
      tree_random_name(b->marker, sizeof(b->marker), "commit") != 0)
    return err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, "No randomness for the staging directory's name.");
  b->as_user = !user_is_root(t->op.sb->user);
  if (wait_init(&b->wait, &import_wait, b, t, t->op.sb, t->op.js->io, err) != 0) return -1;
  return wait_try(&b->wait, err);
}

static int import_entry(tree_import_t *t, const tree_entry_t *e, err_t *err) {
  ag_import_t *b = t->be;
  /* As the script's user, whose tar cannot give files away: uid 0 in the headers is what
   * a root user's tar restores, and what any other user's tar ignores. */
  tar_out_entry_t h = {.path = e->path,
                       .is_dir = e->kind == TREE_DIRECTORY,
                       .size = e->size,
                       .mode = e->mode,
                       .mtime = time(NULL)};
  if (tar_write_header(&b->out, &h) != 0) return err_oom(err);
  b->file_left = e->kind == TREE_FILE ? e->size : 0;
  if (e->kind == TREE_FILE && e->size == 0 && tar_write_padding(&b->out, 0) != 0) return err_oom(err);
  return hand_on(b, 0, err);
}

static int import_data(tree_import_t *t, const uint8_t *data, size_t len, err_t *err) {
  ag_import_t *b = t->be;
  if (buf_append(&b->out, data, len) != 0) return err_oom(err);
  b->file_left -= len;
  /* The member is complete: its padding (the front counts t->file_got after this call). */
  if (b->file_left == 0 && tar_write_padding(&b->out, t->file_got + len) != 0) return err_oom(err);
  return hand_on(b, 0, err);
}

static int import_commit(tree_import_t *t, err_t *err) {
  ag_import_t *b = t->be;
  tar_out_entry_t m = {.path = b->marker, .is_dir = 0, .size = 0, .mode = 0600, .mtime = time(NULL)};
  if (tar_write_header(&b->out, &m) != 0 || tar_write_end(&b->out) != 0) return err_oom(err);
  b->ended = 1;
  return hand_on(b, 1, err);
}

/* A stopped import whose publish does not end: cut it. */
static void on_grace(void *ud) {
  ag_import_t *b = ud;
  b->timer = NULL;
  if (b->req != NULL) cut(b);
}

static void import_stop(tree_import_t *t, int now) {
  ag_import_t *b = t->be;
  if (b == NULL) return;
  if (now) {
    wait_cancel(&b->wait);
    agent_req_cancel(b->req);
    b->req = NULL;
    exec_task_cancel(b->clean);
    b->clean = NULL;
    sbx_timer_cancel(b->timer);
    b->timer = NULL;
    b->phase = AI_DONE;
    return;
  }
  if (b->stopping) return;
  b->stopping = 1;
  buf_reset(&b->out); /* what was not handed on is dropped */
  switch (b->phase) {
    case AI_WAIT:
      wait_cancel(&b->wait);
      report_later(b); /* nothing was staged */
      return;
    case AI_SEND:
      if (b->req == NULL) return; /* a report is on its way */
      if (!b->ended) {
        cut(b);
        return;
      }
      /* Every byte was handed on: the publish runs to its end (a publish cut halfway
       * would leave half of it), within the grace. */
      b->timer = sbx_timer_start(t->op.js->io, TREE_STOP_GRACE_MS, on_grace, b);
      if (b->timer == NULL) cut(b);
      return;
    default:
      /* A clean-up or a report is already on its way. */
      return;
  }
}

static void import_free(tree_import_t *t) {
  ag_import_t *b = t->be;
  if (b == NULL) return;
  import_stop(t, 1);
  buf_free(&b->out);
  exec_result_free(b->result);
  err_clear(&b->err);
  wait_free(&b->wait);
  free(b);
  t->be = NULL;
}

const tree_import_backend_t tree_agent_import_backend = {
    .name = "agent",
    .start = import_start,
    .entry = import_entry,
    .data = import_data,
    .commit = import_commit,
    .stop = import_stop,
    .buffered = import_buffered,
    .free = import_free,
};

/* ================= export ================= */

typedef struct ag_export {
  tree_export_t *x;
  ag_wait_t wait;
  agent_req_t *req;
  tree_src_t src;
  exec_result_t *result;
  uint64_t got[4];
  agent_credit_t credit; /* given back as the archive is taken, held while the front is behind */
} ag_export_t;

static void export_free(tree_export_t *x);

static void export_result(ag_export_t *b, const aw_exit_t *x) {
  err_t e = ERR_INIT;
  exec_result_t *r = b->result;
  b->result = NULL;
  if (result_lies(x, b->got)) {
    exec_result_free(r);
    err_sandbox(&e, CODE_DOCKER_COMMAND_FAILED, "The sandbox agent's result does not match the output it sent.");
  } else if (x->flags & (AW_EXITF_CANCELLED | AW_EXITF_TIMED_OUT | AW_EXITF_OUTPUT_CUT)) {
    exec_result_free(r);
    err_sandbox(&e, CODE_DOCKER_COMMAND_FAILED, "The sandbox agent ended the export before its end (the agent is exiting).");
  } else if (x->code != 0) {
    r->exit_code = x->code;
    tree_export_verdict(&b->src, r, &e); /* takes r */
  } else {
    exec_result_free(r);
    tar_reader_finish(b->src.reader, &e);
  }
  tree_export_done(b->x, err_is_set(&e) ? &e : NULL); /* may free b */
  err_clear(&e);
}

static void on_export_event(agent_req_t *req, const agent_event_t *ev, void *ud) {
  ag_export_t *b = ud;
  err_t e = ERR_INIT;
  switch (ev->type) {
    case AE_STARTED:
    case AE_EXITED:
      return;
    case AE_DATA:
      b->got[ev->stream] += ev->len;
      if (ev->stream != AW_S_OUT) {
        collect(b->result, ev);
        agent_req_grant(req, ev->stream, (uint32_t)ev->len);
        return;
      }
      tree_export_heard(b->x);
      if (tar_reader_feed(b->src.reader, ev->data, ev->len, &e) < 0) {
        agent_req_cancel(req);
        b->req = NULL;
        tree_export_done(b->x, &e); /* may free b */
        err_clear(&e);
        return;
      }
      /* Taken: credit for as many more, unless the consumer is behind. */
      agent_credit_taken(&b->credit, req, AW_S_OUT, (uint32_t)ev->len, tree_export_should_pause(b->x));
      return;
    case AE_RESULT:
      b->req = NULL;
      export_result(b, &ev->exit);
      return;
    case AE_ERROR:
      b->req = NULL;
      agent_error_to_err(&ev->error, "export from the sandbox", b->src.shown, &e);
      tree_export_done(b->x, &e);
      err_clear(&e);
      return;
    case AE_FAILED:
      /* The agent died: tar, writing into its closed pipe, ends too. */
      b->req = NULL;
      agent_failure_to_err(ev->fail, &e);
      tree_export_done(b->x, &e);
      err_clear(&e);
      return;
  }
}

static int export_begin(void *ud, err_t *err) {
  ag_export_t *b = ud;
  size_t argc = 0;
  const char **argv = tree_export_argv(&b->src, b->x, &argc);
  if (argv == NULL) return err_oom(err);
  exec_spec_t spec;
  agent_exec_msg_t m;
  b->result = exec_result_new(TREE_SCRIPT_OUTPUT);
  int rc = b->result != NULL ? tree_script_spec(&spec, argv, argc, 0) : -1;
  free(argv);
  if (rc != 0) return err_oom(err);
  if (agent_exec_msg_init(&m, &spec, 0, EXPORT_WINDOW) != 0) {
    exec_spec_free(&spec);
    return err_oom(err);
  }
  b->req = agent_req_start(b->wait.conn, &m.msg, on_export_event, b, err);
  agent_exec_msg_free(&m);
  exec_spec_free(&spec);
  return b->req == NULL ? -1 : 0;
}

static int export_fall_back(void *front, err_t *err) {
  tree_export_t *x = front;
  export_free(x);
  x->backend = engine_runtime_ops.tree_export;
  return x->backend->start(x, err);
}

static void export_failed(void *front, err_t *err) { tree_export_done(front, err); }

static const ag_wait_ops_t export_wait = {.begin = export_begin, .fall_back = export_fall_back, .failed = export_failed};

static int export_start(tree_export_t *x, err_t *err) {
  ag_export_t *b = calloc(1, sizeof(*b));
  if (b == NULL) return err_oom(err);
  x->be = b;
  b->x = x;
  if (wait_init(&b->wait, &export_wait, b, x, x->op.sb, x->op.js->io, err) != 0) return -1;
  return wait_try(&b->wait, err);
}

static void export_pause(tree_export_t *x) {
  ag_export_t *b = x->be;
  if (b != NULL) agent_credit_pause(&b->credit);
}

static void export_resume(tree_export_t *x) {
  ag_export_t *b = x->be;
  if (b == NULL) return;
  agent_credit_resume(&b->credit, b->req);
}

static void export_stop(tree_export_t *x) {
  ag_export_t *b = x->be;
  if (b == NULL) return;
  wait_cancel(&b->wait);
  agent_req_cancel(b->req);
  b->req = NULL;
}

static void export_free(tree_export_t *x) {
  ag_export_t *b = x->be;
  if (b == NULL) return;
  export_stop(x);
  tree_src_free(&b->src);
  exec_result_free(b->result);
  wait_free(&b->wait);
  free(b);
  x->be = NULL;
}

const tree_export_backend_t tree_agent_export_backend = {
    .name = "agent",
    .start = export_start,
    .pause = export_pause,
    .resume = export_resume,
    .stop = export_stop,
    .free = export_free,
};
