/*
 * term.c - the TERM_* requests (PROTOCOL.md "Terminals"): the agent's side of terminals,
 * each held by a keeper process (keeper.c) that outlives the agent.
 *
 * Owns: per TERM_OPEN, TERM_ATTACH, TERM_RESIZE and TERM_SIGNAL request its state
 * (r->u.term, malloc'd here): the connection to the terminal's keeper (in r->out[0].fd, so
 * the poll loop watches it like a pipe), the keeper's bytes read and not yet handled, the
 * host's input not yet passed on, and the message being written to the keeper.
 * term_cancel and term_close release them. TERM_LIST holds nothing past its answer.
 *
 * The terminals' directory is --term-dir, else the first of /dev/shm and /tmp that holds
 * (or can be given) a directory `.anvia-term-<euid>` that is the agent's user's, not a
 * link, and writable by no one else (a directory planted by another user is refused).
 * Each terminal is the keeper's socket there, named by the terminal's id. A keeper is
 * believed only if the socket's peer is the agent's user or root; what it says is checked
 * as the host will check it (its INFO goes through the term_result decoder, its output
 * offsets must follow one another) before any of it reaches the host.
 *
 * Flow: the keeper's socket is read only while stream 2 has credit (or, for a request
 * without output, always: it sends none); one OUT is relayed as records of at most the
 * credit, so nothing is read that cannot be sent. The host's input is held (at most the
 * AW_IN_WINDOW the host has credit for), passed on as INPUT messages, and credited back
 * once written to the keeper's socket, so a terminal that does not read holds the host.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "agent.h"

#define IN_CAP (KW_HEADER + KW_MAX_PAYLOAD)

struct term_state {
  uint32_t flags;    /* AW_TERM_* of TERM_OPEN and TERM_ATTACH */
  int info_seen;     /* the keeper's first INFO has come (STARTED sent) */
  int sync_sent;     /* the input's end was passed on as SYNC */
  int have_expect;   /* an OUT came: `expect` is where the next must start */
  uint64_t expect;
  uint64_t tail0;    /* the oldest byte kept when the first INFO came */
  uint8_t in[IN_CAP]; /* from the keeper */
  size_t in_len;
  size_t out_done; /* bytes of the OUT at in[0] already relayed */
  uint8_t *raw;    /* the host's input, not yet passed on (AG_MAX_STDIN_BUF) */
  size_t raw_len;
  uint8_t kout[KW_HEADER + KW_MAX_PAYLOAD]; /* to the keeper */
  size_t kout_len, kout_pos;
  uint32_t kout_input; /* input bytes in kout: credited back once written */
};

/* ---- the terminals' directory ---- */

static int own_dir(int fd, ag_err_t *e, const char *path) {
  struct stat st;
  if (fstat(fd, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022) != 0) {
    ag_err_set(e, AW_E_PERMISSION, 0, "%s is not a directory of the agent's user alone", path);
    return -1;
  }
  return 0;
}

