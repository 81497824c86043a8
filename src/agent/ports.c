/*
 * ports.c - PORT_WAIT: is something listening on a TCP port, IPv4 and IPv6, polled at
 * an interval until found or timed out. Asked of the kernel's sock_diag (diag.c) while it
 * answers; where it does not (gVisor, qemu-user), from /proc/net/tcp and /proc/net/tcp6
 * (state 0A, LISTEN, with that local port), which say the same, slower.
 *
 * Owns: the snapshot of both families (a bitmap of listening ports each, refreshed at
 * most every 5 ms and shared by every wait) and its PORT_WAIT records' timers. The /proc
 * tables are read in 8 KiB pieces through the bounded line parser of procfs.c. A family
 * whose sock_diag query failed once is read from /proc from then on.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent.h"

/*
 * One snapshot of both tables serves every PORT_WAIT that checks within SNAP_MS of it:
 * a thousand waits cost one read of /proc/net/tcp per interval, not a thousand.
 */
#define SNAP_MS 5

typedef struct table {
  int family;
  const char *path;
  uint8_t listening[PORT_MAP_BYTES];
  int ok;                  /* read at the last snapshot */
  int err;                 /* its errno otherwise */
  int no_diag;             /* sock_diag failed once: /proc from now on */
} table_t;

static table_t tables[2] = {{AF_INET, "/proc/net/tcp", {0}, 0, 0, 0}, {AF_INET6, "/proc/net/tcp6", {0}, 0, 0, 0}};
static int64_t snap_ms = -1000;

static void table_read(table_t *t) {
  if (!t->no_diag) {
    int e;
    if (diag_listening(t->family, t->listening, &e) == 0) {
      t->ok = 1;
      return;
    }
    /* Not logged: the agent's stderr is what the host quotes as its last words. */
    t->no_diag = 1;
  }
  memset(t->listening, 0, sizeof(t->listening));
  int fd = open(t->path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    t->ok = 0;
    t->err = errno;
    return;
  }
  tcp_scan_t s;
  procfs_tcp_scan_init(&s, 0);
  s.listening = t->listening;
  char buf[8192];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    procfs_tcp_scan_feed(&s, buf, (size_t)n);
  }
  procfs_tcp_scan_end(&s);
  close(fd);
  t->ok = 1;
}

static int has_port(const table_t *t, uint16_t port) { return t->ok && procfs_port_has(t->listening, port); }

/* 0 with *families set, or -1 with *err when neither asked-for table can be read. */
static int port_check(uint16_t port, uint16_t flags, uint8_t *families, int *err) {
  int64_t now = util_now_ms();
  if (now - snap_ms >= SNAP_MS) {
    table_read(&tables[0]);
    table_read(&tables[1]);
    snap_ms = now;
  }
  if (flags == 0) flags = AW_PORT_V4 | AW_PORT_V6;
  *families = 0;
  int readable = 0;
  *err = ENOENT;
  if (flags & AW_PORT_V4) {
    if (tables[0].ok) readable = 1;
    else *err = tables[0].err;
    if (has_port(&tables[0], port)) *families |= AW_PORT_V4;
  }
  if (flags & AW_PORT_V6) {
    if (tables[1].ok) readable = 1;
    else if (!readable) *err = tables[1].err;
    if (has_port(&tables[1], port)) *families |= AW_PORT_V6;
  }
  return readable ? 0 : -1;
}

static void port_answer(uint32_t id, uint8_t families, int64_t start) {
  aw_port_res_t res;
  res.found = families ? 1 : 0;
  res.families = families;
  int64_t waited = util_now_ms() - start;
  res.waited_ms = waited > 0 ? (uint32_t)waited : 0;
  aw_writer_t w;
  if (out_frame_begin(&w, 64)) out_frame_end(&w, aw_put_port_result(&w, id, &res));
}

void port_start(uint32_t id, const uint8_t *p, size_t len) {
  aw_port_req_t m;
  if (out_refused(id, aw_dec_port_wait(p, len, &m), "PORT_WAIT")) return;
  int64_t start = util_now_ms();
  uint8_t fam;
  int err;
  if (port_check(m.port, m.flags, &fam, &err) < 0) {
    out_error_simple(id, AW_E_IO, err, "/proc/net/tcp");
    return;
  }
  if (fam || m.timeout_ms == 0) {
    port_answer(id, fam, start);
    return;
  }
  req_t *r = req_new(id, AW_T_PORT_WAIT);
  if (r == NULL) {
    out_error_simple(id, AW_E_RESOURCES, ENOMEM, "out of memory");
    return;
  }
  port_state_t *ps = &r->u.port;
  ps->port = m.port;
  ps->flags = m.flags;
  ps->start_ms = start;
  ps->deadline_ms = start + m.timeout_ms;
  ps->interval_ms = m.interval_ms ? m.interval_ms : 100;
  ps->next_ms = start + ps->interval_ms;
  if (ps->next_ms > ps->deadline_ms) ps->next_ms = ps->deadline_ms;
}

void port_timer(req_t *r, int64_t now) {
  port_state_t *ps = &r->u.port;
  if (r->finished || now < ps->next_ms) return;
  uint8_t fam;
  int err;
  if (port_check(ps->port, ps->flags, &fam, &err) < 0) {
    out_error_simple(r->id, AW_E_IO, err, "/proc/net/tcp");
    req_finish(r);
    return;
  }
  if (fam || now >= ps->deadline_ms) {
    port_answer(r->id, fam, ps->start_ms);
    req_finish(r);
    return;
  }
  ps->next_ms = now + ps->interval_ms;
  if (ps->next_ms > ps->deadline_ms) ps->next_ms = ps->deadline_ms;
}

int64_t port_due(const req_t *r) { return r->u.port.next_ms; }
