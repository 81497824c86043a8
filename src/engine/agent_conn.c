/*
 * agent_conn.c - the connection to a sandbox's agent (see agent_conn.h).
 *
 * Connecting is a chain of steps, each one engine request or task:
 *   VERSION (GET /version, once per engine: the architecture picks the binary)
 *   -> PROBE (HEAD of the binary's path; skipped for a read-only rootfs)
 *   -> PLACE (archive upload, or the exec that writes it into the tmpfs)
 *   -> CREATE (POST /containers/{name}/exec with stdin attached)
 *   -> HELLO (the hijacked stream; HOST_HELLO and a PING sent, the agent's HELLO and the
 *      PONG awaited: the HELLO shows its output arrives, the PONG that its input does)
 *   -> READY.
 * The PONG matters: an engine under load has been seen (Podman 4.3, two busy cores) to
 * start an exec whose output flows while its input never arrives; without the PONG the
 * requests were sent into it, and failed once the agent gave up on a silent host. With
 * it, such a connection fails before any request is sent: the calls waiting go to the
 * engine (transport "auto") and the next call connects again.
 * Everything the agent sends is checked (codec/agent_wire.c) before it is used: a frame
 * that does not parse, data beyond the credit granted, a reply to no request, a result that
 * does not decode: the agent is lying, and the connection fails like a dead one.
 */
#include "engine/agent_conn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/trace.h"
#include "codec/runspec.h"
#include "engine/agent_image.h"
#include "engine/agent_place.h"
#include "engine/exec_task.h"
#include "engine/hijack.h"
#include "engine/timer.h"
#include "engine/sh/place_agent_sh.h"

#define RX_LIMIT (AW_HEADER_LEN + AW_MAX_PAYLOAD)
#define STDERR_KEEP 2048
#define SMALL_FRAME 4096
#define TX_OVERFLOW_MSG "The sandbox agent stopped reading its input (more than 8 MiB wait to be written to it)."

enum { ST_IDLE = 0, ST_VERSION, ST_PROBE, ST_PLACE, ST_CREATE, ST_HELLO, ST_READY, ST_DEAD, ST_UNUSABLE };

struct agent_req {
  agent_conn_t *conn;
  uint32_t id;
  uint8_t type;
  agent_req_fn fn;
  void *ud;
  int cancelled;
  /* host -> agent stream */
  buf_t out;
  size_t out_sent;
  int out_end;
  int end_sent;
  uint64_t credit_in;
  uint64_t sent_in;     /* stream 1 bytes sent (handed to the connection) */
  uint64_t returned_in; /* stream 1 credit the agent returned (WINDOW increments) */
  agent_sent_fn on_sent; /* told when the agent's credit let queued bytes go */
  /* agent -> host streams: credit granted and bytes received (AW_S_OUT, AW_S_ERR) */
  uint64_t granted[4];
  uint64_t received[4];
  agent_req_t *prev, *next;
};

struct agent_conn {
  engine_t *eng;
  io_t *io;
  char *container;
  char *workdir;
  int readonly;
  int state;
  int failures; /* in a row, since the last ready connection */
  err_t why;    /* why it is unusable */
  const agent_image_t *img;
  agent_waiter_t waiters; /* the head of a circular list, oldest first */
  http_req_t *req;
  exec_task_t *placer;
  char *exec_id;
  http_req_t *probe; /* GET /exec/<id>/json while pings go unanswered (on_tick) */
  hijack_t *hj;
  sbx_timer_t *timer; /* the HELLO deadline, then the heartbeat */
  buf_t rx;
  buf_t diag; /* the agent's stderr, last bytes, for messages */
  uint32_t in_window;
  uint32_t pid;
  uint32_t next_id;
  uint64_t last_rx_ms;
  int pings_unanswered;
  int said_hello; /* a valid HELLO came (ST_HELLO until the connect PONG has come too) */
  int heard_pong; /* the PONG of the connect PING came */
  int tx_waiting;  /* a request's data waits for the write queue to fall (AGENT_TX_LOW) */
  int tx_overflow; /* the write queue passed AGENT_TX_LIMIT: failing from the timer */
  agent_req_t *reqs;
  size_t nreqs;
  agent_conn_t *io_prev, *io_next; /* the I/O context's list (closed with it) */
};

static void connect_step(agent_conn_t *c);
static void conn_fail(agent_conn_t *c, err_t *err, int unusable);
static void arm_timer(agent_conn_t *c, uint64_t ms);
static void fail_with(agent_conn_t *c, int unusable, const char *fmt, const char *arg);

static uint64_t now_ms(void) { return uv_hrtime() / 1000000u; }

/* ---- requests ---- */

static void req_unlink(agent_req_t *r) {
  agent_conn_t *c = r->conn;
  if (r->prev) r->prev->next = r->next;
  else if (c->reqs == r) c->reqs = r->next;
  if (r->next) r->next->prev = r->prev;
  r->prev = r->next = NULL;
  c->nreqs--;
}

static void req_free(agent_req_t *r) {
  buf_free(&r->out);
  free(r);
}

/* Keeps Node's loop alive only while requests wait for the agent. */
static void update_ref(agent_conn_t *c) { hijack_set_ref(c->hj, c->nreqs > 0); }

static agent_req_t *req_find(agent_conn_t *c, uint32_t id) {
  for (agent_req_t *r = c->reqs; r != NULL; r = r->next)
    if (r->id == id) return r;
  return NULL;
}

/* Delivers a terminal event (unless the owner is gone) and frees the request. */
static void req_finish(agent_req_t *r, const agent_event_t *ev) {
  agent_conn_t *c = r->conn;
  req_unlink(r);
  update_ref(c);
  if (!r->cancelled) r->fn(r, ev, r->ud);
  req_free(r);
}

/* ---- sending ---- */

/* Everything toward the agent goes through here. Past AGENT_TX_LIMIT queued unwritten
 * the agent is not reading its input: nothing more is queued, and the connection fails
 * from the timer (never inside a caller's call). */
