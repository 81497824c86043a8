/*
 * conn.c - the host connection: reading and checking the host's frames, dispatching
 * them, the output queue, and the round-robin scheduler that interleaves data frames.
 *
 * Owns: g.inbuf (allocated once in main.c, filled and compacted here) and g.out (the
 * output queue). Frames the agent writes are appended to g.out in the order they are
 * made, so the frames of one request keep their order (STARTED, DATA, EXITED, RESULT).
 * Small frames are appended at once; data frames only while the queue holds less than
 * AG_OUT_HIGH, one frame per source per round, so a reply to a small request waits behind
 * at most that much. The host's frames are processed only while the queue holds less
 * than AG_OUT_PAUSE_IN: a host that does not read stops being read.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"

#define IN_CAP (AW_HEADER_LEN + AW_MAX_PAYLOAD + 65536u)

/* ---- output queue ---- */

uint8_t *outq_reserve(size_t n) {
  outq_t *q = &g.out;
  if (q->len + n > AG_OUT_CAP) return NULL;
  if (q->head + q->len + n > q->cap) {
    if (q->head > 0) {
      memmove(q->buf, q->buf + q->head, q->len);
      q->head = 0;
    }
    if (q->len + n > q->cap) {
      size_t cap = q->cap ? q->cap : 65536;
      while (cap < q->len + n) cap *= 2;
      if (cap > AG_OUT_CAP) cap = AG_OUT_CAP;
      uint8_t *nb = realloc(q->buf, cap);
      if (nb == NULL) return NULL;
      q->buf = nb;
      q->cap = cap;
    }
  }
  return q->buf + q->head + q->len;
}

void outq_commit(size_t n) { g.out.len += n; }

int conn_flush(void) {
  outq_t *q = &g.out;
  while (q->len > 0 && !g.out_broken) {
    ssize_t w = write(g.out_fd, q->buf + q->head, q->len);
    if (w < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) return 0;
      g.out_broken = 1;
      q->len = 0;
      q->head = 0;
      agent_shutdown(0, "output closed");
      return -1;
    }
    q->head += (size_t)w;
    q->len -= (size_t)w;
  }
  if (q->len == 0) q->head = 0;
  return g.out_broken ? -1 : 0;
}

/* A frame that could not be queued means the host has stopped reading for long enough
 * to fill AG_OUT_CAP (or memory ran out): the connection is over. */
static void queue_failed(void) {
  ag_log("output queue full or out of memory: exiting");
  g.out_broken = 1;
  g.out.len = 0;
  agent_shutdown(3, "output queue");
}

