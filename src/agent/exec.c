/*
 * exec.c - EXEC: the environment, spawning a command in its own session, its stdin,
 * stdout and stderr pipes, its output, its timeout, its cancellation, reaping, EXITED and
 * RESULT; and the drainer that keeps detached commands' output flowing after the agent
 * exits.
 *
 * Owns: the base environment (g.base_env); per EXEC record, the child's pipes (stdin
 * write end, stdout and stderr read ends) and the stdin buffer; exec_close releases them.
 * The spawn block (argv, envp) is owned by exec_start and freed before it returns. Spawn
 * failures are reported through a close-on-exec pipe from the child, so a missing
 * executable or a bad cwd is an ERROR of kind spawn_failed, distinct from anything the
 * command itself does.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <dirent.h>
#include <unistd.h>

#include "agent.h"

#define DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#define OWN_PREFIX "ANVIA_AGENT_"

/* ---- environment ---- */

int exec_env_init(char **envp) {
  size_t n = 0;
  for (char **e = envp; e && *e; e++) n++;
  g.base_env = calloc(n + 1, sizeof(char *));
  if (g.base_env == NULL) return -1;
  g.base_envc = 0;
  for (char **e = envp; e && *e; e++) {
    if (strncmp(*e, OWN_PREFIX, sizeof(OWN_PREFIX) - 1) == 0) continue;
    if (strchr(*e, '=') == NULL) continue;
    g.base_env[g.base_envc++] = *e;
  }
  return 0;
}

static int same_name(const char *a, const char *b) {
  while (*a && *a != '=' && *a == *b) {
    a++;
    b++;
  }
  return *a == '=' && *b == '=';
}

/* ---- spawn ---- */

/* Sets NAME=value in envp[0..envc), replacing the same NAME: the new count. */
static size_t env_put(char **envp, size_t envc, char *kv) {
  size_t k;
  for (k = 0; k < envc; k++)
    if (same_name(envp[k], kv)) break;
  envp[k] = kv;
  return k == envc ? envc + 1 : envc;
}

typedef struct spawn {
  char **argv;
  char **envp;
  const char *cwd;
  const char *path; /* PATH of the command's environment */
  void *block;
} spawn_t;

/* What the child writes to the report pipe when it cannot become the command: this
 * header, then `path_len` bytes of the path it last tried to execute. */
typedef struct spawn_report {
  uint8_t stage;
  uint8_t searched;
  uint16_t path_len;
  int32_t err;
} spawn_report_t;
#define REPORT_PATH_MAX 4096

/* Copies of argv and the merged environment, in one allocation: the agent's environment,
 * then `preset` (a NAME=value or NULL), then the request's, a later NAME replacing an
 * earlier one. */
static int spawn_build(const aw_exec_req_t *m, const char *preset, spawn_t *s, ag_err_t *e) {
  size_t strings = m->cwd.len + 1;
  aw_list_t it = m->argv;
  aw_bytes_t b;
  while (aw_list_next(&it, &b)) strings += b.len + 1;
  it = m->env;
  while (aw_list_next(&it, &b)) strings += b.len + 1;
  size_t nptr = (size_t)m->argv.count + 1 + g.base_envc + 1 + m->env.count + 1;
  size_t total = nptr * sizeof(char *) + strings;
  char *block = malloc(total);
  if (block == NULL) {
    ag_err_set(e, AW_E_RESOURCES, ENOMEM, "out of memory for the command line");
    return -1;
  }
  char **argv = (char **)block;
  char **envp = argv + m->argv.count + 1;
  char *str = block + nptr * sizeof(char *);
  size_t i = 0;
  it = m->argv;
  while (aw_list_next(&it, &b)) {
    memcpy(str, b.p, b.len);
    str[b.len] = 0;
    argv[i++] = str;
    str += b.len + 1;
  }
  argv[i] = NULL;
  size_t envc = 0;
  for (size_t k = 0; k < g.base_envc; k++) envp[envc++] = g.base_env[k];
  if (preset != NULL) envc = env_put(envp, envc, (char *)preset);
  it = m->env;
  while (aw_list_next(&it, &b)) {
    memcpy(str, b.p, b.len);
    str[b.len] = 0;
    envc = env_put(envp, envc, str);
    str += b.len + 1;
  }
  envp[envc] = NULL;
  if (m->cwd.len) {
    memcpy(str, m->cwd.p, m->cwd.len);
    str[m->cwd.len] = 0;
    s->cwd = str;
  } else {
    s->cwd = g.workdir ? g.workdir : "/";
  }
  s->path = DEFAULT_PATH;
  for (size_t k = 0; k < envc; k++)
    if (strncmp(envp[k], "PATH=", 5) == 0) s->path = envp[k] + 5;
  s->argv = argv;
  s->envp = envp;
  s->block = block;
  return 0;
}