static int send_bytes(agent_conn_t *c, const uint8_t *p, size_t len) {
  if (c->hj == NULL || c->tx_overflow) return -1;
  if (hijack_queued(c->hj) + len > AGENT_TX_LIMIT) {
    c->tx_overflow = 1;
    arm_timer(c, 0);
    return -1;
  }
  if (hijack_write(c->hj, p, len) != 0) return -1;
  return 0;
}

/*
 * Every request type the host sends, once: R(TYPE, its message in codec/agent_wire.h,
 * where agent_msg_t holds it, its RESULT's message, where agent_event_t receives that).
 * The encoding of a request and the decoding of its RESULT are made from these rows.
 */
#define AGENT_REQUESTS(R)                                      \
  R(EXEC, exec, u.exec, exec_result, exit)                     \
  R(READ, read, u.read, read_result, res.read)                 \
  R(WRITE, write, u.write, write_result, res.write)            \
  R(MKDIR, mkdir, u.mkdir, mkdir_result, res.mkdir)            \
  R(LIST, list, u.list, list_result, res.list)                 \
  R(PORT_WAIT, port_wait, u.port, port_result, res.port)       \
  R(SIGNAL, signal, u.signal, signal_result, res.signal)       \
  R(GROUP_ALIVE, group_alive, u.alive, alive_result, res.alive) \
  R(WATCH, watch, u.watch, watch_result, res.watch)            \
  R(TERM_OPEN, term_open, u.term_open, term_result, res.term)  \
  R(TERM_ATTACH, term_attach, u.term_attach, term_result, res.term) \
  R(TERM_RESIZE, term_resize, u.term_resize, term_result, res.term) \
  R(TERM_SIGNAL, term_signal, u.term_signal, signal_result, res.signal) \
  R(TERM_LIST, term_list, u.term_list, term_list_result, res.term_list)

/* The frames besides RESULT and ERROR a request of each type may get (RQ_*), and the
 * credit its output stream starts with: what on_req_frame checks an agent's frames by. */
enum { RQ_OUT = 1, RQ_ERR = 2, RQ_STARTED = 4, RQ_EXITED = 8 };
static unsigned req_frames(uint8_t type) {
  switch (type) {
    case AW_T_EXEC: return RQ_OUT | RQ_ERR | RQ_STARTED | RQ_EXITED;
    case AW_T_READ:
    case AW_T_LIST:
    case AW_T_WATCH: return RQ_OUT;
    case AW_T_TERM_OPEN:
    case AW_T_TERM_ATTACH: return RQ_OUT | RQ_STARTED;
    default: return 0;
  }
}

static uint32_t req_window(const agent_msg_t *m) {
  switch (m->type) {
    case AW_T_EXEC: return m->u.exec.window;
    case AW_T_READ: return m->u.read.window;
    case AW_T_LIST: return m->u.list.window;
    case AW_T_WATCH: return m->u.watch.window;
    case AW_T_TERM_OPEN: return m->u.term_open.window;
    case AW_T_TERM_ATTACH: return m->u.term_attach.window;
    default: return 0;
  }
}

static int encode_msg(aw_writer_t *w, uint32_t id, const agent_msg_t *m) {
#define ENCODE_(type, msg, member, result, into) \
  case AW_T_##type: return aw_put_##msg(w, id, &m->member);
  switch (m->type) {
    AGENT_REQUESTS(ENCODE_)
    default: return AW_ERR_TYPE;
  }
#undef ENCODE_
}

/* A RESULT for a request of `type`, into ev. AW_OK or the decoder's refusal. */
static int decode_result(uint8_t type, const uint8_t *p, size_t len, agent_event_t *ev) {
#define DECODE_(type, msg, member, result, into) \
  case AW_T_##type: return aw_dec_##result(p, len, &ev->into);
  switch (type) {
    AGENT_REQUESTS(DECODE_)
    default: return AW_ERR_TYPE;
  }
#undef DECODE_
}

/* Encodes into a small buffer, or a frame-sized one when it does not fit. */
static int send_msg(agent_conn_t *c, uint32_t id, const agent_msg_t *m, err_t *err) {
  size_t caps[2] = {SMALL_FRAME, AW_HEADER_LEN + AW_MAX_PAYLOAD};
  for (int k = 0; k < 2; k++) {
    uint8_t *buf = malloc(caps[k]);
    if (buf == NULL) return err_oom(err);
    aw_writer_t w;
    aw_w_init(&w, buf, caps[k]);
    int rc = encode_msg(&w, id, m);
    if (rc == AW_OK) {
      rc = send_bytes(c, buf, w.len);
      free(buf);
      if (rc == 0) return 0;
      if (c->tx_overflow) return err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, "%s", TX_OVERFLOW_MSG);
      return err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, "The sandbox agent's connection is closed.");
    }
    free(buf);
    if (rc != AW_ERR_OVERFLOW || k == 1)
      return err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, "A request for the sandbox agent cannot be encoded: %s",
                         aw_status_str(rc));
  }
  return -1;
}

static void send_small(agent_conn_t *c, int (*put)(aw_writer_t *, void *), void *arg) {
  uint8_t buf[SMALL_FRAME];
  aw_writer_t w;
  aw_w_init(&w, buf, sizeof(buf));
  if (put(&w, arg) == AW_OK) send_bytes(c, buf, w.len);
}

typedef struct window_arg {
  uint32_t id;
  uint8_t stream;
  uint32_t inc;
} window_arg_t;

static int put_window(aw_writer_t *w, void *arg) {
  window_arg_t *a = arg;
  return aw_put_window(w, a->id, a->stream, a->inc);
}

static int put_cancel(aw_writer_t *w, void *arg) { return aw_put_cancel(w, *(uint32_t *)arg); }

/* PING ids are not requests' (those count up from 1): the heartbeat's, and the one sent
 * with HOST_HELLO whose PONG shows the agent's input arrives. */