/* Runs `put` on a writer over reserved space of `max` bytes and commits what it wrote. */
#define QUEUE(max, expr)                                                                  \
  do {                                                                                    \
    if (g.out_broken) break;                                                              \
    uint8_t *buf_ = outq_reserve(max);                                                    \
    if (buf_ == NULL) {                                                                   \
      queue_failed();                                                                     \
      break;                                                                              \
    }                                                                                     \
    aw_writer_t w_;                                                                       \
    aw_w_init(&w_, buf_, max);                                                            \
    aw_writer_t *w = &w_;                                                                 \
    if ((expr) == AW_OK) outq_commit(w_.len);                                             \
    else ag_log("could not encode a frame (%s)", #expr);                                  \
  } while (0)

void send_hello(void) {
  aw_hello_t h;
  memset(&h, 0, sizeof(h));
  h.magic = AW_MAGIC;
  h.version_min = AW_VERSION;
  h.version_max = AW_VERSION;
  h.max_payload = AW_MAX_PAYLOAD;
  h.max_data = AW_MAX_DATA;
  h.in_window = AW_IN_WINDOW;
  h.max_requests = AW_MAX_REQUESTS;
  h.caps = g.caps | (g.use_openat2 ? AW_CAP_OPENAT2 : 0) | (g.proc_ok ? AW_CAP_PROC : 0);
  h.pid = (uint32_t)g.self;
  h.uid = (uint32_t)geteuid();
  h.gid = (uint32_t)getegid();
  h.heartbeat_ms = g.heartbeat_ms;
#ifndef AGENT_BUILD
#define AGENT_BUILD "dev"
#endif
#if defined(__x86_64__)
  static const char arch[] = "x86_64";
#elif defined(__aarch64__)
  static const char arch[] = "aarch64";
#else
  static const char arch[] = "unknown";
#endif
  h.build.p = (const uint8_t *)AGENT_BUILD;
  h.build.len = (uint32_t)strlen(AGENT_BUILD);
  if (h.build.len > AW_MAX_BUILD) h.build.len = AW_MAX_BUILD;
  h.arch.p = (const uint8_t *)arch;
  h.arch.len = (uint32_t)strlen(arch);
  QUEUE(512, aw_put_hello(w, &h));
}

void send_error(uint32_t id, const ag_err_t *e) {
  aw_error_t m;
  m.kind = e->kind;
  m.stage = e->stage;
  m.err = e->err;
  m.value = e->value;
  m.detail.p = (const uint8_t *)e->detail;
  m.detail.len = (uint32_t)e->detail_len;
  QUEUE(AW_HEADER_LEN + 32 + e->detail_len, aw_put_error(w, id, &m));
}

void send_error_simple(uint32_t id, uint16_t kind, int errnum, const char *detail) {
  ag_err_t e;
  err_set(&e, kind, errnum, "%s", detail ? detail : "");
  send_error(id, &e);
}

void send_window(uint32_t id, uint8_t stream, uint32_t inc) {
  QUEUE(AW_HEADER_LEN + 4, aw_put_window(w, id, stream, inc));
}

int frame_begin(aw_writer_t *w, size_t max) {
  if (g.out_broken) return 0;
  uint8_t *b = outq_reserve(max);
  if (b == NULL) {
    queue_failed();
    return 0;
  }
  aw_w_init(w, b, max);
  return 1;
}

void frame_end(aw_writer_t *w, int rc) {
  if (rc == AW_OK) outq_commit(w->len);
  else ag_log("could not encode a frame: %s", aw_status_str(rc));
}

static void send_pong(uint32_t id, const uint8_t *p, size_t len) {
  QUEUE(AW_HEADER_LEN + AW_MAX_PING, aw_put_ping(w, AW_T_PONG, id, p, len));
}

/* ---- dispatch ---- */

static void fatal_protocol(const char *what, int status) {
  g.in_dead = 1;
  g.in_len = 0;
  ag_err_t e;
  err_set(&e, AW_E_PROTOCOL, 0, "%s: %s", what, aw_status_str(status));
  send_error(0, &e);
  ag_log("protocol error from the host: %s: %s", what, aw_status_str(status));
  agent_shutdown(3, "protocol error");
}

static void on_host_hello(const uint8_t *p, size_t len) {
  aw_host_hello_t m;
  int rc = aw_dec_host_hello(p, len, &m);
  if (rc != AW_OK) {
    fatal_protocol("HOST_HELLO", rc);
    return;
  }
  if (m.version_min > AW_VERSION || m.version_max < AW_VERSION) {
    ag_err_t e;
    err_set(&e, AW_E_VERSION, 0, "the agent speaks version %u only; the host %u..%u", AW_VERSION,
            (unsigned)m.version_min, (unsigned)m.version_max);
    e.value = AW_VERSION;
    send_error(0, &e);
    agent_shutdown(3, "no common version");
    return;
  }
  g.hello_done = 1;
}

static void on_request(const aw_header_t *h, const uint8_t *p) {
  if (g.shutting_down) {
    send_error_simple(h->id, AW_E_SHUTDOWN, 0, "the agent is exiting");
    return;
  }
  if (req_find(h->id) != NULL) {
    send_error_simple(h->id, AW_E_DUPLICATE_ID, 0, "a request with this id is in flight");
    return;
  }
  if (g.nreq >= AW_MAX_REQUESTS) {
    ag_err_t e;
    err_set(&e, AW_E_LIMIT, 0, "too many requests in flight");
    e.value = AW_MAX_REQUESTS;
    send_error(h->id, &e);
    return;
  }
  switch (h->type) {
  case AW_T_EXEC: exec_start(h->id, p, h->len); break;
  case AW_T_READ: read_start(h->id, p, h->len); break;
  case AW_T_WRITE: write_start(h->id, p, h->len); break;
  case AW_T_MKDIR: mkdir_run(h->id, p, h->len); break;
  case AW_T_LIST: list_start(h->id, p, h->len); break;
  case AW_T_PORT_WAIT: port_start(h->id, p, h->len); break;
  case AW_T_SIGNAL: signal_run(h->id, p, h->len); break;
  case AW_T_GROUP_ALIVE: alive_run(h->id, p, h->len); break;
  default: send_error_simple(h->id, AW_E_UNSUPPORTED, 0, aw_type_name(h->type)); break;
  }
}

static void dispatch(const aw_header_t *h, const uint8_t *p) {
  if (!g.hello_done) {
    if (h->type != AW_T_HOST_HELLO) {
      fatal_protocol("the first frame must be HOST_HELLO", AW_ERR_TYPE);
      return;
    }
    on_host_hello(p, h->len);
    return;
  }
  switch (h->type) {
  case AW_T_HOST_HELLO: fatal_protocol("HOST_HELLO sent twice", AW_ERR_TYPE); return;
  case AW_T_PING: {
    int rc = aw_dec_ping(p, h->len);
    if (rc != AW_OK && h->id == 0) fatal_protocol("PING", AW_ERR_LIMIT); /* an ERROR with id 0 ends the connection */
    else if (rc != AW_OK) send_error_simple(h->id, AW_E_LIMIT, 0, "PING payload over 64 bytes");
    else send_pong(h->id, p, h->len);
    return;
  }
  case AW_T_CANCEL: {
    req_t *r = req_find(h->id);
    if (r != NULL) req_cancel(r, AW_E_CANCELLED);
    return;
  }
  case AW_T_DATA: {
    req_t *r = req_find(h->id);
    if (r != NULL) req_on_data(r, h, p);
    return;
  }
  case AW_T_WINDOW: {
    uint32_t inc = 0;
    int rc = aw_dec_window(p, h->len, &inc);
    req_t *r = req_find(h->id);
    if (r == NULL) return;
    if (rc != AW_OK) {
      ag_err_t e;
      err_set(&e, AW_E_PROTOCOL, 0, "WINDOW: %s", aw_status_str(rc));
      send_error(h->id, &e);
      req_cancel(r, 0);
      return;
    }
    req_on_window(r, h, inc);
    return;
  }
  default: on_request(h, p); return;
  }
}

void conn_dispatch_pending(void) {
  size_t off = 0;
  while (!g.in_dead) {
    if (g.out.len >= AG_OUT_PAUSE_IN) break;
    aw_header_t h;
    const uint8_t *payload = NULL;
    size_t flen = 0;
    int rc = aw_frame_parse(g.inbuf + off, g.in_len - off, AW_FROM_HOST, &h, &payload, &flen);
    if (rc == 0) break;
    if (rc < 0) {
      fatal_protocol("frame header", rc);
      return;
    }
    off += flen;
    dispatch(&h, payload);
    if (g.in_dead) return;
  }
  if (off > 0) {
    memmove(g.inbuf, g.inbuf + off, g.in_len - off);
    g.in_len -= off;
  }
}

void conn_read(void) {
  for (;;) {
    if (g.in_len >= IN_CAP) break;
    ssize_t n = read(g.in_fd, g.inbuf + g.in_len, IN_CAP - g.in_len);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) break;
      g.in_eof = 1;
      break;
    }
    if (n == 0) {
      g.in_eof = 1;
      break;
    }
    g.in_len += (size_t)n;
    g.last_rx_ms = now_ms();
    conn_dispatch_pending();
    if (g.out.len >= AG_OUT_PAUSE_IN || g.in_dead) break;
  }
  conn_dispatch_pending();
  if (g.in_eof && g.in_len > 0) {
    /* A frame cut by the end of input: nothing more will come. */
    g.in_len = 0;
  }
}

/* ---- scheduling ---- */

static void move_to_tail(req_t *r) {
  if (g.tail == r) return;
  if (r->prev) r->prev->next = r->next;
  else g.head = r->next;
  if (r->next) r->next->prev = r->prev;
  r->prev = g.tail;
  r->next = NULL;
  g.tail->next = r;
  g.tail = r;
}

void schedule_output(void) {
  if (g.out_broken) return;
  for (;;) {
    int progressed = 0;
    size_t n = g.nrecords;
    req_t *r = g.head;
    for (size_t i = 0; i < n && r != NULL; i++) {
      req_t *next = r->next;
      int served = 0;
      for (int which = 0; which < r->nout; which++) {
        if (g.out.len >= AG_OUT_HIGH || g.out_broken) return;
        if (req_source_ready(r, which) && req_produce(r, which)) served = 1;
      }
      if (served) {
        progressed = 1;
        move_to_tail(r);
      }
      r = next;
    }
    if (!progressed) return;
  }
}
