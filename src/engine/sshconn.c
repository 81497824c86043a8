/*
 * sshconn.c - ssh:// connections: `ssh ... docker system dial-stdio` per connection, spare
 * connections kept ahead of use, failures explained by ssh's stderr (see sshconn.h).
 */
#include "engine/sshconn.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/trace.h"

struct ssh_conn {
  ssh_conn_t *prev, *next; /* io->ssh_conns: every connection whose process may run */
  io_t *io;
  int refs;
  uv_process_t proc;
  int proc_open; /* the process handle is not closed yet */
  int exited;
  int64_t exit_status;
  int term_signal;
  int killed; /* we sent the signal (a spare ended, or a failed connection cleaned up) */
  uv_pipe_t err_pipe;
  int err_open;
  int err_reading;
  char errbuf[SSH_STDERR_MAX];
  size_t errlen;
  char scratch[1024]; /* what one read of stderr lands in */
  int err_dropped; /* earlier stderr bytes were dropped to keep the last SSH_STDERR_MAX */
  uv_timer_t timer; /* SSH_EXPLAIN_WAIT_MS after someone started waiting */
  int timer_open;
  int fd;                   /* our end while the connection is a spare; -1 once handed out */
  uint64_t spawned_ns;
  ssh_conn_t *spare_next;   /* the transport's list of spares */
  ssh_exit_waiter_t *waiters;
};

struct ssh_transport {
  ssh_transport_t *prev, *next; /* io->ssh_transports, until freed or torn down */
  io_t *io;                     /* NULL once the I/O context is torn down */
  char *display;
  char **argv; /* NULL-terminated */
  ssh_conn_t *spares; /* oldest first */
  int nspares;
  int spare_target;
  int warm;
  uv_timer_t idle; /* ends the spares after SSH_SPARE_IDLE_MS without a connection taken */
  int idle_open;
  int freed; /* ssh_transport_free ran; the memory goes once its handles are closed */
  int idle_closing;
  int handles_closing; /* the idle timer and the listener's poll handle, being closed */
  io_t *io_at_close;   /* the context the closing handles are counted in */
  /* libcurl's connections: it connects to this private unix socket (a 0700 directory of
   * its own), and each connection accepted here gets its own ssh process, whose stdin
   * and stdout are the accepted socket itself (no byte passes through this process). */
  char *dir;
  char *sock_path;
  ssh_transport_t *live_next; /* live_dirs: the listeners a process exit must remove */
  int listen_fd;
  uv_poll_t listen_poll;
  int listen_open;
  ssh_conn_t *recent; /* the last ssh started for libcurl (a reference): explains failures */
  err_t spawn_err;    /* why the last ssh for libcurl could not even start, if it could not */
};

/*
 * The listeners of the process, so that its exit removes their sockets and directories:
 * a client is not freed when Node exits (nothing finalizes it), and each one left a
 * directory in the temporary directory. Guarded by live_lock (one list for every Node
 * environment and worker of the process); live_sweep runs at exit(), after the last
 * JavaScript ran, and only unlinks paths the transports made.
 */
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t live_once = PTHREAD_ONCE_INIT;
static ssh_transport_t *live_dirs;

static void live_sweep(void) {
  pthread_mutex_lock(&live_lock);
  for (ssh_transport_t *t = live_dirs; t != NULL; t = t->live_next) {
    if (t->sock_path) unlink(t->sock_path);
    if (t->dir) rmdir(t->dir);
  }
  live_dirs = NULL;
  pthread_mutex_unlock(&live_lock);
}

static void live_init(void) { atexit(live_sweep); }

static void live_add(ssh_transport_t *t) {
  pthread_once(&live_once, live_init);
  pthread_mutex_lock(&live_lock);
  t->live_next = live_dirs;
  live_dirs = t;
  pthread_mutex_unlock(&live_lock);
}