#define PING_HEARTBEAT 0xffffffffu
#define PING_CONNECT 0xfffffffeu

static int put_ping(aw_writer_t *w, void *arg) {
  return aw_put_ping(w, AW_T_PING, arg == NULL ? PING_HEARTBEAT : *(uint32_t *)arg, "anvia", 5);
}

static int put_host_hello(aw_writer_t *w, void *arg) {
  (void)arg;
  aw_host_hello_t m = {AW_VERSION, AW_VERSION, 0};
  return aw_put_host_hello(w, 0, &m);
}

/* Sends what the agent's credit allows of a request's host -> agent stream, and only while
 * the connection's write queue holds less than AGENT_TX_HIGH: however much credit the
 * agent grants, an agent that does not read holds at most that (plus a frame) here; the
 * rest stays in r->out, which its producer bounds (agent_req_unsent). */
static void pump(agent_req_t *r) {
  agent_conn_t *c = r->conn;
  if (c->state != ST_READY || r->end_sent) return;
  uint8_t *frame = NULL;
  while (!r->end_sent) {
    size_t left = r->out.len - r->out_sent;
    size_t n = left < AW_MAX_DATA ? left : AW_MAX_DATA;
    if (n > r->credit_in) n = (size_t)r->credit_in;
    int end = r->out_end && n == left;
    if (n == 0 && !end) break;
    if (hijack_queued(c->hj) >= AGENT_TX_HIGH) {
      c->tx_waiting = 1; /* on_written goes on */
      break;
    }
    if (frame == NULL && (frame = malloc(AW_HEADER_LEN + AW_MAX_DATA)) == NULL) break;
    aw_writer_t w;
    aw_w_init(&w, frame, AW_HEADER_LEN + AW_MAX_DATA);
    if (aw_put_data(&w, r->id, AW_S_IN, end ? AW_F_END : 0, r->out.data + r->out_sent, n) != AW_OK ||
        send_bytes(c, frame, w.len) != 0)
      break;
    r->out_sent += n;
    r->sent_in += n;
    r->credit_in -= n;
    if (end) r->end_sent = 1;
  }
  free(frame);
  /* Everything sent: the copy is no longer needed. Else what was sent is dropped once it
   * is half the buffer (linear in all: each move is of at most what was sent since the
   * last), so a stream written as it goes holds about what waits for credit. */
  if (r->end_sent) {
    buf_free(&r->out);
    r->out_sent = 0;
  } else if (r->out_sent > 0 && r->out_sent >= r->out.len / 2) {
    buf_consume(&r->out, r->out_sent);
    r->out_sent = 0;
  }
}

/* Pumps, and tells the producer when bytes (or the end) went. */
static void pump_notify(agent_req_t *r) {
  size_t before = agent_req_unsent(r);
  int ended = r->end_sent;
  pump(r);
  size_t after = agent_req_unsent(r);
  if (r->on_sent != NULL && !r->cancelled && (after < before || r->end_sent != ended)) r->on_sent(r, after, r->ud);
}

/* The write queue fell: the data that waited for it goes on. */
static void on_written(void *ud) {
  agent_conn_t *c = ud;
  if (!c->tx_waiting || c->state != ST_READY || hijack_queued(c->hj) >= AGENT_TX_LOW) return;
  c->tx_waiting = 0;
  agent_req_t *r = c->reqs;
  while (r != NULL && c->state == ST_READY && !c->tx_waiting) {
    agent_req_t *next = r->next; /* producers only add requests at the head */
    if (!r->end_sent && agent_req_unsent(r) + (size_t)r->out_end > 0) pump_notify(r);
    r = next;
  }
}

agent_req_t *agent_req_start(agent_conn_t *c, const agent_msg_t *msg, agent_req_fn fn, void *ud, err_t *err) {
  if (c->state != ST_READY) {
    err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, "The sandbox agent is not connected.");
    return NULL;
  }
  if (c->nreqs >= AW_MAX_REQUESTS) {
    err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, "Too many requests in flight for the sandbox agent.");
    return NULL;
  }
  agent_req_t *r = calloc(1, sizeof(*r));
  if (r == NULL) {
    err_oom(err);
    return NULL;
  }
  do {
    r->id = ++c->next_id;
  } while (r->id == 0 || req_find(c, r->id) != NULL);
  r->conn = c;
  r->type = msg->type;
  r->fn = fn;
  r->ud = ud;
  r->credit_in = c->in_window;
  buf_init(&r->out, 0);
  uint32_t window = req_window(msg);
  r->granted[AW_S_OUT] = window;
  r->granted[AW_S_ERR] = window;
  if (send_msg(c, r->id, msg, err) != 0) {
    req_free(r);
    return NULL;
  }
  r->next = c->reqs;
  if (c->reqs) c->reqs->prev = r;
  c->reqs = r;
  c->nreqs++;
  update_ref(c);
  return r;
}

int agent_req_write(agent_req_t *r, const uint8_t *data, size_t len, int end) {
  if (r->out_end) return -1;
  if (len > 0 && buf_append(&r->out, data, len) != 0) return -1;
  if (end) r->out_end = 1;
  pump(r);
  return 0;
}

size_t agent_req_unsent(const agent_req_t *r) { return r == NULL || r->end_sent ? 0 : r->out.len - r->out_sent; }

void agent_req_on_sent(agent_req_t *r, agent_sent_fn fn) {
  if (r != NULL) r->on_sent = fn;
}

void agent_req_grant(agent_req_t *r, uint8_t stream, uint32_t bytes) {
  if (r == NULL || bytes == 0 || (stream != AW_S_OUT && stream != AW_S_ERR)) return;
  agent_conn_t *c = r->conn;
  if (r->granted[stream] + bytes > AW_MAX_WINDOW + r->received[stream]) return; /* never over the bound */
  r->granted[stream] += bytes;
  window_arg_t a = {r->id, stream, bytes};
  if (c->state == ST_READY) send_small(c, put_window, &a);
}