/* The directory's descriptor and its path (into path, AW_MAX_PATH + 1), or -1 with e. */
static int term_dir(char *path, size_t cap, ag_err_t *e) {
  if (g.term_dir != NULL) {
    int fd = open(g.term_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
      ag_err_set(e, ag_err_kind_of(errno), errno, "the terminals' directory %s", g.term_dir);
      return -1;
    }
    if (own_dir(fd, e, g.term_dir) < 0) {
      close(fd);
      return -1;
    }
    snprintf(path, cap, "%s", g.term_dir);
    return fd;
  }
  static const char *const bases[] = {"/dev/shm", "/tmp"};
  char name[48];
  snprintf(name, sizeof(name), ".anvia-term-%u", (unsigned)geteuid());
  int err = ENOENT;
  for (size_t i = 0; i < sizeof(bases) / sizeof(bases[0]); i++) {
    int bfd = open(bases[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (bfd < 0) continue;
    if (mkdirat(bfd, name, 0700) < 0 && errno != EEXIST) {
      err = errno;
      close(bfd);
      continue;
    }
    int fd = openat(bfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    err = errno;
    close(bfd);
    if (fd < 0) continue;
    snprintf(path, cap, "%s/%s", bases[i], name);
    if (own_dir(fd, e, path) < 0) {
      close(fd);
      return -1;
    }
    return fd;
  }
  ag_err_set(e, ag_err_kind_of(err), err, "no directory for terminals (/dev/shm or /tmp)");
  return -1;
}

static int sock_path(struct sockaddr_un *sa, const char *dir, const uint8_t *id, size_t idlen, ag_err_t *e) {
  memset(sa, 0, sizeof(*sa));
  sa->sun_family = AF_UNIX;
  if ((size_t)snprintf(sa->sun_path, sizeof(sa->sun_path), "%s/%.*s", dir, (int)idlen, (const char *)id) >=
      sizeof(sa->sun_path)) {
    ag_err_set(e, AW_E_LIMIT, ENAMETOOLONG, "the terminals' directory's path is too long for a socket");
    return -1;
  }
  return 0;
}

/* A connection to the keeper of terminal `id`: non-blocking, its peer checked; -1 with e
 * (not_found: no keeper listens there). *refused says the name is a socket no one holds. */
static int keeper_connect(const char *dir, const uint8_t *id, size_t idlen, int *refused, ag_err_t *e) {
  struct sockaddr_un sa;
  if (refused) *refused = 0;
  if (sock_path(&sa, dir, id, idlen, e) < 0) return -1;
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    ag_err_set(e, AW_E_RESOURCES, errno, "socket");
    return -1;
  }
  if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
    int err = errno;
    close(fd);
    if (err == ECONNREFUSED && refused) *refused = 1;
    if (err == ENOENT || err == ECONNREFUSED) {
      ag_err_set(e, AW_E_NOT_FOUND, err, "no terminal ");
    } else if (err == EAGAIN) {
      ag_err_set(e, AW_E_RESOURCES, err, "the terminal's keeper is busy: ");
    } else {
      ag_err_set(e, ag_err_kind_of(err), err, "connect to the terminal ");
    }
    size_t n = strlen(e->detail);
    if (n + idlen < sizeof(e->detail)) {
      memcpy(e->detail + n, id, idlen);
      e->detail_len = n + idlen;
      e->detail[e->detail_len] = 0;
    }
    return -1;
  }
  struct ucred cr;
  socklen_t cl = sizeof(cr);
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) < 0 || (cr.uid != geteuid() && cr.uid != 0)) {
    close(fd);
    ag_err_set(e, AW_E_PERMISSION, 0, "the terminal's socket is not the agent's user's");
    return -1;
  }
  return fd;
}

/* ---- the request ---- */

static void release(req_t *r) {
  util_close_fd(&r->out[0].fd);
  r->out[0].active = 0;
  r->out[0].ready = 0;
  if (r->u.term != NULL) {
    free(r->u.term->raw);
    free(r->u.term);
    r->u.term = NULL;
  }
}

static void term_fail(req_t *r, const ag_err_t *e) {
  if (r->id != 0) out_error(r->id, e);
  release(r);
  req_finish(r);
}

static void fail_keeper(req_t *r, const char *what) {
  ag_err_t e;
  ag_err_set(&e, AW_E_IO, 0, "the terminal's keeper %s", what);
  term_fail(r, &e);
}

/* A request on its keeper's connection `fd` (taken): r, or NULL with the ERROR sent. */
static req_t *term_begin(uint32_t id, uint8_t type, int fd, uint32_t flags, uint32_t window) {
  ag_err_t e;
  term_state_t *t = calloc(1, sizeof(*t));
  req_t *r = t != NULL ? req_new(id, type) : NULL;
  if (r == NULL) {
    free(t);
    close(fd);
    ag_err_set(&e, AW_E_RESOURCES, ENOMEM, "out of memory");
    out_error(id, &e);
    return NULL;
  }
  t->flags = flags;
  r->u.term = t;
  r->nout = 1;
  r->out[0].fd = fd;
  r->out[0].active = 1;
  /* Without output nothing is sent on stream 2: its credit only lets the keeper be read. */
  r->out[0].credit = (flags & AW_TERM_OUTPUT) ? window : 1;
  r->has_in = (flags & AW_TERM_INPUT) != 0;
  return r;
}