static void live_remove(ssh_transport_t *t) {
  pthread_mutex_lock(&live_lock);
  for (ssh_transport_t **p = &live_dirs; *p != NULL; p = &(*p)->live_next) {
    if (*p == t) {
      *p = t->live_next;
      break;
    }
  }
  t->live_next = NULL;
  pthread_mutex_unlock(&live_lock);
}


/* ---- connections ---- */

static void conn_free(ssh_conn_t *c) {
  if (c->fd >= 0) close(c->fd);
  trace_event("ssh %d released", c->proc.pid);
  free(c);
}

void ssh_conn_unref(ssh_conn_t *c) {
  if (c != NULL && --c->refs == 0) conn_free(c);
}

int ssh_conn_ended(const ssh_conn_t *c) { return c->exited && !c->err_reading; }

static void conn_unlink(ssh_conn_t *c) {
  if (c->prev) c->prev->next = c->next;
  else if (c->io->ssh_conns == c) c->io->ssh_conns = c->next;
  if (c->next) c->next->prev = c->prev;
  c->prev = c->next = NULL;
}

static void on_conn_handle_closed(uv_handle_t *h) {
  ssh_conn_t *c = h->data;
  io_t *io = c->io;
  ssh_conn_unref(c);
  io_handle_closed(io);
}

static void conn_kill(ssh_conn_t *c, int sig) {
  if (c->proc_open && !c->exited) {
    c->killed = 1;
    uv_process_kill(&c->proc, sig);
  }
}

/* Once the process has ended and its stderr is read: wake the waiters, release handles. */
static void conn_maybe_done(ssh_conn_t *c) {
  if (!ssh_conn_ended(c)) return;
  ssh_exit_waiter_t *w = c->waiters;
  c->waiters = NULL;
  c->refs++; /* a waiter may drop the last other reference */
  while (w != NULL) {
    ssh_exit_waiter_t *next = w->next;
    w->next = NULL;
    w->conn = NULL;
    w->fn(w);
    w = next;
  }
  /* Every open handle holds one reference, released by its close callback. */
  if (c->timer_open) {
    c->timer_open = 0;
    uv_timer_stop(&c->timer);
    uv_close((uv_handle_t *)&c->timer, on_conn_handle_closed);
  }
  if (c->err_open) {
    c->err_open = 0;
    uv_close((uv_handle_t *)&c->err_pipe, on_conn_handle_closed);
  }
  if (c->proc_open) {
    c->proc_open = 0;
    conn_unlink(c);
    uv_close((uv_handle_t *)&c->proc, on_conn_handle_closed); /* the process's own reference */
  }
  ssh_conn_unref(c);
}

static void on_exit_cb(uv_process_t *p, int64_t status, int term_signal) {
  ssh_conn_t *c = p->data;
  c->exited = 1;
  c->exit_status = status;
  c->term_signal = term_signal;
  trace_event("ssh %d ended: status %lld, signal %d", p->pid, (long long)status, term_signal);
  conn_maybe_done(c);
}

static void on_err_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
  (void)suggested;
  ssh_conn_t *c = h->data;
  *buf = uv_buf_init(c->scratch, sizeof(c->scratch));
}

static void on_err_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf) {
  ssh_conn_t *c = s->data;
  if (n > 0) {
    size_t len = (size_t)n;
    const char *d = buf->base;
    if (len >= sizeof(c->errbuf)) {
      d += len - sizeof(c->errbuf);
      len = sizeof(c->errbuf);
      c->errlen = 0;
      c->err_dropped = 1;
    } else if (c->errlen + len > sizeof(c->errbuf)) {
      size_t drop = c->errlen + len - sizeof(c->errbuf);
      memmove(c->errbuf, c->errbuf + drop, c->errlen - drop);
      c->errlen -= drop;
      c->err_dropped = 1;
    }
    memcpy(c->errbuf + c->errlen, d, len);
    c->errlen += len;
    return;
  }
  if (n < 0) {
    uv_read_stop(s);
    c->err_reading = 0;
    conn_maybe_done(c);
  }
}

