/*
 * keeper.c - a terminal's keeper: the process that holds one terminal (its pty master,
 * its program, its scrollback) and outlives the agent that started it, as dtach's master
 * process does; and the keeper's small protocol, spoken by term.c over a unix socket.
 *
 * Owns, in the keeper process (forked by term.c for TERM_OPEN; it never returns to the
 * agent's loop and changes nothing of `g` but `g.self`): the pty master, the program (its
 * child: the keeper reaps it, and as a subreaper whatever the program orphans), the
 * listening socket and its name in the terminals' directory (unlinked before the keeper
 * exits), the scrollback ring, and each client's connection and buffers.
 *
 * The keeper protocol: messages of an 8-byte header (u8 kind, u8 0, u16 0, u32 length,
 * big-endian) and at most KW_MAX_PAYLOAD bytes. A client may send ATTACH (u32 flags as
 * TERM_ATTACH's, u64 since) once, INPUT (bytes for the terminal), RESIZE (u16 cols, u16
 * rows), SIGNAL (u8 signal) and SYNC; the keeper answers ATTACH, RESIZE and SYNC with
 * INFO, SIGNAL with ACK (u8 delivered, u32 count), sends an attached OUTPUT client OUT
 * (u64 offset, the bytes) in order, and an OUTPUT or WAIT client END (INFO's layout) once
 * the terminal has ended and that client has every byte. FAIL (an ag_err) is the only
 * message of a keeper whose start failed. A message the keeper cannot parse closes that
 * client.
 *
 * Bounds: the scrollback is a ring of exactly the size TERM_OPEN asked (AW_MIN_SCROLLBACK
 * ..= AW_MAX_SCROLLBACK); each client holds one message read (KW_HEADER + KW_MAX_PAYLOAD)
 * and one being written (KW_HEADER + 8 + KW_OUT_MAX); input waits in one buffer of KW_OUT_MAX
 * for the terminal, and no client's message is read while it is full, so a program that
 * does not read its input holds its writers back through their sockets; at most
 * KP_MAX_CLIENTS clients at once (more wait in the listen backlog).
 *
 * Back-pressure: the master is read only while every attached OUTPUT client is less than
 * a scrollback behind, so such a client loses nothing (the program blocks as a pipe's
 * writer would); without one, the ring overwrites its oldest bytes and a later ATTACH
 * starts at the oldest byte kept (its first OUT's offset says so).
 *
 * The end: once the program is reaped and the master reads end of file (every holder of
 * the terminal closed it), or the master has been quiet for KP_DRAIN_MS since (something
 * the program left holds the terminal: that is killed), the terminal has ended. Quiet means
 * read and found empty: time the master spends held for a consumer does not count, nor does
 * a read that gave bytes, because a kernel may have taken more output than it holds back
 * (gVisor's pty takes every write at once, so its program can exit, and be reaped, with
 * megabytes of output still to read). The keeper then stays while
 * a client is connected and KP_LINGER_MS after the last one left, so another process can
 * still read the exit status and the scrollback; then it unlinks its name and exits.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "agent.h"

#define KP_MAX_CLIENTS 32
#define KP_DRAIN_MS 2000
#define KP_LINGER_MS 30000

/* ---- the keeper protocol ---- */

static void put16(uint8_t *p, uint16_t v) {
  p[0] = (uint8_t)(v >> 8);
  p[1] = (uint8_t)v;
}
static void put32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (24 - 8 * i));
}
static void put64(uint8_t *p, uint64_t v) {
  put32(p, (uint32_t)(v >> 32));
  put32(p + 4, (uint32_t)v);
}
static uint16_t get16(const uint8_t *p) { return (uint16_t)((p[0] << 8) | p[1]); }
static uint32_t get32(const uint8_t *p) {
  return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}
static uint64_t get64(const uint8_t *p) { return ((uint64_t)get32(p) << 32) | get32(p + 4); }

size_t keeper_msg_header(uint8_t *out, uint8_t kind, uint32_t len) {
  out[0] = kind;
  out[1] = 0;
  put16(out + 2, 0);
  put32(out + 4, len);
  return KW_HEADER;
}

int keeper_msg_parse(const uint8_t *buf, size_t len, uint8_t *kind, const uint8_t **payload, uint32_t *plen) {
  if (len < KW_HEADER) return 0;
  uint32_t n = get32(buf + 4);
  if (buf[1] != 0 || get16(buf + 2) != 0 || n > KW_MAX_PAYLOAD) return -1;
  if (len - KW_HEADER < n) return 0;
  *kind = buf[0];
  *payload = buf + KW_HEADER;
  *plen = n;
  return 1;
}