static void child_report(int fd, uint8_t stage, int err, int searched, const char *path) __attribute__((noreturn));
static void child_report(int fd, uint8_t stage, int err, int searched, const char *path) {
  char buf[sizeof(spawn_report_t) + REPORT_PATH_MAX];
  size_t plen = path ? strlen(path) : 0;
  if (plen > REPORT_PATH_MAX) plen = 0;
  spawn_report_t rep = {stage, (uint8_t)searched, (uint16_t)plen, err};
  memcpy(buf, &rep, sizeof(rep));
  if (plen) memcpy(buf + sizeof(rep), path, plen);
  ssize_t w = write(fd, buf, sizeof(rep) + plen);
  (void)w;
  _exit(127);
}

/* The child between fork and exec: async-signal-safe calls only. */
static void child_run(const spawn_t *s, int in_fd, int out_fd, int err_fd, int tty, int rep_fd) __attribute__((noreturn));
static void child_run(const spawn_t *s, int in_fd, int out_fd, int err_fd, int tty, int rep_fd) {
  if (setsid() < 0) child_report(rep_fd, AW_STAGE_SETUP, errno, 0, NULL);
  if (tty && ioctl(in_fd, TIOCSCTTY, 0) < 0) child_report(rep_fd, AW_STAGE_SETUP, errno, 0, NULL);
  if (dup2(in_fd, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(err_fd, 2) < 0)
    child_report(rep_fd, AW_STAGE_SETUP, errno, 0, NULL);
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = SIG_DFL;
  for (int sig = 1; sig < 65; sig++) {
    if (sig == SIGKILL || sig == SIGSTOP) continue;
    sigaction(sig, &sa, NULL);
  }
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  if (chdir(s->cwd) < 0) child_report(rep_fd, AW_STAGE_CWD, errno, 0, s->cwd);
  const char *file = s->argv[0];
  if (strchr(file, '/') != NULL) {
    execve(file, s->argv, s->envp);
    child_report(rep_fd, AW_STAGE_EXEC, errno, 0, file);
  }
  /* Search PATH as Go's exec.LookPath does for runc: the first entry that execs wins;
   * entries that are missing or not executable are skipped; nothing found is ENOENT. */
  size_t flen = strlen(file);
  char buf[8192];
  if (flen + 2 > sizeof(buf)) child_report(rep_fd, AW_STAGE_EXEC, ENAMETOOLONG, 1, NULL);
  const char *p = s->path;
  for (;;) {
    const char *colon = strchr(p, ':');
    size_t dlen = colon ? (size_t)(colon - p) : strlen(p);
    if (dlen == 0) {
      buf[0] = '.';
      dlen = 1;
    } else if (dlen + flen + 2 <= sizeof(buf)) {
      memcpy(buf, p, dlen);
    } else {
      dlen = 0;
    }
    if (dlen) {
      buf[dlen] = '/';
      memcpy(buf + dlen + 1, file, flen + 1);
      execve(buf, s->argv, s->envp);
      int err = errno;
      if (err != ENOENT && err != ENOTDIR && err != EACCES && err != ELOOP && err != ENAMETOOLONG)
        child_report(rep_fd, AW_STAGE_EXEC, err, 1, buf); /* found, but it would not run */
    }
    if (!colon) break;
    p = colon + 1;
  }
  child_report(rep_fd, AW_STAGE_EXEC, ENOENT, 1, NULL);
}

static void close_pair(int p[2]) {
  util_close_fd(&p[0]);
  util_close_fd(&p[1]);
}

pid_t exec_spawn(const aw_exec_req_t *m, const char *preset, int in_fd, int out_fd, int err_fd, int tty,
                 ag_err_t *e) {
  spawn_t s;
  memset(&s, 0, sizeof(s));
  int prep[2] = {-1, -1};
  pid_t pid = -1;
  if (m->cwd.len && m->cwd.p[0] != '/') {
    ag_err_set(e, AW_E_INVALID, 0, "cwd must be an absolute path");
    goto fail;
  }
  if (spawn_build(m, preset, &s, e) < 0) goto fail;
  if (pipe2(prep, O_CLOEXEC) < 0) {
    ag_err_set(e, AW_E_RESOURCES, errno, "pipe");
    goto fail;
  }
  pid = fork();
  if (pid < 0) {
    ag_err_set(e, AW_E_RESOURCES, errno, "fork");
    e->stage = AW_STAGE_FORK;
    goto fail;
  }
  if (pid == 0) child_run(&s, in_fd, out_fd, err_fd, tty, prep[1]);
  util_close_fd(&prep[1]);
  /* End of file: the command runs (the pipe closed on exec). A report: it never did. */
  char repbuf[sizeof(spawn_report_t) + REPORT_PATH_MAX];
  size_t got = 0;
  for (;;) {
    ssize_t n = read(prep[0], repbuf + got, sizeof(repbuf) - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += (size_t)n;
    if (got == sizeof(repbuf)) break;
  }
  util_close_fd(&prep[0]);
  if (got >= sizeof(spawn_report_t)) {
    /* The child never became the command: reap it here, report why. */
    spawn_report_t rep;
    memcpy(&rep, repbuf, sizeof(rep));
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    pid = -1;
    size_t plen = rep.path_len;
    if (plen > got - sizeof(rep)) plen = got - sizeof(rep);
    const char *argv0 = s.argv[0];
    ag_err_set(e, AW_E_SPAWN, rep.err, NULL);
    if (rep.stage == AW_STAGE_EXEC && rep.searched && plen > 0) {
      /* Found on PATH but it would not run: the path found is what the engine names. */
      ag_err_detail_bytes(e, repbuf + sizeof(rep), plen);
      e->value = AW_SPAWN_SEARCHED | AW_SPAWN_RESOLVED;
    } else {
      const char *what = rep.stage == AW_STAGE_CWD ? s.cwd : argv0;
      ag_err_detail_bytes(e, what, strlen(what));
      e->value = rep.searched ? AW_SPAWN_SEARCHED : 0;
    }
    e->stage = rep.stage;
    goto fail;
  }
  free(s.block);
  return pid;
fail:
  close_pair(prep);
  free(s.block);
  return -1;
}

void exec_start(uint32_t id, const uint8_t *p, size_t len) {
  aw_exec_req_t m;
  ag_err_t e;
  int pin[2] = {-1, -1}, pout[2] = {-1, -1}, perr[2] = {-1, -1};
  req_t *r = NULL;
  int rc = aw_dec_exec(p, len, &m);
  if (rc != AW_OK) {
    ag_err_decode(&e, rc, "EXEC");
    goto fail;
  }
  if (pipe2(pin, O_CLOEXEC) < 0 || pipe2(pout, O_CLOEXEC) < 0 || pipe2(perr, O_CLOEXEC) < 0) {
    ag_err_set(&e, AW_E_RESOURCES, errno, "pipe");
    goto fail;
  }
  r = req_new(id, AW_T_EXEC);
  if (r == NULL) {
    ag_err_set(&e, AW_E_RESOURCES, ENOMEM, "out of memory");
    goto fail;
  }
  exec_state_t *x = &r->u.exec;
  x->stdin_fd = -1;
  x->detached = (m.flags & AW_EXEC_DETACHED) != 0;
  x->start_ms = util_now_ms();
  x->start_us = util_now_us();
  pid_t pid = exec_spawn(&m, NULL, pin[0], pout[1], perr[1], 0, &e);
  if (pid < 0) goto fail;
  util_close_fd(&pin[0]);
  util_close_fd(&pout[1]);
  util_close_fd(&perr[1]);
  x->pid = pid;
  if (m.timeout_ms) x->deadline_ms = x->start_ms + m.timeout_ms;
  r->nout = 2;
  r->out[0].fd = pout[0];
  r->out[1].fd = perr[0];
  pout[0] = perr[0] = -1;
  for (int i = 0; i < 2; i++) {
    util_set_nonblock(r->out[i].fd);
    r->out[i].active = 1;
    r->out[i].credit = m.window;
  }
  if (m.flags & AW_EXEC_STDIN) {
    r->has_in = 1;
    x->stdin_fd = pin[1];
    pin[1] = -1;
    util_set_nonblock(x->stdin_fd);
  } else {
    util_close_fd(&pin[1]); /* the command reads end-of-file at once */
  }
  aw_started_t st = {(uint32_t)pid, (uint32_t)pid};
  aw_writer_t w;
  if (out_frame_begin(&w, 64)) out_frame_end(&w, aw_put_started(&w, id, &st));
  return;
fail:
  close_pair(pin);
  close_pair(pout);
  close_pair(perr);
  out_error(id, &e);
  if (r != NULL) req_finish(r);
}

/* ---- stdin ---- */

/* Sends ERROR and ends the command (what op_fail does for an EXEC). */
static void exec_fail(req_t *r, const ag_err_t *e) {
  if (r->id != 0) out_error(r->id, e);
  exec_cancel(r, 0);
}

void exec_stdin_ready(req_t *r) {
  exec_state_t *x = &r->u.exec;
  while (x->stdin_fd >= 0 && x->stdin_len > 0) {
    ssize_t n = write(x->stdin_fd, x->stdin_buf, x->stdin_len);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) return;
      /* The command closed its stdin (EPIPE) or it broke: the rest is dropped, as the
       * command's own result is what matters; the host keeps its credit. */
      uint32_t dropped = (uint32_t)x->stdin_len;
      x->stdin_len = 0;
      util_close_fd(&x->stdin_fd);
      r->in.dead = 1;
      req_in_consumed(r, dropped, 1);
      return;
    }
    memmove(x->stdin_buf, x->stdin_buf + n, x->stdin_len - (size_t)n);
    x->stdin_len -= (size_t)n;
    req_in_consumed(r, (uint32_t)n, x->stdin_len == 0);
  }
  if (x->stdin_fd >= 0 && x->stdin_len == 0 && r->in.ended) util_close_fd(&x->stdin_fd);
}

