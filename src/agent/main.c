/*
 * main.c - the agent's start, its one poll() loop, its timers and the end of its exit path.
 *
 * Owns: the configuration in `g` (from the command line and what the kernel offers), the
 * input buffer (allocated once here, filled by conn.c), the signalfd, and the process's
 * lifetime: the loop ends when the exit path (started by shutdown_begin, shutdown.c) is
 * complete. The agent runs as one long-lived `docker exec` (no TTY): stdin and stdout
 * carry the protocol (src/agent/PROTOCOL.md), stderr its own diagnostics.
 *
 *   anvia-agent [--workdir PATH] [--heartbeat-ms N] [--term-dir PATH] [--no-openat2] [--version]
 *   anvia-agent init IDLE_MS MAX_MS     process 1 of a sandbox with limits (init.c)
 *
 * It exits after end of input, host silence longer than --heartbeat-ms (any frame counts;
 * 0 disables the check), SIGTERM/SIGINT/SIGHUP, a framing error, or a broken stdout; on
 * the way out it ends the tree of every command it started that is not detached, and
 * leaves a small drainer process reading the detached commands' output so they never
 * die of SIGPIPE. Exit codes: 0 end of input or stdout closed, 1 bad start, 2 heartbeat,
 * 3 protocol error, 4 signal.
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
#include <sys/syscall.h>
#include <unistd.h>

#include "agent.h"

#ifndef PR_SET_CHILD_SUBREAPER
#define PR_SET_CHILD_SUBREAPER 36
#endif
#ifndef SYS_close_range
#define SYS_close_range 436
#endif
#define AG_CLOSE_RANGE_CLOEXEC 4u
#define IN_CAP (AW_HEADER_LEN + AW_MAX_PAYLOAD + 65536u)

extern char **environ;

static int shutdown_complete(void) {
  if (util_now_ms() >= g.shutdown_deadline_ms) return 1;
  for (req_t *r = g.head; r != NULL; r = r->next) {
    if (r->finished) continue;
    if (op_detached(r)) continue;
    return 0;
  }
  return g.out.len == 0 || g.out_broken;
}

/* ---- start ---- */

static void usage(void) {
  fprintf(stderr, "usage: anvia-agent [--workdir PATH] [--heartbeat-ms N] [--term-dir PATH] [--no-openat2] [--version]\n");
}

static int parse_u32(const char *s, uint32_t *out) {
  char *end;
  errno = 0;
  unsigned long v = strtoul(s, &end, 10);
  if (errno || *end || end == s || v > 0xffffffffUL || s[0] == '-') return -1;
  *out = (uint32_t)v;
  return 0;
}

static void ensure_std_fds(void) {
  for (int fd = 0; fd < 3; fd++) {
    if (fcntl(fd, F_GETFD) >= 0) continue;
    /* A closed standard descriptor would be taken by the next pipe; park a dead pipe end
     * there instead (no file of the image is needed). */
    int p[2];
    if (pipe(p) < 0) continue;
    if (fd == 0) {
      if (p[0] != 0) {
        dup2(p[0], 0);
        close(p[0]);
      }
      close(p[1]);
    } else {
      if (p[1] != fd) {
        dup2(p[1], fd);
        close(p[1]);
      }
      close(p[0]);
    }
  }
}

static void cloexec_inherited(void) {
  if (syscall(SYS_close_range, 3u, ~0u, AG_CLOSE_RANGE_CLOEXEC) == 0) return;
  for (int fd = 3; fd < 1024; fd++) {
    int fl = fcntl(fd, F_GETFD);
    if (fl >= 0 && !(fl & FD_CLOEXEC)) fcntl(fd, F_SETFD, fl | FD_CLOEXEC);
  }
}