size_t keeper_attach_put(uint8_t *out, uint32_t flags, uint64_t since) {
  put32(out, flags);
  put64(out + 4, since);
  return KW_ATTACH_LEN;
}

size_t keeper_resize_put(uint8_t *out, uint16_t cols, uint16_t rows) {
  put16(out, cols);
  put16(out + 2, rows);
  return KW_RESIZE_LEN;
}

void keeper_u64_put(uint8_t *out, uint64_t v) { put64(out, v); }
uint64_t keeper_u64_get(const uint8_t *p) { return get64(p); }

int keeper_ack_get(const uint8_t *p, uint32_t len, uint8_t *delivered, uint32_t *count) {
  if (len != KW_ACK_LEN) return -1;
  *delivered = p[0];
  *count = get32(p + 1);
  return 0;
}

size_t keeper_info_put(uint8_t *out, const keeper_info_t *k) {
  put32(out, k->pid);
  put16(out + 4, k->cols);
  put16(out + 6, k->rows);
  put64(out + 8, k->head);
  put64(out + 16, k->tail);
  out[24] = k->ended;
  out[25] = k->how;
  out[26] = k->signal;
  out[27] = k->core;
  put32(out + 28, (uint32_t)k->code);
  return KW_INFO_LEN;
}

int keeper_info_get(const uint8_t *p, uint32_t len, keeper_info_t *k) {
  if (len != KW_INFO_LEN) return -1;
  k->pid = get32(p);
  k->cols = get16(p + 4);
  k->rows = get16(p + 6);
  k->head = get64(p + 8);
  k->tail = get64(p + 16);
  k->ended = p[24];
  k->how = p[25];
  k->signal = p[26];
  k->core = p[27];
  k->code = (int32_t)get32(p + 28);
  return 0;
}

size_t keeper_fail_put(uint8_t *out, size_t cap, const ag_err_t *e) {
  size_t dl = e->detail_len < cap - 16 ? e->detail_len : cap - 16;
  put16(out, e->kind);
  out[2] = e->stage;
  out[3] = 0;
  put32(out + 4, (uint32_t)e->err);
  put64(out + 8, e->value);
  memcpy(out + 16, e->detail, dl);
  return 16 + dl;
}

int keeper_fail_get(const uint8_t *p, uint32_t len, ag_err_t *e) {
  if (len < 16 || len - 16 > sizeof(e->detail)) return -1;
  ag_err_set(e, get16(p), (int)get32(p + 4), NULL);
  e->stage = p[2];
  e->value = get64(p + 8);
  ag_err_detail_bytes(e, p + 16, len - 16);
  return 0;
}

/* ---- the keeper process ---- */

typedef struct kclient {
  int fd; /* -1: a free slot */
  int attached;
  uint32_t flags; /* ATTACH's */
  uint64_t next;  /* the next output byte it gets */
  int end_sent;
  uint8_t *in; /* KW_HEADER + KW_MAX_PAYLOAD: what it sent, not yet handled */
  size_t in_len;
  uint8_t *out; /* KW_HEADER + KW_OUT_MAX: the message being written to it */
  size_t out_len, out_pos;
} kclient_t;

typedef struct keeper {
  int master, listen_fd, sig_fd, dir_fd;
  const char *name; /* the socket's name in dir_fd */
  pid_t pid;
  int reaped, status, master_eof, ended;
  int64_t quiet_ms; /* after the reap: since when the master has had nothing for us */
  int64_t linger_until;
  uint16_t cols, rows;
  uint8_t *ring;
  size_t cap;
  uint64_t head; /* bytes read from the master, in all */
  uint8_t pend[KW_OUT_MAX]; /* input for the master */
  size_t pend_len, pend_pos;
  kclient_t c[KP_MAX_CLIENTS];
} keeper_t;

static uint64_t ring_tail(const keeper_t *k) { return k->head > k->cap ? k->head - k->cap : 0; }

static void info_of(const keeper_t *k, keeper_info_t *i) {
  memset(i, 0, sizeof(*i));
  i->pid = (uint32_t)k->pid;
  i->cols = k->cols;
  i->rows = k->rows;
  i->head = k->head;
  i->tail = ring_tail(k);
  if (k->ended) {
    i->ended = 1;
    if (WIFSIGNALED(k->status)) {
      i->how = AW_EXIT_SIGNAL;
      i->signal = (uint8_t)WTERMSIG(k->status);
      i->code = 128 + i->signal;
#ifdef WCOREDUMP
      i->core = WCOREDUMP(k->status) ? 1 : 0;
#endif
    } else {
      i->code = WEXITSTATUS(k->status);
    }
  }
}