void exec_stdin_data(req_t *r, const uint8_t *p, size_t len, int end) {
  exec_state_t *x = &r->u.exec;
  (void)end;
  if (x->stdin_fd < 0 || r->in.dead) {
    req_in_consumed(r, (uint32_t)len, 1);
    return;
  }
  if (len > 0) {
    if (x->stdin_buf == NULL) {
      x->stdin_buf = malloc(AG_MAX_STDIN_BUF);
      if (x->stdin_buf == NULL) {
        ag_err_t e;
        ag_err_set(&e, AW_E_RESOURCES, ENOMEM, "out of memory for stdin");
        exec_fail(r, &e);
        return;
      }
    }
    /* Credit bounds what the host may send to what the buffer holds. */
    if (x->stdin_len + len > AG_MAX_STDIN_BUF) {
      ag_err_t e;
      ag_err_set(&e, AW_E_FLOW_CONTROL, 0, "stdin over the window");
      exec_fail(r, &e);
      return;
    }
    memcpy(x->stdin_buf + x->stdin_len, p, len);
    x->stdin_len += len;
  }
  exec_stdin_ready(r);
}

/* ---- output ---- */

int exec_produce(req_t *r, int which) {
  ostream_t *o = &r->out[which];
  size_t want = o->credit < AW_MAX_DATA ? o->credit : AW_MAX_DATA;
  uint8_t *b = out_reserve(AW_HEADER_LEN + want);
  if (b == NULL) return 0; /* the queue is at its cap: try again once it drains */
  ssize_t n;
  do n = read(o->fd, b + AW_HEADER_LEN, want);
  while (n < 0 && errno == EINTR);
  if (n < 0 && errno == EAGAIN) {
    o->ready = 0;
    return 0;
  }
  if (n <= 0) {
    /* End of the stream (or a read error, which ends it as well). */
    util_close_fd(&o->fd);
    o->active = 0;
    o->ready = 0;
    exec_check(r);
    return 0;
  }
  aw_header_t h = {(uint32_t)n, AW_T_DATA, 0, o->stream, 0, r->id};
  aw_header_encode(b, &h);
  out_commit(AW_HEADER_LEN + (size_t)n);
  o->credit -= (uint32_t)n;
  o->sent += (uint64_t)n;
  return 1;
}