static int setup(int argc, char **argv) {
  int no_openat2 = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--workdir") == 0 && i + 1 < argc) {
      g.workdir = argv[++i];
    } else if (strcmp(a, "--term-dir") == 0 && i + 1 < argc) {
      g.term_dir = argv[++i]; /* the terminals' directory (term.c), for tests */
    } else if (strcmp(a, "--heartbeat-ms") == 0 && i + 1 < argc) {
      if (parse_u32(argv[++i], &g.heartbeat_ms) < 0) {
        usage();
        return -1;
      }
    } else if (strcmp(a, "--no-openat2") == 0) {
      no_openat2 = 1;
    } else if (strcmp(a, "--version") == 0) {
#ifndef AGENT_BUILD
#define AGENT_BUILD "dev"
#endif
      printf("anvia-agent protocol %u build %s\n", AW_VERSION, AGENT_BUILD);
      exit(0);
    } else {
      usage();
      return -1;
    }
  }
  if (g.workdir && g.workdir[0] != '/') {
    fprintf(stderr, "anvia-agent: --workdir must be absolute\n");
    return -1;
  }
  if (g.term_dir && (g.term_dir[0] != '/' || strlen(g.term_dir) > AW_MAX_PATH)) {
    fprintf(stderr, "anvia-agent: --term-dir must be absolute and at most %u bytes\n", AW_MAX_PATH);
    return -1;
  }
  if (g.workdir && strlen(g.workdir) > AW_MAX_PATH) {
    fprintf(stderr, "anvia-agent: --workdir too long\n");
    return -1;
  }
  signal(SIGPIPE, SIG_IGN);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGCHLD);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  if (sigprocmask(SIG_BLOCK, &set, NULL) < 0) return -1;
  g.sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
  if (g.sigfd < 0) {
    fprintf(stderr, "anvia-agent: signalfd: %s\n", strerror(errno));
    return -1;
  }
  if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0) g.caps |= AW_CAP_SUBREAPER;
  /* Not dumpable: /proc/<agent>/ becomes root's, so a command running as the same
   * (non-root) user can neither open the agent's pipes through /proc/<pid>/fd to inject
   * frames nor ptrace it. Commands are unaffected: execve makes them dumpable again. */
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  g.proc_ok = access("/proc/self/stat", R_OK) == 0;
  if (access("/proc/net/tcp", R_OK) == 0 || access("/proc/net/tcp6", R_OK) == 0) g.caps |= AW_CAP_NET_TCP;
  g.use_openat2 = !no_openat2 && walk_openat2_probe();
  if (exec_env_init(environ) < 0) return -1;
  g.workdir_fd = -1;
  if (g.workdir) {
    ag_err_t e;
    (void)files_workdir(&e); /* opened now if it exists; retried on first use otherwise */
  }
  util_set_nonblock(0);
  util_set_nonblock(1);
  util_set_nonblock(2);
  g.inbuf = malloc(IN_CAP);
  if (g.inbuf == NULL) return -1;
  return 0;
}

/* ---- the loop ---- */

typedef struct pref {
  req_t *r;
  int kind; /* 0 out[0], 1 out[1], 2 the descriptor its input waits on (op_input_fd) */
} pref_t;

enum { P_IN = 0, P_OUT = 1, P_SIG = 2, P_FIRST = 3 };

static void on_signals(void) {
  struct signalfd_siginfo si;
  int chld = 0;
  for (;;) {
    ssize_t n = read(g.sigfd, &si, sizeof(si));
    if (n != (ssize_t)sizeof(si)) break;
    if (si.ssi_signo == SIGCHLD) chld = 1;
    else shutdown_begin(4, "signal");
  }
  /* Reap on every wake-up: SIGCHLDs coalesce. */
  (void)chld;
  exec_reap_children();
}

static void on_pipe_event(req_t *r, int kind, short revents) {
  if (r->finished) return;
  if (kind == 2) {
    op_input_ready(r);
    return;
  }
  ostream_t *o = &r->out[kind];
  if (!o->active) return;
  if (revents & POLLIN) {
    o->ready = 1;
    return;
  }
  if (revents & (POLLHUP | POLLERR)) {
    if (o->credit > 0 && r->id != 0) {
      o->ready = 1; /* the read will see the end */
      return;
    }
    int avail = 0;
    if (ioctl(o->fd, FIONREAD, &avail) == 0 && avail == 0) {
      util_close_fd(&o->fd);
      o->active = 0;
      o->ready = 0;
      op_output_closed(r);
    } else {
      o->hup = 1; /* bytes wait for credit: stop polling until it comes */
    }
  }
}

static int64_t next_timer(int64_t now) {
  int64_t t = -1;
#define CONSIDER(v)                                   \
  do {                                                \
    int64_t v_ = (v);                                 \
    if (v_ > 0 && (t < 0 || v_ < t)) t = v_;          \
  } while (0)
  if (g.heartbeat_ms && !g.shutting_down) CONSIDER(g.last_rx_ms + g.heartbeat_ms);
  if (g.shutting_down) CONSIDER(g.shutdown_deadline_ms);
  CONSIDER(op_next_due());
  if (t < 0) return -1;
  return t > now ? t - now : 0;
}

static void run_timers(int64_t now) {
  if (g.heartbeat_ms && !g.shutting_down && now - g.last_rx_ms >= (int64_t)g.heartbeat_ms)
    shutdown_begin(2, "no frame from the host within the heartbeat");
  op_run_timers(now);
}