/* Stops waiting for the rest of stderr (something else may hold the pipe open). */
static void conn_stop_stderr(ssh_conn_t *c) {
  if (c->err_reading) {
    uv_read_stop((uv_stream_t *)&c->err_pipe);
    c->err_reading = 0;
  }
}

static void on_wait_timeout(uv_timer_t *t) {
  ssh_conn_t *c = t->data;
  if (!c->exited) {
    /* Its socket is closed and the process still runs: end it; the waiters get the end. */
    conn_kill(c, SIGKILL);
    uv_timer_start(&c->timer, on_wait_timeout, 1000, 0);
    return;
  }
  conn_stop_stderr(c);
  conn_maybe_done(c);
}

void ssh_conn_when_ended(ssh_conn_t *c, ssh_exit_waiter_t *w) {
  w->conn = c;
  w->next = c->waiters;
  c->waiters = w;
  if (!c->timer_open && !c->io->closing && uv_timer_init(c->io->uv, &c->timer) == 0) {
    c->timer.data = c;
    c->timer_open = 1;
    c->refs++;
    io_handle_opened(c->io);
    /* Referenced: someone waits for this process (a request's result hangs on it). */
    uv_timer_start(&c->timer, on_wait_timeout, SSH_EXPLAIN_WAIT_MS, 0);
  }
}

void ssh_conn_cancel_wait(ssh_exit_waiter_t *w) {
  ssh_conn_t *c = w->conn;
  if (c == NULL) return;
  for (ssh_exit_waiter_t **p = &c->waiters; *p; p = &(*p)->next) {
    if (*p == w) {
      *p = w->next;
      break;
    }
  }
  w->conn = NULL;
  w->next = NULL;
}

/* ssh's stderr, trimmed: blank lines and trailing white space go, lines join with "; ". */
static char *stderr_text(const ssh_conn_t *c) {
  buf_t out;
  buf_init(&out, 0);
  size_t i = 0;
  while (i < c->errlen) {
    size_t j = i;
    while (j < c->errlen && c->errbuf[j] != '\n') j++;
    size_t a = i, b = j;
    while (a < b && (c->errbuf[a] == ' ' || c->errbuf[a] == '\t' || c->errbuf[a] == '\r')) a++;
    while (b > a && (c->errbuf[b - 1] == ' ' || c->errbuf[b - 1] == '\t' || c->errbuf[b - 1] == '\r')) b--;
    if (b > a) {
      if (out.len > 0 && buf_append_str(&out, "; ") != 0) break;
      for (size_t k = a; k < b; k++) {
        unsigned char ch = (unsigned char)c->errbuf[k];
        char v = ch < 0x20 || ch == 0x7f ? '?' : (char)ch;
        if (buf_append(&out, &v, 1) != 0) break;
      }
    }
    i = j + 1;
  }
  if (buf_terminate(&out) != 0) {
    buf_free(&out);
    return NULL;
  }
  return buf_steal(&out, NULL);
}

int ssh_conn_failure(const ssh_conn_t *c, const char *display, err_t *err) {
  if (c == NULL || !c->exited) return 0;
  int failed = c->exit_status != 0 || (c->term_signal != 0 && !c->killed);
  if (!failed) return 0;
  char *text = stderr_text(c);
  char how[64];
  if (c->term_signal != 0) snprintf(how, sizeof(how), "ssh ended by signal %d", c->term_signal);
  else snprintf(how, sizeof(how), "ssh exited with status %lld", (long long)c->exit_status);
  if (text != NULL && text[0] != 0)
    err_sandbox(err, CODE_DOCKER_UNAVAILABLE, "Docker engine is not reachable at %s: %s", display, text);
  else
    err_sandbox(err, CODE_DOCKER_UNAVAILABLE, "Docker engine is not reachable at %s: %s.", display, how);
  err_set_details(err, json_pack("{s:s, s:I, s:i, s:s, s:s}", "endpoint", display, "exitStatus",
                                 (json_int_t)c->exit_status, "signal", c->term_signal, "stderr", text ? text : "",
                                 "reason", how));
  free(text);
  return 1;
}

