/*
 * procfs.c - parsers of what the kernel says about processes and sockets: one
 * /proc/<pid>/stat line (pid, state, parent, group, session), the /proc/net/tcp and tcp6
 * tables (is a port in state LISTEN), and a sock_diag dump's datagrams (diag.c asks for
 * them: the same question, answered from the kernel's listening hash instead of a walk of
 * every TCP socket). Pure functions over bytes: no I/O, no allocation, no global state, so
 * the unit tests and a fuzzer can drive them directly.
 *
 * Owns: nothing. Every read is bounded by the length given; a /proc/net/tcp line longer
 * than the carry buffer is skipped whole.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <string.h>

#include "agent.h"

static int parse_int(const char **p, const char *end, long *out) {
  const char *s = *p;
  while (s < end && *s == ' ') s++;
  int neg = 0;
  if (s < end && *s == '-') {
    neg = 1;
    s++;
  }
  if (s >= end || !isdigit((unsigned char)*s)) return -1;
  long v = 0;
  while (s < end && isdigit((unsigned char)*s)) {
    if (v > 100000000) return -1;
    v = v * 10 + (*s - '0');
    s++;
  }
  *out = neg ? -v : v;
  *p = s;
  return 0;
}

int procfs_stat_parse(const char *text, size_t len, proc_stat_t *out) {
  const char *end = text + len;
  const char *p = text;
  long pid;
  if (parse_int(&p, end, &pid) < 0) return -1;
  /* comm may hold spaces and parentheses: the state follows the last ')'. */
  const char *close = NULL;
  for (const char *q = end; q > p; q--)
    if (q[-1] == ')') {
      close = q - 1;
      break;
    }
  if (close == NULL) return -1;
  p = close + 1;
  while (p < end && *p == ' ') p++;
  if (p >= end) return -1;
  char state = *p++;
  long ppid, pgrp, session;
  if (parse_int(&p, end, &ppid) < 0 || parse_int(&p, end, &pgrp) < 0 || parse_int(&p, end, &session) < 0) return -1;
  out->pid = (pid_t)pid;
  out->state = state;
  out->ppid = (pid_t)ppid;
  out->pgrp = (pid_t)pgrp;
  out->session = (pid_t)session;
  return 0;
}

void procfs_tcp_scan_init(tcp_scan_t *s, uint16_t port) {
  memset(s, 0, sizeof(*s));
  s->port = port;
}

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* "  N: ADDR:PORT ADDR:PORT ST ..." */
static void scan_line(tcp_scan_t *s, const char *p, size_t len) {
  const char *end = p + len;
  while (p < end && *p == ' ') p++;
  const char *q = p;
  while (p < end && *p >= '0' && *p <= '9') p++;
  if (p == q || p >= end || *p != ':') return;
  p++;
  while (p < end && *p == ' ') p++;
  /* local address: hex digits, ':', four hex digits */
  q = p;
  while (p < end && hexval(*p) >= 0) p++;
  if (p == q || p >= end || *p != ':') return;
  p++;
  unsigned port = 0;
  int digits = 0;
  while (p < end && hexval(*p) >= 0 && digits < 5) {
    port = port * 16 + (unsigned)hexval(*p);
    p++;
    digits++;
  }
  if (digits != 4 || p >= end || *p != ' ') return;
  while (p < end && *p == ' ') p++;
  /* remote address */
  q = p;
  while (p < end && *p != ' ') p++;
  if (p == q) return;
  while (p < end && *p == ' ') p++;
  if (end - p < 2 || hexval(p[0]) < 0 || hexval(p[1]) < 0) return;
  unsigned st = (unsigned)(hexval(p[0]) * 16 + hexval(p[1]));
  if (st != 0x0A) return;
  if (port == s->port) s->found = 1;
  if (s->listening) procfs_port_set(s->listening, port);
}

void procfs_tcp_scan_feed(tcp_scan_t *s, const char *p, size_t len) {
  while (len > 0) {
    const char *nl = memchr(p, '\n', len);
    size_t take = nl ? (size_t)(nl - p) : len;
    if (!s->overlong) {
      if (s->carry_len + take <= sizeof(s->carry)) {
        memcpy(s->carry + s->carry_len, p, take);
        s->carry_len += take;
      } else {
        s->overlong = 1;
      }
    }
    if (nl == NULL) return;
    if (!s->overlong) scan_line(s, s->carry, s->carry_len);
    s->carry_len = 0;
    s->overlong = 0;
    p = nl + 1;
    len -= take + 1;
  }
}

void procfs_tcp_scan_end(tcp_scan_t *s) {
  if (!s->overlong && s->carry_len) scan_line(s, s->carry, s->carry_len);
  s->carry_len = 0;
  s->overlong = 0;
}

int procfs_diag_parse(const uint8_t *p, size_t len, uint8_t *listening, int *err) {
  size_t off = 0;
  while (off < len) {
    diag_nlhdr_t h;
    if (len - off < sizeof(h)) break;
    memcpy(&h, p + off, sizeof(h));
    if (h.len < sizeof(h) || h.len > len - off) break;
    if (h.type == DIAG_NLMSG_DONE) return 1;
    if (h.type == DIAG_NLMSG_ERROR) {
      int32_t e = 0;
      if (h.len >= sizeof(h) + sizeof(e)) memcpy(&e, p + off + sizeof(h), sizeof(e));
      *err = e < 0 && e > -4096 ? (int)-e : EPROTO;
      return -1;
    }
    if (h.type == DIAG_SOCK_DIAG_BY_FAMILY) {
      diag_msg_t m;
      if (h.len < sizeof(h) + sizeof(m)) break;
      memcpy(&m, p + off + sizeof(h), sizeof(m));
      if (m.state == DIAG_TCP_LISTEN) procfs_port_set(listening, ntohs(m.id.sport));
    }
    /* Messages are 4-byte aligned; the last one may end without its padding. */
    size_t step = ((size_t)h.len + 3) & ~(size_t)3;
    off += step < len - off ? step : len - off;
  }
  if (off == len) return 0;
  *err = EPROTO;
  return -1;
}