/* Something could be read into the queue right now (a file, a listing, a pipe already
 * known readable): poll must not sleep. Never while the queue is full: then the wake-up
 * is stdout becoming writable. */
static int sources_waiting(void) {
  if (g.out.len >= AG_OUT_HIGH || g.out_broken) return 0;
  for (req_t *r = g.head; r != NULL; r = r->next)
    for (int k = 0; k < r->nout; k++)
      if (!r->finished && op_source_ready(r, k)) return 1;
  return 0;
}

static int input_has_frame(void) {
  aw_header_t h;
  const uint8_t *p;
  size_t fl;
  return aw_frame_parse(g.inbuf, g.in_len, AW_FROM_HOST, &h, &p, &fl) != 0;
}

static void loop(void) {
  size_t cap = 0;
  struct pollfd *pfd = NULL;
  pref_t *refs = NULL;
  for (;;) {
    if (g.shutting_down && shutdown_complete()) break;
    size_t need = P_FIRST + g.nrecords * 3;
    if (need > cap) {
      size_t ncap = need * 2;
      struct pollfd *np = realloc(pfd, ncap * sizeof(*np));
      if (np == NULL) break;
      pfd = np;
      pref_t *nr = realloc(refs, ncap * sizeof(*nr));
      if (nr == NULL) break;
      refs = nr;
      cap = ncap;
    }
    int can_in = !g.in_eof && !g.in_dead && g.out.len < AG_OUT_PAUSE_IN;
    pfd[P_IN].fd = can_in ? g.in_fd : -1;
    pfd[P_IN].events = POLLIN;
    pfd[P_OUT].fd = g.out.len > 0 && !g.out_broken ? g.out_fd : -1;
    pfd[P_OUT].events = POLLOUT;
    pfd[P_SIG].fd = g.sigfd;
    pfd[P_SIG].events = POLLIN;
    size_t n = P_FIRST;
    for (req_t *r = g.head; r != NULL; r = r->next) {
      if (r->finished || !op_polled(r)) continue;
      for (int k = 0; k < r->nout; k++) {
        ostream_t *o = &r->out[k];
        if (!o->active || o->fd < 0) continue;
        int has_credit = o->credit > 0 && r->id != 0;
        if (o->hup && !has_credit) continue;
        if (has_credit && o->ready) continue; /* already known readable */
        pfd[n].fd = o->fd;
        pfd[n].events = has_credit ? POLLIN : 0;
        refs[n].r = r;
        refs[n].kind = k;
        n++;
      }
      int in_fd = op_input_fd(r);
      if (in_fd >= 0) {
        pfd[n].fd = in_fd;
        pfd[n].events = POLLOUT;
        refs[n].r = r;
        refs[n].kind = 2;
        n++;
      }
    }
    int64_t now = util_now_ms();
    int64_t wait = next_timer(now);
    if (sources_waiting()) wait = 0;
    if (wait > 60000) wait = 60000;
    int rc = poll(pfd, (nfds_t)n, (int)wait);
    if (rc < 0 && errno != EINTR) {
      util_log("poll: %s", strerror(errno));
      break;
    }
    if (rc > 0) {
      if (pfd[P_SIG].revents) on_signals();
      for (size_t i = P_FIRST; i < n; i++)
        if (pfd[i].revents) on_pipe_event(refs[i].r, refs[i].kind, pfd[i].revents);
      if (pfd[P_IN].fd >= 0 && pfd[P_IN].revents) conn_read();
      if (pfd[P_OUT].fd >= 0 && (pfd[P_OUT].revents & (POLLERR | POLLHUP)) && !(pfd[P_OUT].revents & POLLOUT))
        out_hangup();
    }
    run_timers(util_now_ms());
    if (!g.in_dead) conn_dispatch_pending();
    if (g.in_eof && !g.shutting_down && !input_has_frame()) shutdown_begin(0, "end of input");
    op_schedule_output();
    out_flush();
    exec_reap_children();
    op_sweep();
  }
  free(pfd);
  free(refs);
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "init") == 0) return init_main(argc, argv);
  shutdown_install(op_end_all);
  g.self = getpid();
  g.in_fd = 0;
  g.out_fd = 1;
  g.sigfd = -1;
  g.workdir_fd = -1;
  ensure_std_fds();
  cloexec_inherited();
  if (setup(argc, argv) < 0) return 1;
  g.last_rx_ms = util_now_ms();
  out_hello();
  out_flush();
  loop();
  exec_spawn_drainer();
  out_flush();
  return g.exit_code;
}