/* ---- the end of a command ---- */

static void fill_exit(const req_t *r, aw_exit_t *m) {
  const exec_state_t *x = &r->u.exec;
  memset(m, 0, sizeof(*m));
  m->flags = x->flags;
  if (WIFSIGNALED(x->status)) {
    m->how = AW_EXIT_SIGNAL;
    m->signal = (uint8_t)WTERMSIG(x->status);
    m->code = 128 + m->signal;
#ifdef WCOREDUMP
    if (WCOREDUMP(x->status)) m->flags |= AW_EXITF_CORE;
#endif
  } else {
    m->how = AW_EXIT_CODE;
    m->code = WEXITSTATUS(x->status);
  }
  m->out_bytes = r->out[0].sent;
  m->err_bytes = r->out[1].sent;
  m->duration_us = x->reaped_us > x->start_us ? (uint64_t)(x->reaped_us - x->start_us) : 0;
}

void exec_on_reaped(req_t *r, int status) {
  exec_state_t *x = &r->u.exec;
  x->reaped = 1;
  x->status = status;
  x->reaped_ms = util_now_ms();
  x->reaped_us = util_now_us();
  if (r->id != 0) {
    aw_exit_t m;
    fill_exit(r, &m);
    aw_writer_t w;
    if (out_frame_begin(&w, 64)) out_frame_end(&w, aw_put_exited(&w, r->id, &m));
    x->exit_sent = 1;
  }
  if (x->killed) x->grace_ms = x->reaped_ms + AG_KILL_GRACE_MS;
  exec_check(r);
}