void agent_credit_taken(agent_credit_t *k, agent_req_t *r, uint8_t stream, uint32_t bytes, int behind) {
  if (stream != AW_S_OUT && stream != AW_S_ERR) return;
  if (k->paused || behind) k->held[stream] += bytes;
  else agent_req_grant(r, stream, bytes);
}

void agent_credit_pause(agent_credit_t *k) { k->paused = 1; }

void agent_credit_resume(agent_credit_t *k, agent_req_t *r) {
  k->paused = 0;
  for (uint8_t s = AW_S_OUT; s <= AW_S_ERR; s++) {
    if (k->held[s] > 0 && r != NULL) agent_req_grant(r, s, k->held[s]);
    k->held[s] = 0;
  }
}

void agent_req_violation(agent_req_t *r, const char *what) {
  if (r == NULL) return;
  agent_conn_t *c = r->conn;
  r->cancelled = 1; /* its owner reports its own error */
  if (c->state == ST_READY) {
    char msg[200];
    snprintf(msg, sizeof(msg), "The sandbox agent sent %s.", what);
    fail_with(c, 0, "%s", msg);
  }
}

void agent_req_cancel(agent_req_t *r) {
  if (r == NULL || r->cancelled) return;
  r->cancelled = 1;
  agent_conn_t *c = r->conn;
  /* What was not sent of its input never will be: the agent ends the request anyway. */
  buf_free(&r->out);
  r->out_sent = 0;
  r->out_end = r->end_sent = 1;
  /* The request stays until the agent answers (its id is not reused before). */
  if (c->state == ST_READY) send_small(c, put_cancel, &r->id);
}

/* ---- failure ---- */

/* Every request in flight fails with `err` (the list is detached first: owners may start
 * new requests, which wait for the next connection). */
static void fail_requests(agent_conn_t *c, const err_t *err) {
  agent_req_t *list = c->reqs;
  c->reqs = NULL;
  c->nreqs = 0;
  while (list) {
    agent_req_t *r = list;
    list = r->next;
    r->prev = r->next = NULL;
    agent_event_t ev;
    memset(&ev, 0, sizeof(ev));
    ev.type = AE_FAILED;
    ev.fail = err;
    if (!r->cancelled) r->fn(r, &ev, r->ud);
    req_free(r);
  }
}

/* ---- waiters: circular lists with a head, so a waiter unlinks itself from any list ---- */

static void waiters_init(agent_waiter_t *head) { head->next = head->prev = head; }

static void waiter_unlink(agent_waiter_t *w) {
  w->prev->next = w->next;
  w->next->prev = w->prev;
  w->next = w->prev = NULL;
}

static void waiter_push(agent_waiter_t *head, agent_waiter_t *w) {
  w->prev = head->prev;
  w->next = head;
  head->prev->next = w;
  head->prev = w;
}

/* Moves every waiter of the connection to `to` (a head on the caller's stack). */
static void waiters_take(agent_conn_t *c, agent_waiter_t *to) {
  agent_waiter_t *from = &c->waiters;
  waiters_init(to);
  if (from->next == from) return;
  to->next = from->next;
  to->prev = from->prev;
  to->next->prev = to;
  to->prev->next = to;
  waiters_init(from);
}

/* Wakes the waiters of `list`, oldest first (taken off the connection by the caller: a
 * waiter that queues while these are woken waits for the next connection). One cancelled
 * meanwhile, from another's callback, has left the list and is not woken. */
static void wake_list(agent_waiter_t *list, const err_t *err) {
  while (list->next != list) {
    agent_waiter_t *w = list->next;
    waiter_unlink(w);
    w->fn(w, err);
  }
}

static void wake_waiters(agent_conn_t *c, const err_t *err) {
  agent_waiter_t list;
  waiters_take(c, &list);
  wake_list(&list, err);
}

static void drop_connection(agent_conn_t *c) {
  http_req_free(c->req);
  c->req = NULL;
  http_req_free(c->probe);
  c->probe = NULL;
  exec_task_cancel(c->placer);
  c->placer = NULL;
  hijack_close(c->hj);
  c->hj = NULL;
  sbx_timer_cancel(c->timer);
  c->timer = NULL;
  free(c->exec_id);
  c->exec_id = NULL;
  buf_reset(&c->rx);
  c->pid = 0;
  c->said_hello = 0;
  c->heard_pong = 0;
  c->tx_waiting = 0;
  c->tx_overflow = 0;
}

/* The connection failed: `unusable` when the agent cannot run in this container at all. */
static void conn_fail(agent_conn_t *c, err_t *err, int unusable) {
  trace_event("agent %s: %s", unusable ? "unusable" : "failed", err->message ? err->message : "");
  drop_connection(c);
  if (!unusable && ++c->failures > AGENT_MAX_RETRIES) unusable = 1;
  c->state = unusable ? ST_UNUSABLE : ST_DEAD;
  if (unusable) {
    err_clear(&c->why);
    err_set(&c->why, err->kind, err->code, "%s", err->message ? err->message : "The sandbox agent cannot run here.");
  }
  /* Those waiting now get this error; calls made from the callbacks below wait for the
   * next connection. */
  agent_waiter_t waiting;
  waiters_take(c, &waiting);
  fail_requests(c, err);
  wake_list(&waiting, err);
  err_clear(err);
}

static void fail_with(agent_conn_t *c, int unusable, const char *fmt, const char *arg) {
  err_t err = ERR_INIT;
  err_sandbox(&err, CODE_DOCKER_COMMAND_FAILED, fmt, arg);
  conn_fail(c, &err, unusable);
}

/* The agent's last words on stderr, for messages ("" when it said nothing). */
static const char *diag_text(agent_conn_t *c) {
  if (c->diag.len == 0 || buf_terminate(&c->diag) != 0) return "";
  return (const char *)c->diag.data;
}

/* ---- reading frames ---- */