/* Queues a message for the keeper; kout is empty (each request's messages are sent one at
 * a time, and a control message only first or after the input). */
static void kout_put(term_state_t *t, uint8_t kind, const uint8_t *p, size_t len) {
  t->kout_pos = 0;
  t->kout_len = keeper_msg_header(t->kout, kind, (uint32_t)len);
  memcpy(t->kout + t->kout_len, p, len);
  t->kout_len += len;
}


/* Writes what waits for the keeper, then frames more input or the SYNC at its end. */
static void kout_flush(req_t *r) {
  term_state_t *t = r->u.term;
  for (;;) {
    if (t->kout_pos == t->kout_len) {
      t->kout_pos = t->kout_len = 0;
      if (t->kout_input) {
        uint32_t n = t->kout_input;
        t->kout_input = 0;
        req_in_consumed(r, n, t->raw_len == 0);
      }
      if (t->raw_len > 0) {
        size_t n = t->raw_len < KW_OUT_MAX ? t->raw_len : KW_OUT_MAX;
        kout_put(t, KW_INPUT, t->raw, n);
        memmove(t->raw, t->raw + n, t->raw_len - n);
        t->raw_len -= n;
        t->kout_input = (uint32_t)n;
      } else if (r->in.ended && r->has_in && !t->sync_sent) {
        t->sync_sent = 1;
        kout_put(t, KW_SYNC, NULL, 0);
      } else {
        return;
      }
    }
    ssize_t n = send(r->out[0].fd, t->kout + t->kout_pos, t->kout_len - t->kout_pos, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    if (n <= 0) {
      /* The keeper is gone: what it still sent is read, its hang-up ends the request. */
      t->raw_len = t->kout_len = t->kout_pos = 0;
      r->in.dead = 1;
      return;
    }
    t->kout_pos += (size_t)n;
  }
}

/* A request on the keeper's connection `fd` (taken) whose first message to the keeper is
 * `kind` with payload b[0..n). */
static void start_on(uint32_t id, uint8_t type, int fd, uint32_t flags, uint32_t window, uint8_t kind,
                     const uint8_t *b, size_t n) {
  req_t *r = term_begin(id, type, fd, flags, window);
  if (r == NULL) return;
  kout_put(r->u.term, kind, b, n);
  kout_flush(r);
}

static void begin_attach(uint32_t id, uint8_t type, int fd, uint32_t flags, uint32_t window, uint64_t since) {
  uint8_t b[KW_ATTACH_LEN];
  start_on(id, type, fd, flags, window, KW_ATTACH, b, keeper_attach_put(b, flags, since));
}

void term_open_start(uint32_t id, const uint8_t *p, size_t len) {
  aw_term_open_req_t m;
  ag_err_t e;
  char dir[AW_MAX_PATH + 1];
  int dfd = -1, sp[2] = {-1, -1};
  int rc = aw_dec_term_open(p, len, &m);
  if (rc != AW_OK) {
    ag_err_decode(&e, rc, "TERM_OPEN");
    goto fail;
  }
  if (m.cwd.len && m.cwd.p[0] != '/') {
    ag_err_set(&e, AW_E_INVALID, 0, "cwd must be an absolute path");
    goto fail;
  }
  dfd = term_dir(dir, sizeof(dir), &e);
  if (dfd < 0) goto fail;
  char name[AW_MAX_TERM_ID + 1];
  memcpy(name, m.term_id.p, m.term_id.len);
  name[m.term_id.len] = 0;
  /* A name no keeper holds is what a killed keeper left: it goes. A live one stays. */
  int refused;
  int probe = keeper_connect(dir, m.term_id.p, m.term_id.len, &refused, &e);
  if (probe >= 0) {
    close(probe);
    ag_err_set(&e, AW_E_INVALID, EEXIST, "a terminal with this id exists: %s", name);
    goto fail;
  }
  if (refused) unlinkat(dfd, name, 0);
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0) {
    ag_err_set(&e, AW_E_RESOURCES, errno, "socketpair");
    goto fail;
  }
  pid_t pid = fork();
  if (pid < 0) {
    ag_err_set(&e, AW_E_RESOURCES, errno, "fork");
    e.stage = AW_STAGE_FORK;
    goto fail;
  }
  if (pid == 0) {
    close(sp[0]);
    keeper_main(sp[1], dfd, dir, name, &m);
  }
  /* The keeper is the agent's child until the agent exits: exec_reap_children reaps it
   * like any other process that is not a request's. */
  close(sp[1]);
  close(dfd);
  util_set_nonblock(sp[0]);
  begin_attach(id, AW_T_TERM_OPEN, sp[0], m.flags, m.window, 0);
  return;
fail:
  if (dfd >= 0) close(dfd);
  if (sp[0] >= 0) close(sp[0]);
  if (sp[1] >= 0) close(sp[1]);
  out_error(id, &e);
}