void exec_check(req_t *r) {
  exec_state_t *x = &r->u.exec;
  if (!x->reaped) return;
  for (int i = 0; i < r->nout; i++)
    if (r->out[i].active) return;
  if (r->id != 0) {
    aw_exit_t m;
    fill_exit(r, &m);
    aw_writer_t w;
    if (out_frame_begin(&w, 64)) out_frame_end(&w, aw_put_exec_result(&w, r->id, &m));
  }
  req_finish(r);
}

void exec_kill(req_t *r, uint8_t why_flag) {
  exec_state_t *x = &r->u.exec;
  x->flags |= why_flag;
  if (x->killed || x->pid <= 1) return;
  x->killed = 1;
  ptree_signal(x->pid, SIGKILL, 1);
  if (x->reaped) x->grace_ms = util_now_ms() + AG_KILL_GRACE_MS;
}

void exec_cancel(req_t *r, uint16_t why) {
  exec_kill(r, why == AW_E_CANCELLED || why == AW_E_SHUTDOWN ? AW_EXITF_CANCELLED : 0);
  /* The host does not want the rest of the output: close the pipes now. */
  for (int i = 0; i < r->nout; i++) {
    if (r->out[i].active) {
      util_close_fd(&r->out[i].fd);
      r->out[i].active = 0;
      r->u.exec.flags |= AW_EXITF_OUTPUT_CUT;
    }
  }
  util_close_fd(&r->u.exec.stdin_fd);
  r->in.dead = 1;
  if (why == 0) req_detach_id(r);
  exec_check(r);
}