static int is_lie(agent_conn_t *c, const char *what) {
  char msg[160];
  snprintf(msg, sizeof(msg), "The sandbox agent sent %s.", what);
  fail_with(c, 0, "%s", msg);
  return -1;
}

/* HELLO and the connect PONG both came: requests may go. */
static void become_ready(agent_conn_t *c) {
  c->state = ST_READY;
  c->failures = 0;
  /* The HELLO deadline is over: the heartbeat starts (the agent exits after
   * AGENT_SILENCE_MS without a byte from the host, idle or not: a transfer held back by
   * its consumer sends nothing else). */
  arm_timer(c, AGENT_HEARTBEAT_MS);
  trace_event("agent ready: pid %u", (unsigned)c->pid);
  wake_waiters(c, NULL);
}

static int on_hello(agent_conn_t *c, const uint8_t *p, size_t len) {
  aw_hello_t m;
  if (c->state != ST_HELLO || c->said_hello || aw_dec_hello(p, len, &m) != AW_OK || m.magic != AW_MAGIC ||
      m.version_min > AW_VERSION || m.version_max < AW_VERSION || m.in_window == 0)
    return is_lie(c, "a HELLO this host does not understand");
  /* The initial credit toward the agent: what it offers, at most AGENT_MAX_IN_WINDOW. */
  c->in_window = m.in_window < AGENT_MAX_IN_WINDOW ? m.in_window : AGENT_MAX_IN_WINDOW;
  c->pid = m.pid;
  c->said_hello = 1;
  trace_event("agent hello: pid %u, caps 0x%x", (unsigned)m.pid, (unsigned)m.caps);
  if (c->heard_pong) become_ready(c);
  return 0;
}

static int on_pong(agent_conn_t *c, const aw_header_t *h, const uint8_t *p) {
  if (aw_dec_ping(p, h->len) != AW_OK) return is_lie(c, "a bad PONG");
  if (c->state != ST_HELLO || h->id != PING_CONNECT) return 0;
  if (c->heard_pong) return is_lie(c, "a second PONG for one PING");
  c->heard_pong = 1;
  if (c->said_hello) become_ready(c);
  return 0;
}

/* A request's frame: decoded by type, checked against what was granted, delivered. */
static int on_req_frame(agent_conn_t *c, const aw_header_t *h, const uint8_t *p) {
  agent_req_t *r = req_find(c, h->id);
  if (r == NULL) return is_lie(c, "a frame for no request");
  agent_event_t ev;
  memset(&ev, 0, sizeof(ev));
  switch (h->type) {
    case AW_T_DATA: {
      if (!(req_frames(r->type) & RQ_OUT)) return is_lie(c, "data for a request without output");
      if (h->stream == AW_S_ERR && !(req_frames(r->type) & RQ_ERR)) return is_lie(c, "stderr for a request without it");
      r->received[h->stream] += h->len;
      if (r->received[h->stream] > r->granted[h->stream]) return is_lie(c, "more data than it was granted");
      ev.type = AE_DATA;
      ev.stream = h->stream;
      ev.end = (h->flags & AW_F_END) != 0;
      ev.data = p;
      ev.len = h->len;
      if (!r->cancelled) r->fn(r, &ev, r->ud);
      return 0;
    }
    case AW_T_WINDOW: {
      uint32_t inc = 0;
      if (aw_dec_window(p, h->len, &inc) != AW_OK || r->credit_in + inc > AW_MAX_WINDOW) return is_lie(c, "a bad WINDOW");
      /* The agent returns credit for bytes it consumed, never more than it was sent: a
       * grant past that (credit beyond the HELLO's in_window) is a lie. */
      if (r->returned_in + inc > r->sent_in) return is_lie(c, "a WINDOW for more bytes than it was sent");
      r->returned_in += inc;
      r->credit_in += inc;
      pump_notify(r);
      return 0;
    }
    case AW_T_STARTED:
      if (!(req_frames(r->type) & RQ_STARTED) || aw_dec_started(p, h->len, &ev.started) != AW_OK)
        return is_lie(c, "a bad STARTED");
      ev.type = AE_STARTED;
      if (!r->cancelled) r->fn(r, &ev, r->ud);
      return 0;
    case AW_T_EXITED:
      if (!(req_frames(r->type) & RQ_EXITED) || aw_dec_exited(p, h->len, &ev.exit) != AW_OK)
        return is_lie(c, "a bad EXITED");
      ev.type = AE_EXITED;
      if (!r->cancelled) r->fn(r, &ev, r->ud);
      return 0;
    case AW_T_ERROR:
      if (aw_dec_error(p, h->len, &ev.error) != AW_OK) return is_lie(c, "a bad ERROR");
      ev.type = AE_ERROR;
      req_finish(r, &ev);
      return 0;
    case AW_T_RESULT: {
      if (decode_result(r->type, p, h->len, &ev) != AW_OK) return is_lie(c, "a result that does not decode");
      ev.type = AE_RESULT;
      req_finish(r, &ev);
      return 0;
    }
    default:
      return is_lie(c, "an unexpected frame");
  }
}

/* One frame. 0 to go on, -1 when the connection failed. */
static int on_frame(agent_conn_t *c, const aw_header_t *h, const uint8_t *p) {
  c->last_rx_ms = now_ms();
  c->pings_unanswered = 0;
  switch (h->type) {
    case AW_T_HELLO:
      return on_hello(c, p, h->len);
    case AW_T_PONG:
      return on_pong(c, h, p);
    case AW_T_ERROR:
      if (h->id == 0) {
        /* The agent is about to exit; the stream's end will follow. */
        aw_error_t e;
        if (aw_dec_error(p, h->len, &e) == AW_OK) trace_event("agent says: %s", aw_error_name(e.kind));
        return 0;
      }
      /* fallthrough */
    default:
      if (c->state != ST_READY) return is_lie(c, "a frame before its HELLO");
      return on_req_frame(c, h, p);
  }
}