static int has_clients(const keeper_t *k) {
  for (int i = 0; i < KP_MAX_CLIENTS; i++)
    if (k->c[i].fd >= 0) return 1;
  return 0;
}

/* A client in slot c on connection fd (taken): 0, or -1 (out of memory: fd closed). */
static int client_open(kclient_t *c, int fd) {
  c->in = malloc(KW_HEADER + KW_MAX_PAYLOAD);
  c->out = malloc(KW_HEADER + KW_OUT_MAX + 8);
  if (c->in == NULL || c->out == NULL) {
    free(c->in);
    free(c->out);
    c->in = c->out = NULL;
    close(fd);
    return -1;
  }
  c->fd = fd;
  return 0;
}

static void client_close(keeper_t *k, kclient_t *c) {
  util_close_fd(&c->fd);
  free(c->in);
  free(c->out);
  memset(c, 0, sizeof(*c));
  c->fd = -1;
  if (!has_clients(k)) k->linger_until = util_now_ms() + KP_LINGER_MS;
}

static void reply(kclient_t *c, uint8_t kind, const uint8_t *p, size_t len) {
  c->out_pos = 0;
  c->out_len = keeper_msg_header(c->out, kind, (uint32_t)len);
  memcpy(c->out + c->out_len, p, len);
  c->out_len += len;
}

static void reply_info(const keeper_t *k, kclient_t *c, uint8_t kind) {
  keeper_info_t i;
  uint8_t b[KW_INFO_LEN];
  info_of(k, &i);
  keeper_info_put(b, &i);
  reply(c, kind, b, sizeof(b));
}

/* Input into the master, as much as it takes now. */
static void input_flush(keeper_t *k) {
  while (k->pend_pos < k->pend_len) {
    ssize_t n = write(k->master, k->pend + k->pend_pos, k->pend_len - k->pend_pos);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    if (n <= 0) break; /* the terminal is gone: the input is dropped */
    k->pend_pos += (size_t)n;
  }
  k->pend_len = k->pend_pos = 0;
}

/* One message of c's, if it can be handled now: 1 handled, 0 it waits, -1 close c. */
static int client_message(keeper_t *k, kclient_t *c) {
  uint8_t kind;
  const uint8_t *p;
  uint32_t n;
  int rc = keeper_msg_parse(c->in, c->in_len, &kind, &p, &n);
  if (rc <= 0) return rc;
  if (c->out_len > c->out_pos) return 0; /* its answer would have nowhere to go */
  switch (kind) {
    case KW_ATTACH: {
      if (n != KW_ATTACH_LEN || c->attached) return -1;
      c->flags = get32(p) & AW_TERM_FLAGS_ALL;
      uint64_t since = get64(p + 4), tail = ring_tail(k);
      c->next = since < tail ? tail : since > k->head ? k->head : since;
      c->attached = 1;
      reply_info(k, c, KW_INFO);
      break;
    }
    case KW_INPUT:
      if (n == 0 || n > sizeof(k->pend)) return -1;
      if (k->pend_len > 0) return 0;
      if (!k->ended) {
        memcpy(k->pend, p, n);
        k->pend_len = n;
        input_flush(k);
      }
      break;
    case KW_RESIZE: {
      if (n != KW_RESIZE_LEN) return -1;
      uint16_t cols = get16(p), rows = get16(p + 2);
      if (cols < 1 || rows < 1 || cols > AW_MAX_TERM_DIM || rows > AW_MAX_TERM_DIM) return -1;
      if (!k->ended) {
        struct winsize ws = {.ws_row = rows, .ws_col = cols};
        if (ioctl(k->master, TIOCSWINSZ, &ws) == 0) {
          k->cols = cols;
          k->rows = rows;
        }
      }
      reply_info(k, c, KW_INFO);
      break;
    }
    case KW_SIGNAL: {
      if (n != 1 || p[0] < 1 || p[0] > 64) return -1;
      int count = k->reaped ? 0 : ptree_signal(k->pid, p[0], 1);
      uint8_t b[KW_ACK_LEN] = {count > 0, 0, 0, 0, 0};
      put32(b + 1, count > 0 ? (uint32_t)count : 0);
      reply(c, KW_ACK, b, sizeof(b));
      break;
    }
    case KW_SYNC:
      if (n != 0) return -1;
      if (k->pend_len > 0) return 0;
      reply_info(k, c, KW_INFO);
      break;
    default:
      return -1;
  }
  size_t used = KW_HEADER + n;
  memmove(c->in, c->in + used, c->in_len - used);
  c->in_len -= used;
  return 1;
}