/* The keeper's connection for a request naming terminal `id`, or -1 with the ERROR sent. */
static int connect_for(uint32_t id, const aw_bytes_t *term_id) {
  ag_err_t e;
  char dir[AW_MAX_PATH + 1];
  int dfd = term_dir(dir, sizeof(dir), &e);
  int fd = dfd >= 0 ? keeper_connect(dir, term_id->p, term_id->len, NULL, &e) : -1;
  if (dfd >= 0) close(dfd);
  if (fd < 0) out_error(id, &e);
  return fd;
}

void term_attach_start(uint32_t id, const uint8_t *p, size_t len) {
  aw_term_attach_req_t m;
  if (out_refused(id, aw_dec_term_attach(p, len, &m), "TERM_ATTACH")) return;
  int fd = connect_for(id, &m.term_id);
  if (fd >= 0) begin_attach(id, AW_T_TERM_ATTACH, fd, m.flags, m.window, m.since);
}

void term_resize_start(uint32_t id, const uint8_t *p, size_t len) {
  aw_term_resize_req_t m;
  if (out_refused(id, aw_dec_term_resize(p, len, &m), "TERM_RESIZE")) return;
  int fd = connect_for(id, &m.term_id);
  uint8_t b[KW_RESIZE_LEN];
  if (fd >= 0) start_on(id, AW_T_TERM_RESIZE, fd, 0, 0, KW_RESIZE, b, keeper_resize_put(b, m.cols, m.rows));
}

void term_signal_start(uint32_t id, const uint8_t *p, size_t len) {
  aw_term_signal_req_t m;
  if (out_refused(id, aw_dec_term_signal(p, len, &m), "TERM_SIGNAL")) return;
  int fd = connect_for(id, &m.term_id);
  if (fd >= 0) start_on(id, AW_T_TERM_SIGNAL, fd, 0, 0, KW_SIGNAL, &m.signal, 1);
}

/* ---- TERM_LIST ---- */

static int cmp_ids(const void *a, const void *b) {
  const aw_bytes_t *x = a, *y = b;
  size_t n = x->len < y->len ? x->len : y->len;
  int c = memcmp(x->p, y->p, n);
  return c != 0 ? c : (x->len > y->len) - (x->len < y->len);
}