static void on_stream_data(void *ud, int stream, const uint8_t *data, size_t len) {
  agent_conn_t *c = ud;
  if (stream == 2) {
    /* Diagnostics: keep the last bytes for messages. */
    if (c->diag.len + len > STDERR_KEEP) buf_reset(&c->diag);
    buf_append(&c->diag, data, len > STDERR_KEEP ? STDERR_KEEP : len);
    trace_event("agent stderr: %.*s", (int)(len > 200 ? 200 : len), (const char *)data);
    return;
  }
  if (buf_append(&c->rx, data, len) != 0) {
    is_lie(c, "a frame larger than the protocol allows");
    return;
  }
  size_t off = 0;
  while (c->hj != NULL) {
    aw_header_t h;
    const uint8_t *payload = NULL;
    size_t frame_len = 0;
    int rc = aw_frame_parse(c->rx.data + off, c->rx.len - off, AW_FROM_AGENT, &h, &payload, &frame_len);
    if (rc == 0) break;
    if (rc < 0) {
      is_lie(c, aw_status_str(rc));
      return;
    }
    off += frame_len;
    if (on_frame(c, &h, payload) != 0) return; /* failed: rx was reset */
  }
  if (c->hj != NULL) buf_consume(&c->rx, off);
}

static void on_stream_end(void *ud, err_t *err) {
  agent_conn_t *c = ud;
  int before_hello = !c->said_hello; /* READY implies a HELLO came */
  err_t e = ERR_INIT;
  const char *said = diag_text(c);
  if (before_hello)
    err_sandbox(&e, CODE_DOCKER_COMMAND_FAILED, "The sandbox agent did not start%s%s%s", said[0] ? ": " : "", said,
                err && err->message ? "" : ".");
  else
    err_sandbox(&e, CODE_DOCKER_COMMAND_FAILED, "The sandbox agent's connection ended%s%s%s",
                err && err->message ? ": " : "", err && err->message ? err->message : "", said[0] ? " (agent: " : "");
  if (!before_hello && said[0]) {
    buf_t m;
    buf_init(&m, 0);
    if (buf_printf(&m, "%s%s)", e.message, said) == 0 && buf_terminate(&m) == 0) {
      free(e.message);
      e.message = (char *)buf_steal(&m, NULL);
    }
    buf_free(&m);
  }
  /* An agent that never said HELLO cannot run in this container (noexec, wrong binary). */
  conn_fail(c, &e, before_hello);
}

static const hijack_callbacks_t stream_cbs = {.on_data = on_stream_data, .on_end = on_stream_end, .on_written = on_written};

/* ---- heartbeat ---- */

static void on_tick(void *ud);

static void arm_timer(agent_conn_t *c, uint64_t ms) {
  sbx_timer_cancel(c->timer);
  c->timer = sbx_timer_start(c->io, ms, on_tick, c);
  sbx_timer_unref(c->timer); /* never keeps Node alive by itself */
}

/* The engine's answer about the agent's exec: one that is no longer running is dead,
 * whatever its connection says. */
static void on_probe(http_req_t *req, void *ud) {
  agent_conn_t *c = ud;
  c->probe = NULL;
  err_t err = ERR_INIT;
  json_t *ins = http_req_ok(req) ? http_req_json(req, &err) : NULL;
  int gone = http_req_not_found(req) || (json_is_object(ins) && json_is_false(json_object_get(ins, "Running")));
  json_decref(ins);
  err_clear(&err);
  http_req_free(req);
  if (gone && c->state == ST_READY) fail_with(c, 0, "The sandbox agent is no longer running%s.", "");
}

/*
 * Pings unanswered while requests wait: ask the engine whether the agent's exec still runs.
 * A container restarted under it (resumeSandbox from another client) ends the agent, and
 * some runtimes (gVisor's runsc) then leave its attached stream open: without this, the
 * requests would wait for the heartbeat's verdict (three pings, up to 20 s).
 */
static void probe_exec(agent_conn_t *c) {
  if (c->probe != NULL || c->exec_id == NULL) return;
  char *id = url_escape(c->exec_id);
  http_req_t *req = id ? http_req_new(c->eng, "GET", "/exec/%s/json", id) : NULL;
  free(id);
  if (req == NULL) return; /* out of memory: the heartbeat still decides */
  http_req_set_limit(req, 256 * 1024);
  err_t err = ERR_INIT;
  if (http_req_start(req, on_probe, c, &err) == 0) {
    c->probe = req;
  } else {
    http_req_free(req);
    err_clear(&err);
  }
}

static void on_tick(void *ud) {
  agent_conn_t *c = ud;
  c->timer = NULL;
  if (c->tx_overflow && (c->state == ST_READY || c->state == ST_HELLO)) {
    fail_with(c, 0, "%s", TX_OVERFLOW_MSG);
    return;
  }
  if (c->state == ST_HELLO && !c->said_hello) {
    fail_with(c, 1, "The sandbox agent did not answer within %s ms.", "15000");
    return;
  }
  if (c->state == ST_HELLO) {
    /* It started and speaks, but what is sent to it does not arrive: not this container's
     * fault for good (counted against AGENT_MAX_RETRIES like any failed connection). */
    fail_with(c, 0, "The sandbox agent's input did not arrive within %s ms.", "15000");
    return;
  }
  if (c->state != ST_READY) return;
  if (c->nreqs > 0 && c->pings_unanswered >= 3) {
    fail_with(c, 0, "The sandbox agent stopped answering%s.", "");
    return;
  }
  if (c->nreqs > 0 && c->pings_unanswered >= 1) probe_exec(c);
  c->pings_unanswered++;
  send_small(c, put_ping, NULL);
  arm_timer(c, AGENT_HEARTBEAT_MS);
}

/* ---- connecting ---- */