static void spares_drop(ssh_transport_t *t);
static void transport_detach(ssh_transport_t *t);
static void transport_release(ssh_transport_t *t);
static void on_listen_closed(uv_handle_t *h);
static void listener_remove(ssh_transport_t *t);

static void ssh_teardown(io_t *io) {
  /* The environment ends: the transports let go of their spares and timers, and every
   * process of ours still running is ended; their exit callbacks close the handles, which
   * the I/O context waits for. */
  while (io->ssh_transports != NULL) {
    ssh_transport_t *t = io->ssh_transports;
    spares_drop(t);
    transport_detach(t);
  }
  ssh_conn_t *c = io->ssh_conns;
  while (c != NULL) {
    ssh_conn_t *next = c->next;
    /* Referenced from now on: the loop runs until every process has been reaped (an
     * unreferenced handle alone would let it stop first, leaving the processes to init). */
    if (c->proc_open) uv_ref((uv_handle_t *)&c->proc);
    if (c->err_open) uv_ref((uv_handle_t *)&c->err_pipe);
    if (c->exited) {
      conn_stop_stderr(c);
      conn_maybe_done(c); /* may unlink c */
    } else {
      conn_kill(c, SIGKILL);
    }
    c = next;
  }
}

/* Starts `ssh ...` with `child_fd` as its stdin and stdout (closed here, whatever
 * happens), or with one end of a new socketpair when child_fd is -1 (the other end is
 * the connection's fd). */
static ssh_conn_t *conn_spawn_fd(ssh_transport_t *t, int child_fd, err_t *err);

static ssh_conn_t *conn_spawn(ssh_transport_t *t, err_t *err) { return conn_spawn_fd(t, -1, err); }