void term_list_run(uint32_t id, const uint8_t *p, size_t len) {
  aw_term_list_req_t m;
  ag_err_t e;
  char dir[AW_MAX_PATH + 1];
  DIR *d = NULL;
  char *names = NULL;
  aw_bytes_t *ids = NULL;
  uint32_t count = 0;
  int rc = aw_dec_term_list(p, len, &m);
  if (rc != AW_OK) {
    ag_err_decode(&e, rc, "TERM_LIST");
    goto fail;
  }
  int dfd = term_dir(dir, sizeof(dir), &e);
  if (dfd < 0) goto fail;
  d = fdopendir(dfd);
  names = malloc((size_t)AW_MAX_TERMS * (AW_MAX_TERM_ID + 1));
  ids = malloc((size_t)AW_MAX_TERMS * sizeof(*ids));
  if (d == NULL || names == NULL || ids == NULL) {
    if (d == NULL) close(dfd);
    ag_err_set(&e, AW_E_RESOURCES, errno, "listing the terminals");
    goto fail;
  }
  struct dirent *de;
  while ((de = readdir(d)) != NULL && count < AW_MAX_TERMS) {
    size_t n = strlen(de->d_name);
    if (!aw_term_id_ok((const uint8_t *)de->d_name, n)) continue;
    if (de->d_type != DT_SOCK && de->d_type != DT_UNKNOWN) continue;
    int refused;
    int fd = keeper_connect(dir, (const uint8_t *)de->d_name, n, &refused, &e);
    if (fd < 0) {
      if (refused) unlinkat(dirfd(d), de->d_name, 0); /* a killed keeper's name */
      continue;
    }
    close(fd);
    char *slot = names + (size_t)count * (AW_MAX_TERM_ID + 1);
    memcpy(slot, de->d_name, n);
    ids[count].p = (const uint8_t *)slot;
    ids[count].len = (uint32_t)n;
    count++;
  }
  qsort(ids, count, sizeof(*ids), cmp_ids);
  aw_term_list_enc_t res = {ids, count};
  aw_writer_t w;
  if (out_frame_begin(&w, AW_HEADER_LEN + 4 + (size_t)count * (4 + AW_MAX_TERM_ID)))
    out_frame_end(&w, aw_put_term_list_result(&w, id, &res));
  closedir(d);
  free(names);
  free(ids);
  return;
fail:
  if (d != NULL) closedir(d);
  free(names);
  free(ids);
  out_error(id, &e);
}

/* ---- what the keeper says ---- */

/* The keeper's INFO as the host's RESULT, checked by the decoder the host uses: 0, or -1
 * (the keeper said something the host would refuse). */
static int info_result(const keeper_info_t *k, aw_term_res_t *res) {
  memset(res, 0, sizeof(*res));
  res->flags = (uint8_t)((k->ended ? AW_TERMF_ENDED : 0) | (k->core ? AW_TERMF_CORE : 0));
  res->how = k->how;
  res->signal = k->signal;
  res->code = k->code;
  res->cols = k->cols;
  res->rows = k->rows;
  res->head = k->head;
  res->tail = k->tail;
  uint8_t buf[AW_HEADER_LEN + 64];
  aw_writer_t w;
  aw_w_init(&w, buf, sizeof(buf));
  aw_term_res_t back;
  if (k->ended > 1 || k->core > 1 || aw_put_term_result(&w, 1, res) != AW_OK) return -1;
  return aw_dec_term_result(buf + AW_HEADER_LEN, w.len - AW_HEADER_LEN, &back) == AW_OK ? 0 : -1;
}

static void send_result(req_t *r, const keeper_info_t *k) {
  aw_term_res_t res;
  if (info_result(k, &res) < 0) {
    fail_keeper(r, "sent an invalid state");
    return;
  }
  aw_writer_t w;
  if (out_frame_begin(&w, 64)) out_frame_end(&w, aw_put_term_result(&w, r->id, &res));
  release(r);
  req_finish(r);
}