static void on_created(http_req_t *req, void *ud) {
  agent_conn_t *c = ud;
  c->req = NULL;
  err_t err = ERR_INIT;
  c->exec_id = http_req_reply_id(req, "Docker engine returned no exec id.", &err);
  http_req_free(req);
  if (err_is_set(&err)) {
    conn_fail(c, &err, 0);
    return;
  }
  c->state = ST_HELLO;
  c->hj = hijack_start(c->eng, c->exec_id, 0, &stream_cbs, c, &err);
  if (c->hj == NULL) {
    conn_fail(c, &err, 0);
    return;
  }
  send_small(c, put_host_hello, NULL);
  uint32_t connect_ping = PING_CONNECT;
  send_small(c, put_ping, &connect_ping);
  arm_timer(c, AGENT_HELLO_TIMEOUT_MS);
  /* The HELLO deadline is on_tick's first job; the HELLO starts the heartbeat. */
}

static void start_exec(agent_conn_t *c) {
  char hb[16];
  snprintf(hb, sizeof(hb), "%u", AGENT_SILENCE_MS);
  json_t *body = json_pack("{s:b, s:b, s:b, s:b, s:[s, s, s, s, s], s:s}", "AttachStdin", 1, "AttachStdout", 1,
                           "AttachStderr", 1, "Tty", 0, "Cmd", c->img->path, "--workdir", c->workdir, "--heartbeat-ms",
                           hb, "WorkingDir", "/");
  char *name = url_escape(c->container);
  http_req_t *req = name && body ? http_req_new(c->eng, "POST", "/containers/%s/exec", name) : NULL;
  free(name);
  err_t err = ERR_INIT;
  if (req == NULL || http_req_set_json(req, body) != 0) {
    if (req == NULL) json_decref(body);
    http_req_free(req);
    err_oom(&err);
    conn_fail(c, &err, 0);
    return;
  }
  c->state = ST_CREATE;
  c->req = req;
  if (http_req_start(req, on_created, c, &err) != 0) {
    c->req = NULL;
    http_req_free(req);
    conn_fail(c, &err, 0);
  }
}

static void on_placed_by_exec(void *ud, exec_result_t *r, err_t *err) {
  agent_conn_t *c = ud;
  c->placer = NULL;
  int ok = err == NULL && r != NULL && !r->timed_out && r->exit_code == 0;
  exec_result_free(r);
  if (err != NULL) {
    err_t copy = ERR_INIT;
    err_move(&copy, err);
    conn_fail(c, &copy, 0);
    return;
  }
  if (!ok) {
    fail_with(c, 1, "The sandbox agent cannot be placed in a read-only rootfs without its tmpfs (or without sh)%s.", "");
    return;
  }
  start_exec(c);
}

/* Read-only rootfs: an exec as uid 0 writes the binary into the /.anvia tmpfs. */
static void place_by_exec(agent_conn_t *c) {
  exec_spec_t spec;
  memset(&spec, 0, sizeof(spec));
  const char *argv[] = {"/bin/sh", "-c", PLACE_AGENT_SH, "anvia-place-agent", c->img->path};
  err_t err = ERR_INIT;
  spec.workdir = strdup("/");
  spec.user = strdup("0");
  spec.input = malloc(c->img->len ? c->img->len : 1);
  int env_ok = 1;
  for (size_t i = 0; env_ok && i < ROOT_EXEC_ENVC; i++) {
    const char *eq = strchr(ROOT_EXEC_ENV[i], '=');
    char key[32];
    snprintf(key, sizeof(key), "%.*s", (int)(eq - ROOT_EXEC_ENV[i]), ROOT_EXEC_ENV[i]);
    env_ok = exec_spec_add_env(&spec, key, eq + 1) == 0;
  }
  if (!env_ok || spec.workdir == NULL || spec.user == NULL || spec.input == NULL ||
      exec_spec_set_argv(&spec, argv, 5) != 0) {
    exec_spec_free(&spec);
    err_oom(&err);
    conn_fail(c, &err, 0);
    return;
  }
  memcpy(spec.input, c->img->data, c->img->len);
  spec.input_len = c->img->len;
  spec.has_input = 1;
  spec.timeout_ms = 30000;
  spec.max_output = 4096;
  exec_callbacks_t cbs = {.on_done = on_placed_by_exec};
  c->state = ST_PLACE;
  c->placer = exec_task_start(c->eng, c->container, &spec, &cbs, c, &err);
  exec_spec_free(&spec);
  if (c->placer == NULL) conn_fail(c, &err, 0);
}

static void on_uploaded(http_req_t *req, void *ud) {
  agent_conn_t *c = ud;
  c->req = NULL;
  if (http_req_ok(req)) {
    http_req_free(req);
    start_exec(c);
    return;
  }
  err_t err = ERR_INIT;
  http_req_error(req, &err);
  int engine_down = err.code != NULL && strcmp(err.code, CODE_DOCKER_UNAVAILABLE) == 0;
  http_req_free(req);
  /* Refused by the container (read-only, /.anvia not a directory): not here, not ever. */
  conn_fail(c, &err, !engine_down);
}

/* Writable rootfs: /.anvia/agent-<hash> (0755, root's) through the archive endpoint. */
static void place_by_upload(agent_conn_t *c) {
  err_t err = ERR_INIT;
  http_req_t *req = agent_upload_req(c->eng, c->container, c->img, strrchr(c->img->path, '/') + 1, &err);
  if (req == NULL) {
    conn_fail(c, &err, 0);
    return;
  }
  c->state = ST_PLACE;
  c->req = req;
  if (http_req_start(req, on_uploaded, c, &err) != 0) {
    c->req = NULL;
    http_req_free(req);
    conn_fail(c, &err, 0);
  }
}

static void on_probed(http_req_t *req, void *ud) {
  agent_conn_t *c = ud;
  c->req = NULL;
  int there = http_req_ok(req), missing = http_req_not_found(req);
  err_t err = ERR_INIT;
  if (!there && !missing) http_req_error(req, &err);
  http_req_free(req);
  if (err_is_set(&err)) conn_fail(c, &err, 0);
  else if (there) start_exec(c);
  else place_by_upload(c);
}