static ssh_conn_t *conn_spawn_fd(ssh_transport_t *t, int child_fd, err_t *err) {
  io_t *io = t->io;
  ssh_conn_t *c = NULL;
  int sv[2] = {-1, child_fd};
  if (io == NULL || io->closing) {
    err_sandbox(err, CODE_INVALID_STATE, "The addon is shutting down.");
    goto fail;
  }
  if (io_on_close(io, ssh_teardown) != 0 || (c = calloc(1, sizeof(*c))) == NULL) {
    err_oom(err);
    goto fail;
  }
  c->io = io;
  c->fd = -1;
  if (child_fd < 0 && socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    err_sandbox(err, CODE_DOCKER_UNAVAILABLE, "Cannot make a socket for ssh: %s", strerror(errno));
    goto fail;
  }
  if (uv_pipe_init(io->uv, &c->err_pipe, 0) != 0) {
    err_oom(err);
    goto fail;
  }
  c->err_pipe.data = c;
  c->err_open = 1;
  c->refs = 1; /* the stderr pipe's, until it is closed */
  io_handle_opened(io);
  c->proc.data = c;
  uv_stdio_container_t stdio[3];
  stdio[0].flags = UV_INHERIT_FD;
  stdio[0].data.fd = sv[1];
  stdio[1].flags = UV_INHERIT_FD;
  stdio[1].data.fd = sv[1];
  stdio[2].flags = (uv_stdio_flags)(UV_CREATE_PIPE | UV_WRITABLE_PIPE);
  stdio[2].data.stream = (uv_stream_t *)&c->err_pipe;
  uv_process_options_t o;
  memset(&o, 0, sizeof(o));
  o.exit_cb = on_exit_cb;
  o.file = t->argv[0];
  o.args = t->argv;
  o.stdio = stdio;
  o.stdio_count = 3;
  o.flags = UV_PROCESS_DETACHED | UV_PROCESS_WINDOWS_HIDE;
  int rc = uv_spawn(io->uv, &c->proc, &o);
  close(sv[1]);
  /* uv_spawn initialises the process handle even when it fails: it is closed either way,
   * and holds a reference until then. */
  c->refs++;
  io_handle_opened(io);
  if (rc != 0) {
    if (sv[0] >= 0) close(sv[0]);
    c->err_open = 0;
    uv_close((uv_handle_t *)&c->err_pipe, on_conn_handle_closed);
    uv_close((uv_handle_t *)&c->proc, on_conn_handle_closed);
    if (rc == UV_ENOENT)
      err_sandbox(err, CODE_DOCKER_UNAVAILABLE, "Docker engine at %s cannot be reached: no `ssh` client was found on PATH.",
                  t->display);
    else
      err_sandbox(err, CODE_DOCKER_UNAVAILABLE, "Docker engine at %s cannot be reached: ssh cannot be started: %s",
                  t->display, uv_strerror(rc));
    err_set_details(err, json_pack("{s:s, s:s}", "endpoint", t->display, "reason", uv_strerror(rc)));
    return NULL;
  }
  c->proc_open = 1;
  uv_unref((uv_handle_t *)&c->proc);
  uv_unref((uv_handle_t *)&c->err_pipe);
  c->next = io->ssh_conns;
  if (c->next) c->next->prev = c;
  io->ssh_conns = c;
  if (uv_read_start((uv_stream_t *)&c->err_pipe, on_err_alloc, on_err_read) == 0) c->err_reading = 1;
  if (sv[0] >= 0) {
    int fl = fcntl(sv[0], F_GETFL);
    if (fl >= 0) fcntl(sv[0], F_SETFL, fl | O_NONBLOCK);
  }
  c->fd = sv[0];
  c->spawned_ns = uv_hrtime();
  trace_event("ssh %d started", c->proc.pid);
  return c;
fail:
  if (sv[0] >= 0) close(sv[0]);
  if (sv[1] >= 0) close(sv[1]);
  free(c);
  return NULL;
}

/* ---- spares ---- */

static void spares_fill(ssh_transport_t *t) {
  while (!t->freed && t->io != NULL && t->warm && t->nspares < t->spare_target && !t->io->closing) {
    err_t err = ERR_INIT;
    ssh_conn_t *c = conn_spawn(t, &err);
    err_clear(&err);
    if (c == NULL) return;
    c->refs++; /* the transport's, while the connection is a spare */
    ssh_conn_t **p = &t->spares;
    while (*p) p = &(*p)->spare_next;
    *p = c;
    t->nspares++;
  }
}

/* Ends every spare: closing our end makes ssh exit; the process reference frees it. */
static void spares_drop(ssh_transport_t *t) {
  while (t->spares) {
    ssh_conn_t *c = t->spares;
    t->spares = c->spare_next;
    c->spare_next = NULL;
    t->nspares--;
    if (c->fd >= 0) {
      close(c->fd);
      c->fd = -1;
    }
    conn_kill(c, SIGTERM);
    ssh_conn_unref(c); /* the transport's reference */
  }
}

static void transport_release(ssh_transport_t *t) {
  live_remove(t); /* (listener_remove did, unless the context went first) */
  ssh_conn_unref(t->recent);
  err_clear(&t->spawn_err);
  free(t->sock_path);
  free(t->dir);
  free(t->display);
  free(t);
}

static void on_idle_closed(uv_handle_t *h) {
  ssh_transport_t *t = h->data;
  io_t *io = t->io_at_close;
  if (--t->handles_closing == 0 && t->freed) transport_release(t);
  io_handle_closed(io);
}

/* The transport lets go of the I/O context (torn down, or the transport freed): off its
 * list, its idle timer closed. Afterwards it never touches the context again. */
