/*
 * out.c - the output side of the host connection: the output queue, the frames every
 * other file sends through it (HELLO, PONG, ERROR, WINDOW, and any frame written between
 * out_frame_begin and out_frame_end), and flushing it to stdout.
 *
 * Owns: g.out (the output queue) and g.out_broken. Frames are appended to g.out in the
 * order they are made, so the frames of one request keep their order (STARTED, DATA,
 * EXITED, RESULT). A frame that cannot be queued (the queue would pass AG_OUT_CAP, or
 * memory ran out) and a write error on stdout both start the exit path (shutdown.c);
 * nothing is queued after that.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"

/* ---- the queue ---- */

uint8_t *out_reserve(size_t n) {
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

void out_commit(size_t n) { g.out.len += n; }

int out_flush(void) {
  outq_t *q = &g.out;
  while (q->len > 0 && !g.out_broken) {
    ssize_t w = write(g.out_fd, q->buf + q->head, q->len);
    if (w < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) return 0;
      g.out_broken = 1;
      q->len = 0;
      q->head = 0;
      shutdown_begin(0, "output closed");
      return -1;
    }
    q->head += (size_t)w;
    q->len -= (size_t)w;
  }
  if (q->len == 0) q->head = 0;
  return g.out_broken ? -1 : 0;
}

/* stdout hung up before the queue could be written: the connection is over. */
void out_hangup(void) {
  g.out_broken = 1;
  g.out.len = 0;
  shutdown_begin(0, "output closed");
}

/* A frame that could not be queued means the host has stopped reading for long enough
 * to fill AG_OUT_CAP (or memory ran out): the connection is over. */
static void queue_failed(void) {
  util_log("output queue full or out of memory: exiting");
  g.out_broken = 1;
  g.out.len = 0;
  shutdown_begin(3, "output queue");
}

/* Runs `put` on a writer over reserved space of `max` bytes and commits what it wrote. */
#define QUEUE(max, expr)                                                                  \
  do {                                                                                    \
    if (g.out_broken) break;                                                              \
    uint8_t *buf_ = out_reserve(max);                                                    \
    if (buf_ == NULL) {                                                                   \
      queue_failed();                                                                     \
      break;                                                                              \
    }                                                                                     \
    aw_writer_t w_;                                                                       \
    aw_w_init(&w_, buf_, max);                                                            \
    aw_writer_t *w = &w_;                                                                 \
    if ((expr) == AW_OK) out_commit(w_.len);                                             \
    else util_log("could not encode a frame (%s)", #expr);                                  \
  } while (0)

/* ---- frames ---- */

void out_hello(void) {
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
  QUEUE(512, aw_put_hello(w, 0, &h));
}

void out_error(uint32_t id, const ag_err_t *e) {
  aw_error_t m;
  m.kind = e->kind;
  m.stage = e->stage;
  m.err = e->err;
  m.value = e->value;
  m.detail.p = (const uint8_t *)e->detail;
  m.detail.len = (uint32_t)e->detail_len;
  QUEUE(AW_HEADER_LEN + 32 + e->detail_len, aw_put_error(w, id, &m));
}

int out_refused(uint32_t id, int rc, const char *what) {
  if (rc == AW_OK) return 0;
  ag_err_t e;
  ag_err_decode(&e, rc, what);
  out_error(id, &e);
  return 1;
}

void out_error_simple(uint32_t id, uint16_t kind, int errnum, const char *detail) {
  ag_err_t e;
  ag_err_set(&e, kind, errnum, "%s", detail ? detail : "");
  out_error(id, &e);
}

void out_window(uint32_t id, uint8_t stream, uint32_t inc) {
  QUEUE(AW_HEADER_LEN + 4, aw_put_window(w, id, stream, inc));
}

int out_frame_begin(aw_writer_t *w, size_t max) {
  if (g.out_broken) return 0;
  uint8_t *b = out_reserve(max);
  if (b == NULL) {
    queue_failed();
    return 0;
  }
  aw_w_init(w, b, max);
  return 1;
}

void out_frame_end(aw_writer_t *w, int rc) {
  if (rc == AW_OK) out_commit(w->len);
  else util_log("could not encode a frame: %s", aw_status_str(rc));
}

void out_pong(uint32_t id, const uint8_t *p, size_t len) {
  QUEUE(AW_HEADER_LEN + AW_MAX_PING, aw_put_ping(w, AW_T_PONG, id, p, len));
}