/* The next message for c once the last one is written: output, then its END. */
static void client_fill(keeper_t *k, kclient_t *c) {
  if (c->out_len > c->out_pos || !c->attached) return;
  if ((c->flags & AW_TERM_OUTPUT) && c->next < k->head) {
    uint64_t tail = ring_tail(k);
    if (c->next < tail) c->next = tail; /* only when it attached without OUTPUT's hold */
    size_t at = (size_t)(c->next % k->cap);
    size_t n = (size_t)(k->head - c->next);
    if (n > k->cap - at) n = k->cap - at;
    if (n > KW_OUT_MAX) n = KW_OUT_MAX;
    c->out_pos = 0;
    c->out_len = keeper_msg_header(c->out, KW_OUT, (uint32_t)(8 + n));
    put64(c->out + c->out_len, c->next);
    memcpy(c->out + c->out_len + 8, k->ring + at, n);
    c->out_len += 8 + n;
    c->next += n;
    return;
  }
  if (k->ended && !c->end_sent && (c->flags & (AW_TERM_OUTPUT | AW_TERM_WAIT))) {
    c->end_sent = 1;
    reply_info(k, c, KW_END);
  }
}

static void client_write(keeper_t *k, kclient_t *c) {
  for (;;) {
    client_fill(k, c);
    if (c->out_pos >= c->out_len) return;
    ssize_t n = send(c->fd, c->out + c->out_pos, c->out_len - c->out_pos, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    if (n <= 0) {
      client_close(k, c);
      return;
    }
    c->out_pos += (size_t)n;
    if (c->out_pos == c->out_len) c->out_pos = c->out_len = 0;
  }
}

static void client_read(keeper_t *k, kclient_t *c) {
  size_t cap = KW_HEADER + KW_MAX_PAYLOAD;
  if (c->in_len < cap) {
    ssize_t n = recv(c->fd, c->in + c->in_len, cap - c->in_len, 0);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
      client_close(k, c);
      return;
    }
    if (n > 0) c->in_len += (size_t)n;
  }
  int rc;
  while ((rc = client_message(k, c)) > 0) client_write(k, c);
  if (rc < 0) client_close(k, c);
}

static void accept_clients(keeper_t *k) {
  for (int i = 0; i < KP_MAX_CLIENTS; i++) {
    kclient_t *c = &k->c[i];
    if (c->fd >= 0) continue;
    int fd = accept4(k->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0 || client_open(c, fd) < 0) return;
  }
}

/* How far the slowest attached OUTPUT client is behind: the master may be read only into
 * the rest of the ring, or that client would lose bytes. */
static uint64_t lag(const keeper_t *k) {
  uint64_t most = 0;
  for (int i = 0; i < KP_MAX_CLIENTS; i++) {
    const kclient_t *c = &k->c[i];
    if (c->fd >= 0 && c->attached && (c->flags & AW_TERM_OUTPUT) && k->head - c->next > most) most = k->head - c->next;
  }
  return most;
}

/* Some attached OUTPUT client is a whole scrollback behind: the master waits for it. */
static int held(const keeper_t *k) { return lag(k) >= k->cap; }

static void master_read(keeper_t *k) {
  while (!k->master_eof && !held(k)) {
    size_t at = (size_t)(k->head % k->cap);
    size_t room = k->cap - at;
    size_t free_bytes = k->cap - (size_t)lag(k);
    if (room > free_bytes) room = free_bytes;
    if (room > AW_MAX_DATA) room = AW_MAX_DATA;
    ssize_t n = read(k->master, k->ring + at, room);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    if (n <= 0) {
      k->master_eof = 1; /* EIO: no one holds the terminal any more */
      return;
    }
    k->head += (uint64_t)n;
    if (k->reaped) k->quiet_ms = util_now_ms();
  }
}

static void reap(keeper_t *k) {
  for (;;) {
    int st;
    pid_t p = waitpid(-1, &st, WNOHANG);
    if (p < 0 && errno == EINTR) continue;
    if (p <= 0) return;
    if (p == k->pid && !k->reaped) {
      k->reaped = 1;
      k->status = st;
      k->quiet_ms = util_now_ms();
    }
  }
}