static void transport_detach(ssh_transport_t *t) {
  io_t *io = t->io;
  if (io == NULL) return;
  if (t->prev) t->prev->next = t->next;
  else if (io->ssh_transports == t) io->ssh_transports = t->next;
  if (t->next) t->next->prev = t->prev;
  t->prev = t->next = NULL;
  t->io = NULL;
  t->io_at_close = io;
  if (t->idle_open) {
    t->idle_open = 0;
    t->idle_closing = 1;
    t->handles_closing++;
    uv_timer_stop(&t->idle);
    uv_close((uv_handle_t *)&t->idle, on_idle_closed);
  }
  if (t->listen_open) {
    t->listen_open = 0;
    t->handles_closing++;
    uv_poll_stop(&t->listen_poll);
    uv_close((uv_handle_t *)&t->listen_poll, on_listen_closed);
  }
  listener_remove(t);
}

static void on_idle(uv_timer_t *timer) {
  ssh_transport_t *t = timer->data;
  trace_event("ssh: %d idle spare(s) ended", t->nspares);
  spares_drop(t);
}

static void idle_restart(ssh_transport_t *t) {
  if (!t->idle_open) {
    if (t->io == NULL || t->idle_closing || t->io->closing || uv_timer_init(t->io->uv, &t->idle) != 0) return;
    t->idle.data = t;
    t->idle_open = 1;
    io_handle_opened(t->io);
    uv_unref((uv_handle_t *)&t->idle);
  }
  uv_timer_start(&t->idle, on_idle, SSH_SPARE_IDLE_MS, 0);
}

void ssh_transport_warm(ssh_transport_t *t) {
  if (t == NULL || t->warm) return;
  t->warm = 1;
  spares_fill(t);
  if (t->nspares > 0) idle_restart(t);
}

int ssh_transport_connect(ssh_transport_t *t, ssh_conn_t **conn, err_t *err) {
  if (conn) *conn = NULL;
  if (t->io == NULL) {
    err_sandbox(err, CODE_INVALID_STATE, "The addon is shutting down.");
    return -1;
  }
  ssh_conn_t *c = NULL;
  /* The oldest spare whose process still runs (the likeliest to be logged in by now). */
  while (t->spares != NULL && c == NULL) {
    ssh_conn_t *s = t->spares;
    t->spares = s->spare_next;
    s->spare_next = NULL;
    t->nspares--;
    if (s->exited) {
      ssh_conn_unref(s);
      continue;
    }
    c = s; /* the transport's reference moves to the caller below */
  }
  if (c == NULL) {
    c = conn_spawn(t, err);
    if (c == NULL) return -1;
    c->refs++; /* the caller's (or dropped below) */
  }
  int fd = c->fd;
  c->fd = -1;
  if (conn) *conn = c;
  else ssh_conn_unref(c);
  if (t->warm) {
    spares_fill(t);
    idle_restart(t);
  }
  return fd;
}

/* ---- libcurl's connections ---- */

static void on_listen(uv_poll_t *p, int status, int events) {
  ssh_transport_t *t = p->data;
  (void)events;
  if (status < 0 || t->io == NULL) return;
  for (;;) {
    int fd = accept4(t->listen_fd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR) continue;
      return; /* EAGAIN: all taken; anything else: libcurl sees its connection fail */
    }
    err_t err = ERR_INIT;
    ssh_conn_t *c = conn_spawn_fd(t, fd, &err); /* closes fd in any case */
    if (c == NULL) {
      /* libcurl's connection is closed under it: the request fails, with this reason. */
      err_clear(&t->spawn_err);
      err_move(&t->spawn_err, &err);
      continue;
    }
    err_clear(&t->spawn_err);
    ssh_conn_unref(t->recent);
    t->recent = c; /* explains a failure of the connection (ssh_transport_recent) */
    c->refs++;
  }
}