/* INFO: the first says the program (STARTED); a request whose answer it is ends. */
static int on_info(req_t *r, const uint8_t *p, uint32_t n) {
  term_state_t *t = r->u.term;
  keeper_info_t k;
  aw_term_res_t res;
  if (keeper_info_get(p, n, &k) < 0 || info_result(&k, &res) < 0 || k.pid < 2 || k.pid > AW_PID_LIMIT) {
    fail_keeper(r, "sent an invalid state");
    return -1;
  }
  if (r->type == AW_T_TERM_RESIZE) {
    send_result(r, &k);
    return -1;
  }
  if (!t->info_seen) {
    t->info_seen = 1;
    t->tail0 = k.tail;
    aw_started_t st = {k.pid, k.pid};
    aw_writer_t w;
    if (out_frame_begin(&w, 64)) out_frame_end(&w, aw_put_started(&w, r->id, &st));
    if (!(t->flags & (AW_TERM_OUTPUT | AW_TERM_WAIT | AW_TERM_INPUT))) {
      send_result(r, &k);
      return -1;
    }
    return 0;
  }
  /* The answer to SYNC: the input is in the terminal. */
  if (t->sync_sent && !(t->flags & (AW_TERM_OUTPUT | AW_TERM_WAIT))) {
    send_result(r, &k);
    return -1;
  }
  return 0;
}

/* OUT: relayed as records within the credit. 1 when the whole message was relayed, 0
 * when it waits for credit or for room in the queue, -1 when the request ended. */
static int on_out(req_t *r, const uint8_t *p, uint32_t n) {
  term_state_t *t = r->u.term;
  ostream_t *o = &r->out[0];
  if (!(t->flags & AW_TERM_OUTPUT) || !t->info_seen || n <= 8) {
    fail_keeper(r, "sent output no one asked for");
    return -1;
  }
  uint64_t off = keeper_u64_get(p);
  /* The first may start anywhere from the oldest byte kept (it moves on meanwhile, never
   * back); each later one where the last ended. */
  if (t->have_expect ? off != t->expect : off < t->tail0) {
    fail_keeper(r, "sent output out of order");
    return -1;
  }
  while (t->out_done < n - 8) {
    if (o->credit <= AW_TERM_REC_FIXED) return 0;
    size_t part = n - 8 - t->out_done;
    size_t cap = (o->credit < AW_MAX_DATA ? o->credit : AW_MAX_DATA) - AW_TERM_REC_FIXED;
    if (part > cap) part = cap;
    uint8_t *b = out_reserve(AW_HEADER_LEN + AW_TERM_REC_FIXED + part);
    if (b == NULL) return 0;
    uint64_t at = off + t->out_done;
    keeper_u64_put(b + AW_HEADER_LEN, at);
    memcpy(b + AW_HEADER_LEN + AW_TERM_REC_FIXED, p + 8 + t->out_done, part);
    size_t rec = AW_TERM_REC_FIXED + part;
    aw_header_t h = {(uint32_t)rec, AW_T_DATA, 0, AW_S_OUT, 0, r->id};
    aw_header_encode(b, &h);
    out_commit(AW_HEADER_LEN + rec);
    o->credit -= (uint32_t)rec;
    o->sent += rec;
    t->out_done += part;
  }
  t->have_expect = 1;
  t->expect = off + (n - 8);
  t->out_done = 0;
  return 1;
}

static int on_message(req_t *r, uint8_t kind, const uint8_t *p, uint32_t n) {
  term_state_t *t = r->u.term;
  switch (kind) {
    case KW_INFO:
      return on_info(r, p, n) < 0 ? -1 : 1;
    case KW_OUT:
      return on_out(r, p, n);
    case KW_END: {
      keeper_info_t k;
      if (!t->info_seen || keeper_info_get(p, n, &k) < 0 || !k.ended ||
          ((t->flags & AW_TERM_OUTPUT) && t->have_expect && k.head != t->expect)) {
        fail_keeper(r, "sent an invalid end");
        return -1;
      }
      send_result(r, &k);
      return -1;
    }
    case KW_ACK: {
      uint8_t delivered;
      uint32_t count;
      if (r->type != AW_T_TERM_SIGNAL || keeper_ack_get(p, n, &delivered, &count) < 0) break;
      if (delivered > 1 || count > AW_PID_LIMIT || (delivered != 0) != (count != 0)) break;
      aw_signal_res_t res = {delivered, count};
      aw_writer_t w;
      if (out_frame_begin(&w, 64)) out_frame_end(&w, aw_put_signal_result(&w, r->id, &res));
      release(r);
      req_finish(r);
      return -1;
    }
    case KW_FAIL: {
      ag_err_t e;
      if (r->type != AW_T_TERM_OPEN || t->info_seen || keeper_fail_get(p, n, &e) < 0 ||
          aw_error_name(e.kind)[0] == 'u' /* "unknown" */) break;
      term_fail(r, &e);
      return -1;
    }
    default:
      break;
  }
  fail_keeper(r, "sent a message it may not send");
  return -1;
}