static void place(agent_conn_t *c) {
  err_t err = ERR_INIT;
  c->img = agent_place_image(c->eng, &err);
  if (c->img == NULL) {
    conn_fail(c, &err, 1);
    return;
  }
  if (c->readonly) {
    place_by_exec(c);
    return;
  }
  char *name = url_escape(c->container), *path = url_escape(c->img->path);
  http_req_t *req = name && path ? http_req_new(c->eng, "HEAD", "/containers/%s/archive?path=%s", name, path) : NULL;
  free(name);
  free(path);
  if (req == NULL) {
    err_oom(&err);
    conn_fail(c, &err, 0);
    return;
  }
  c->state = ST_PROBE;
  c->req = req;
  if (http_req_start(req, on_probed, c, &err) != 0) {
    c->req = NULL;
    http_req_free(req);
    conn_fail(c, &err, 0);
  }
}

static void on_version(http_req_t *req, void *ud) {
  agent_conn_t *c = ud;
  c->req = NULL;
  err_t err = ERR_INIT;
  int rc = agent_version_answer(c->eng, req, &err);
  http_req_free(req);
  if (rc != 0) conn_fail(c, &err, 0);
  else place(c);
}

static void connect_step(agent_conn_t *c) {
  err_t err = ERR_INIT;
  if (c->io == NULL) return; /* the environment is gone */
  if (engine_arch(c->eng) != NULL) {
    place(c);
    return;
  }
  http_req_t *req = agent_version_req(c->eng);
  if (req == NULL) {
    err_oom(&err);
    conn_fail(c, &err, 0);
    return;
  }
  c->state = ST_VERSION;
  c->req = req;
  if (http_req_start(req, on_version, c, &err) != 0) {
    c->req = NULL;
    http_req_free(req);
    conn_fail(c, &err, 0);
  }
}

/* ---- the public side ---- */

static void io_unlink(agent_conn_t *c) {
  if (c->io == NULL) return;
  if (c->io_prev) c->io_prev->io_next = c->io_next;
  else if (c->io->agent_conns == c) c->io->agent_conns = c->io_next;
  if (c->io_next) c->io_next->io_prev = c->io_prev;
  c->io_prev = c->io_next = NULL;
}

/* The environment ends: every connection is dropped (no callback reaches JavaScript: the
 * operations were torn down first), and none touches the I/O context again. */
static void conns_teardown(io_t *io) {
  while (io->agent_conns) {
    agent_conn_t *c = io->agent_conns;
    io_unlink(c);
    drop_connection(c);
    c->io = NULL;
    c->state = ST_UNUSABLE;
    err_t err = ERR_INIT;
    err_sandbox(&err, CODE_INVALID_STATE, "The addon is shutting down.");
    fail_requests(c, &err);
    wake_waiters(c, &err);
    if (!err_is_set(&c->why)) err_move(&c->why, &err);
    err_clear(&err);
  }
}

agent_conn_t *agent_conn_new(engine_t *eng, const char *container, const char *workdir, int readonly_rootfs) {
  agent_conn_t *c = calloc(1, sizeof(*c));
  if (c == NULL) return NULL;
  c->eng = eng;
  engine_ref(eng);
  c->io = engine_io(eng);
  if (c->io->closing || io_on_close(c->io, conns_teardown) != 0) {
    engine_unref(eng);
    free(c);
    return NULL;
  }
  c->io_next = c->io->agent_conns;
  if (c->io_next) c->io_next->io_prev = c;
  c->io->agent_conns = c;
  c->container = strdup(container);
  c->workdir = strdup(workdir);
  c->readonly = readonly_rootfs;
  err_init(&c->why);
  waiters_init(&c->waiters);
  buf_init(&c->rx, RX_LIMIT);
  buf_init(&c->diag, 0);
  if (c->container == NULL || c->workdir == NULL) {
    agent_conn_free(c);
    return NULL;
  }
  return c;
}

void agent_conn_free(agent_conn_t *c) {
  if (c == NULL) return;
  io_unlink(c);
  err_t err = ERR_INIT;
  err_sandbox(&err, CODE_INVALID_STATE, "The sandbox agent's connection was closed.");
  drop_connection(c);
  fail_requests(c, &err);
  wake_waiters(c, &err);
  err_clear(&err);
  err_clear(&c->why);
  buf_free(&c->rx);
  buf_free(&c->diag);
  engine_unref(c->eng);
  free(c->container);
  free(c->workdir);
  free(c);
}

int agent_conn_when_ready(agent_conn_t *c, agent_waiter_t *w, err_t *err) {
  if (c->state == ST_READY) return 1;
  if (c->state == ST_UNUSABLE) {
    err_set(err, c->why.kind, c->why.code, "%s", c->why.message ? c->why.message : "The sandbox agent cannot run here.");
    return -1;
  }
  waiter_push(&c->waiters, w);
  if (c->state == ST_IDLE || c->state == ST_DEAD) {
    buf_reset(&c->diag);
    connect_step(c);
  }
  return 0;
}

void agent_conn_cancel_wait(agent_conn_t *c, agent_waiter_t *w) {
  (void)c;
  if (w->next != NULL) waiter_unlink(w);
}

int agent_conn_unusable(const agent_conn_t *c) { return c->state == ST_UNUSABLE; }

int agent_conn_is_ready(const agent_conn_t *c) { return c != NULL && c->state == ST_READY; }

void agent_conn_shutdown(agent_conn_t *c) {
  if (c == NULL || c->state == ST_UNUSABLE || c->state == ST_IDLE || c->state == ST_DEAD) return;
  err_t err = ERR_INIT;
  err_sandbox(&err, CODE_INVALID_STATE, "The sandbox agent was shut down.");
  drop_connection(c);
  c->state = ST_IDLE;
  agent_waiter_t waiting;
  waiters_take(c, &waiting);
  fail_requests(c, &err);
  wake_list(&waiting, &err);
  err_clear(&err);
}