void exec_timer(req_t *r, int64_t now) {
  exec_state_t *x = &r->u.exec;
  if (x->deadline_ms && now >= x->deadline_ms && !x->killed) {
    x->deadline_ms = 0;
    exec_kill(r, AW_EXITF_TIMED_OUT);
  }
  if (x->grace_ms && now >= x->grace_ms) {
    x->grace_ms = 0;
    for (int i = 0; i < r->nout; i++) {
      if (r->out[i].active) {
        util_close_fd(&r->out[i].fd);
        r->out[i].active = 0;
        x->flags |= AW_EXITF_OUTPUT_CUT;
      }
    }
    exec_check(r);
  }
}

void exec_close(req_t *r) {
  exec_state_t *x = &r->u.exec;
  for (int i = 0; i < 2; i++) util_close_fd(&r->out[i].fd);
  util_close_fd(&x->stdin_fd);
  free(x->stdin_buf);
  x->stdin_buf = NULL;
}

void exec_reap_children(void) {
  for (;;) {
    int status;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid < 0 && errno == EINTR) continue;
    if (pid <= 0) return;
    for (req_t *r = g.head; r != NULL; r = r->next) {
      if (r->type == AW_T_EXEC && r->u.exec.pid == pid && !r->u.exec.reaped) {
        exec_on_reaped(r, status);
        break;
      }
    }
    /* Anything else was an orphan handed to us as subreaper: reaped, nothing to say. */
  }
}

/* ---- the drainer ---- */

void exec_spawn_drainer(void) {
  int fds[256];
  int n = 0;
  for (req_t *r = g.head; r != NULL && n < 256; r = r->next) {
    if (r->type != AW_T_EXEC || !r->u.exec.detached) continue;
    for (int i = 0; i < r->nout && n < 256; i++)
      if (r->out[i].active && r->out[i].fd >= 0) fds[n++] = r->out[i].fd;
  }
  if (n == 0) return;
  pid_t pid = fork();
  if (pid != 0) return; /* the parent exits next; a failed fork leaves the pipes to close */
  setsid();
  util_close_all_except(fds, n);
  struct pollfd pf[256];
  for (int i = 0; i < n; i++) {
    pf[i].fd = fds[i];
    pf[i].events = POLLIN;
  }
  int open_count = n;
  char sink[65536];
  while (open_count > 0) {
    if (poll(pf, (nfds_t)n, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < n; i++) {
      if (pf[i].fd < 0 || !pf[i].revents) continue;
      ssize_t got = read(pf[i].fd, sink, sizeof(sink));
      if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR)) {
        close(pf[i].fd);
        pf[i].fd = -1;
        open_count--;
      }
    }
  }
  _exit(0);
}

int exec_ready(const req_t *r, int which) { return r->out[which].ready; }

int64_t exec_due(const req_t *r) {
  int64_t a = r->u.exec.deadline_ms, b = r->u.exec.grace_ms;
  if (a <= 0) return b > 0 ? b : 0;
  return b > 0 && b < a ? b : a;
}

int exec_detached(const req_t *r) { return r->u.exec.detached; }