static void on_listen_closed(uv_handle_t *h) {
  ssh_transport_t *t = h->data;
  io_t *io = t->io_at_close;
  if (--t->handles_closing == 0 && t->freed) transport_release(t);
  io_handle_closed(io);
}

/* The private directory and socket libcurl connects to. 0, or -1 with err set. */
static int listener_open(ssh_transport_t *t, err_t *err) {
  const char *tmp = getenv("TMPDIR");
  if (tmp == NULL || tmp[0] != '/' || strlen(tmp) > 60) tmp = "/tmp";
  buf_t b;
  buf_init(&b, 0);
  if (buf_printf(&b, "%s/anvia-ssh-XXXXXX", tmp) != 0 || buf_terminate(&b) != 0) goto oom;
  t->dir = buf_steal(&b, NULL);
  if (t->dir == NULL) goto oom;
  if (mkdtemp(t->dir) == NULL) {
    err_sandbox(err, CODE_DOCKER_UNAVAILABLE, "Cannot make a private directory for ssh connections in %s: %s", tmp,
                strerror(errno));
    free(t->dir);
    t->dir = NULL;
    return -1;
  }
  live_add(t);
  buf_init(&b, 0);
  if (buf_printf(&b, "%s/engine.sock", t->dir) != 0 || buf_terminate(&b) != 0) goto oom;
  t->sock_path = buf_steal(&b, NULL);
  if (t->sock_path == NULL) goto oom;
  struct sockaddr_un a;
  memset(&a, 0, sizeof(a));
  a.sun_family = AF_UNIX;
  if (strlen(t->sock_path) >= sizeof(a.sun_path)) {
    errno = ENAMETOOLONG;
    goto fail_errno;
  }
  memcpy(a.sun_path, t->sock_path, strlen(t->sock_path) + 1);
  t->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (t->listen_fd < 0 || bind(t->listen_fd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(t->listen_fd, 128) != 0)
    goto fail_errno;
  if (uv_poll_init(t->io->uv, &t->listen_poll, t->listen_fd) != 0) goto fail_errno;
  t->listen_poll.data = t;
  t->listen_open = 1;
  io_handle_opened(t->io);
  uv_unref((uv_handle_t *)&t->listen_poll);
  uv_poll_start(&t->listen_poll, UV_READABLE, on_listen);
  return 0;
fail_errno:
  err_sandbox(err, CODE_DOCKER_UNAVAILABLE, "Cannot listen for ssh connections on %s: %s", t->sock_path,
              strerror(errno));
  return -1;
oom:
  buf_free(&b);
  return err_oom(err);
}

/* Removes the socket and its directory (the poll handle is closed by the caller). */
static void listener_remove(ssh_transport_t *t) {
  if (t->dir) live_remove(t);
  if (t->listen_fd >= 0) close(t->listen_fd);
  t->listen_fd = -1;
  if (t->sock_path) unlink(t->sock_path);
  if (t->dir) rmdir(t->dir);
}

const char *ssh_transport_socket_path(const ssh_transport_t *t) { return t->sock_path; }

ssh_conn_t *ssh_transport_recent(ssh_transport_t *t, uint64_t since_ns) {
  ssh_conn_t *c = t->recent;
  if (c == NULL || c->spawned_ns < since_ns) return NULL;
  c->refs++;
  return c;
}

int ssh_transport_spawn_failure(const ssh_transport_t *t, err_t *err) {
  if (!err_is_set(&t->spawn_err)) return 0;
  err_copy(err, &t->spawn_err);
  return 1;
}

/* ---- the transport ---- */

static int argv_push(char ***argv, size_t *n, const char *s) {
  char **v = realloc(*argv, (*n + 2) * sizeof(char *));
  if (v == NULL) return -1;
  *argv = v;
  v[*n] = strdup(s);
  if (v[*n] == NULL) return -1;
  (*n)++;
  v[*n] = NULL;
  return 0;
}

/* The remote command line is one string for the remote user's shell: the socket path is
 * single-quoted. */
static char *remote_host_arg(const char *path) {
  buf_t b;
  buf_init(&b, 0);
  int rc = buf_append_str(&b, "'--host=unix://");
  for (const char *p = path; rc == 0 && *p; p++) rc = *p == '\'' ? buf_append_str(&b, "'\\''") : buf_append(&b, p, 1);
  if (rc == 0) rc = buf_append_str(&b, "'");
  if (rc == 0) rc = buf_terminate(&b);
  if (rc != 0) {
    buf_free(&b);
    return NULL;
  }
  return buf_steal(&b, NULL);
}

ssh_transport_t *ssh_transport_new(io_t *io, const endpoint_t *ep, err_t *err) {
  ssh_transport_t *t = calloc(1, sizeof(*t));
  if (t == NULL) {
    err_oom(err);
    return NULL;
  }
  t->io = io;
  t->listen_fd = -1;
  t->display = strdup(ep->display ? ep->display : "ssh://");
  if (t->display == NULL || io_on_close(io, ssh_teardown) != 0) {
    free(t->display);
    free(t);
    err_oom(err);
    return NULL;
  }
  t->next = io->ssh_transports;
  if (t->next) t->next->prev = t;
  io->ssh_transports = t;
  const char *spares = getenv("ANVIA_SANDBOX_SSH_SPARES");
  t->spare_target = SSH_SPARES_DEFAULT;
  if (spares != NULL && spares[0] != 0 && strspn(spares, "0123456789") == strlen(spares) && strlen(spares) < 4) {
    t->spare_target = atoi(spares);
    if (t->spare_target > SSH_SPARES_MAX) t->spare_target = SSH_SPARES_MAX;
  }
  size_t n = 0;
  char port[16];
  snprintf(port, sizeof(port), "%d", ep->port);
  char *host_arg = ep->ssh_path ? remote_host_arg(ep->ssh_path) : NULL;
  /* As the docker CLI runs it (cli/connhelper), plus BatchMode: nobody can answer a
   * prompt here (no terminal; stdin and stdout carry the engine's bytes). */
  int rc = ep->ssh_path && host_arg == NULL;
  if (!rc) rc = argv_push(&t->argv, &n, "ssh") || argv_push(&t->argv, &n, "-o") ||
                argv_push(&t->argv, &n, "ConnectTimeout=30") || argv_push(&t->argv, &n, "-o") ||
                argv_push(&t->argv, &n, "BatchMode=yes") || argv_push(&t->argv, &n, "-T");
  if (!rc && ep->ssh_user) rc = argv_push(&t->argv, &n, "-l") || argv_push(&t->argv, &n, ep->ssh_user);
  if (!rc && ep->port) rc = argv_push(&t->argv, &n, "-p") || argv_push(&t->argv, &n, port);
  if (!rc) rc = argv_push(&t->argv, &n, "--") || argv_push(&t->argv, &n, ep->host) || argv_push(&t->argv, &n, "docker");
  if (!rc && host_arg) rc = argv_push(&t->argv, &n, host_arg);
  if (!rc) rc = argv_push(&t->argv, &n, "system") || argv_push(&t->argv, &n, "dial-stdio");
  free(host_arg);
  if (rc) {
    ssh_transport_free(t);
    err_oom(err);
    return NULL;
  }
  if (listener_open(t, err) != 0) {
    ssh_transport_free(t);
    return NULL;
  }
  return t;
}

void ssh_transport_free(ssh_transport_t *t) {
  if (t == NULL) return;
  t->freed = 1;
  spares_drop(t);
  if (t->argv) {
    for (char **p = t->argv; *p; p++) free(*p);
    free(t->argv);
    t->argv = NULL;
  }
  transport_detach(t);
  if (t->handles_closing == 0) transport_release(t); /* else once its handles are closed */
}