static void check_end(keeper_t *k, int64_t now) {
  if (k->ended || !k->reaped) return;
  if (!k->master_eof && held(k)) k->quiet_ms = now; /* waiting for a consumer is not quiet */
  if (!k->master_eof && now < k->quiet_ms + KP_DRAIN_MS) return;
  /* Whatever the program left in its session goes with it. */
  ptree_signal(k->pid, SIGKILL, 1);
  k->ended = 1;
  util_close_fd(&k->master);
  if (!has_clients(k)) k->linger_until = now + KP_LINGER_MS;
}

static void keeper_loop(keeper_t *k) {
  struct pollfd pf[3 + KP_MAX_CLIENTS];
  for (;;) {
    int64_t now = util_now_ms();
    check_end(k, now);
    /* What the last round made sendable (output read, the end): each client's next message. */
    for (int i = 0; i < KP_MAX_CLIENTS; i++)
      if (k->c[i].fd >= 0) client_write(k, &k->c[i]);
    int any = has_clients(k);
    if (k->ended && !any && now >= k->linger_until) return;
    pf[0].fd = k->sig_fd;
    pf[0].events = POLLIN;
    pf[1].fd = k->master;
    pf[1].events = (short)((!k->master_eof && !held(k) ? POLLIN : 0) | (k->pend_len ? POLLOUT : 0));
    if (k->master < 0 || pf[1].events == 0) pf[1].fd = -1;
    int free_slot = 0;
    for (int i = 0; i < KP_MAX_CLIENTS; i++) free_slot |= k->c[i].fd < 0;
    pf[2].fd = free_slot ? k->listen_fd : -1; /* else the rest wait in the backlog */
    pf[2].events = POLLIN;
    for (int i = 0; i < KP_MAX_CLIENTS; i++) {
      kclient_t *c = &k->c[i];
      pf[3 + i].fd = c->fd;
      pf[3 + i].events = (short)((c->in_len < KW_HEADER + KW_MAX_PAYLOAD ? POLLIN : 0) |
                                 (c->out_len > c->out_pos ? POLLOUT : 0));
    }
    int64_t wait = -1;
    if (k->reaped && !k->ended) wait = k->quiet_ms + KP_DRAIN_MS - now;
    else if (k->ended && !any) wait = k->linger_until - now;
    if (wait < 0 && wait != -1) wait = 0;
    if (poll(pf, 3 + KP_MAX_CLIENTS, (int)wait) < 0 && errno != EINTR) return;
    if (pf[0].revents) {
      struct signalfd_siginfo si;
      while (read(k->sig_fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
      }
      reap(k);
    }
    if (pf[1].fd >= 0 && (pf[1].revents & (POLLOUT | POLLHUP | POLLERR)) && k->pend_len) input_flush(k);
    if (pf[1].fd >= 0 && (pf[1].revents & (POLLIN | POLLHUP | POLLERR))) master_read(k);
    if (pf[2].fd >= 0 && (pf[2].revents & POLLIN)) accept_clients(k);
    for (int i = 0; i < KP_MAX_CLIENTS; i++) {
      kclient_t *c = &k->c[i];
      if (c->fd < 0) continue;
      if (pf[3 + i].fd == c->fd && (pf[3 + i].revents & (POLLIN | POLLHUP | POLLERR))) client_read(k, c);
      if (c->fd >= 0) client_write(k, c);
      /* A message that waited for the input buffer or for its answer's room. */
      if (c->fd >= 0 && c->in_len) client_read(k, c);
    }
    if (!held(k)) master_read(k);
  }
}

/* The pty, its size set. The master, or -1 with e set; *slave the slave's descriptor. */
static int open_pty(uint16_t cols, uint16_t rows, int *slave, ag_err_t *e) {
  char name[128];
  int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (m < 0 || grantpt(m) < 0 || unlockpt(m) < 0 || ptsname_r(m, name, sizeof(name)) != 0) {
    int err = errno;
    ag_err_set(e, err == ENOENT || err == ENODEV ? AW_E_UNSUPPORTED : ag_err_kind_of(err), err,
               "no pseudo-terminal (/dev/ptmx)");
    if (m >= 0) close(m);
    return -1;
  }
  *slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (*slave < 0) {
    ag_err_set(e, ag_err_kind_of(errno), errno, "open %s", name);
    close(m);
    return -1;
  }
  struct winsize ws = {.ws_row = rows, .ws_col = cols};
  ioctl(m, TIOCSWINSZ, &ws);
  util_set_nonblock(m);
  return m;
}

/* Listens as `name` in the directory: bound and listening under a temporary name first,
 * then linked to `name`, which fails if the name exists: a name is never a socket that
 * refuses connections while its keeper starts, and never replaces another's. */
static int listen_at(int dir_fd, const char *dir, const char *name, ag_err_t *e) {
  struct sockaddr_un sa;
  char tmp[48];
  memset(&sa, 0, sizeof(sa));
  sa.sun_family = AF_UNIX;
  snprintf(tmp, sizeof(tmp), ".new-%d", (int)getpid());
  if ((size_t)snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s", dir, tmp) >= sizeof(sa.sun_path) ||
      strlen(dir) + 1 + strlen(name) >= sizeof(sa.sun_path)) {
    ag_err_set(e, AW_E_LIMIT, ENAMETOOLONG, "the terminals' directory's path is too long for a socket");
    return -1;
  }
  unlinkat(dir_fd, tmp, 0); /* a keeper of this pid that was killed */
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    ag_err_set(e, AW_E_RESOURCES, errno, "socket");
    return -1;
  }
  if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
    ag_err_set(e, ag_err_kind_of(errno), errno, "bind %s", sa.sun_path);
    close(fd);
    return -1;
  }
  int err = 0;
  if (listen(fd, 64) < 0) err = errno;
  else if (linkat(dir_fd, tmp, dir_fd, name, 0) < 0) err = errno;
  unlinkat(dir_fd, tmp, 0);
  if (err) {
    ag_err_set(e, err == EEXIST ? AW_E_INVALID : ag_err_kind_of(err), err,
               err == EEXIST ? "a terminal with this id exists: %s" : "listen as %s", name);
    close(fd);
    return -1;
  }
  return fd;
}