int term_produce(req_t *r, int which) {
  (void)which;
  ostream_t *o = &r->out[0];
  int progress = 0;
  for (;;) {
    term_state_t *t = r->u.term;
    if (t == NULL) return 1;
    uint8_t kind;
    const uint8_t *p;
    uint32_t n;
    int rc = keeper_msg_parse(t->in, t->in_len, &kind, &p, &n);
    if (rc < 0) {
      fail_keeper(r, "sent a malformed message");
      return 1;
    }
    if (rc > 0) {
      int done = on_message(r, kind, p, n);
      if (done < 0) return 1;
      if (done == 0) return progress;
      size_t used = KW_HEADER + n;
      memmove(t->in, t->in + used, t->in_len - used);
      t->in_len -= used;
      progress = 1;
      continue;
    }
    if (!o->ready) return progress;
    ssize_t got = recv(o->fd, t->in + t->in_len, sizeof(t->in) - t->in_len, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0 && errno == EAGAIN) {
      o->ready = 0;
      return progress;
    }
    if (got <= 0) {
      fail_keeper(r, "went away");
      return 1;
    }
    t->in_len += (size_t)got;
    progress = 1;
  }
}

int term_ready(const req_t *r, int which) {
  (void)which;
  const term_state_t *t = r->u.term;
  if (t == NULL) return 0;
  uint8_t kind;
  const uint8_t *p;
  uint32_t n;
  int rc = keeper_msg_parse(t->in, t->in_len, &kind, &p, &n);
  if (rc != 0) return rc < 0 || kind != KW_OUT || r->out[0].credit > AW_TERM_REC_FIXED;
  return r->out[0].ready;
}

/* ---- the host's input ---- */

void term_data(req_t *r, const uint8_t *p, size_t len, int end) {
  term_state_t *t = r->u.term;
  (void)end;
  if (t == NULL || r->in.dead) {
    req_in_consumed(r, (uint32_t)len, 1);
    return;
  }
  if (len > 0) {
    if (t->raw == NULL && (t->raw = malloc(AG_MAX_STDIN_BUF)) == NULL) {
      ag_err_t e;
      ag_err_set(&e, AW_E_RESOURCES, ENOMEM, "out of memory for input");
      term_fail(r, &e);
      return;
    }
    /* Credit bounds what the host may send to what the buffer holds. */
    if (t->raw_len + len > AG_MAX_STDIN_BUF) {
      ag_err_t e;
      ag_err_set(&e, AW_E_FLOW_CONTROL, 0, "input over the window");
      term_fail(r, &e);
      return;
    }
    memcpy(t->raw + t->raw_len, p, len);
    t->raw_len += len;
  }
  kout_flush(r);
}

int term_input_fd(const req_t *r) {
  const term_state_t *t = r->u.term;
  return t != NULL && t->kout_pos < t->kout_len ? r->out[0].fd : -1;
}

void term_input_ready(req_t *r) {
  if (r->u.term != NULL) kout_flush(r);
}

/* A keeper hangs up on no client of its own accord: it was killed. */
void term_closed(req_t *r) { fail_keeper(r, "went away"); }

void term_cancel(req_t *r, uint16_t why) {
  release(r);
  req_end(r, why);
}

void term_close(req_t *r) { release(r); }