void keeper_main(int client_fd, int dir_fd, const char *dir, const char *name, const aw_term_open_req_t *m) {
  static keeper_t k;
  ag_err_t e;
  int slave = -1;
  memset(&k, 0, sizeof(k));
  k.master = k.listen_fd = k.sig_fd = -1;
  k.dir_fd = dir_fd;
  k.name = name;
  k.cols = m->cols;
  k.rows = m->rows;
  for (int i = 0; i < KP_MAX_CLIENTS; i++) k.c[i].fd = -1;
  g.self = getpid(); /* what ptree_signal spares: the keeper now */
  setsid();
  int keep[2] = {client_fd, dir_fd};
  util_close_all_except(keep, 2);
  int null = open("/dev/null", O_RDWR);
  for (int fd = 0; fd < 3; fd++)
    if (null >= 0 && null != fd) dup2(null, fd);
  if (null > 2) close(null);
  signal(SIGHUP, SIG_IGN);
  signal(SIGPIPE, SIG_IGN);
  prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
  prctl(PR_SET_NAME, "anvia-term", 0, 0, 0);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGCHLD);
  sigprocmask(SIG_BLOCK, &set, NULL);
  k.sig_fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
  k.ring = malloc(m->scrollback);
  k.cap = m->scrollback;
  if (k.sig_fd < 0 || k.ring == NULL) {
    ag_err_set(&e, AW_E_RESOURCES, errno, "the terminal's keeper");
    goto fail;
  }
  k.listen_fd = listen_at(dir_fd, dir, name, &e);
  if (k.listen_fd < 0) goto fail;
  k.master = open_pty(m->cols, m->rows, &slave, &e);
  if (k.master < 0) goto fail_named;
  aw_exec_req_t x = {.flags = 0, .timeout_ms = 0, .window = 0, .cwd = m->cwd, .argv = m->argv, .env = m->env};
  k.pid = exec_spawn(&x, "TERM=xterm-256color", slave, slave, slave, 1, &e);
  util_close_fd(&slave);
  if (k.pid < 0) goto fail_named;
  util_set_nonblock(client_fd);
  if (client_open(&k.c[0], client_fd) < 0) k.linger_until = util_now_ms() + KP_LINGER_MS;
  keeper_loop(&k);
  unlinkat(dir_fd, name, 0);
  _exit(0);
fail_named:
  unlinkat(dir_fd, name, 0);
fail : {
  uint8_t b[KW_HEADER + 16 + 512];
  size_t n = keeper_fail_put(b + KW_HEADER, sizeof(b) - KW_HEADER, &e);
  keeper_msg_header(b, KW_FAIL, (uint32_t)n);
  util_write_all(client_fd, b, KW_HEADER + n);
  _exit(0);
}
}
