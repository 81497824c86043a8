/*
 * init.c - process 1 of a sandbox made with limits (issue 23 item 6): the idle and
 * lifetime limits kept where the sandbox's own code cannot stop them.
 *
 *   /.anvia/init init IDLE_MS MAX_MS      (the agent's binary; 0: no such limit)
 *
 * Owns: the whole process when started this way (main.c hands over before anything of
 * the agent is set up); it shares no state with the rest of the agent.
 *
 * Why process 1 holds where a shell loop did not: the kernel never delivers SIGSTOP or
 * SIGKILL to a PID namespace's init from inside that namespace (and no other signal whose
 * action is the default), it keeps no child the sandbox could stop (it waits in poll(),
 * not in a `sleep`), and it makes itself non-dumpable, so without CAP_SYS_PTRACE (which
 * Docker does not grant) no process of the container can trace it, read or write its
 * memory, or open its descriptors through /proc, whatever its user. The clock is
 * CLOCK_BOOTTIME (what /proc/uptime counts), which no container can set.
 *
 * Signals, all taken through a signalfd:
 *   TERM, INT   exit 0 (the original's keep-alive did; `docker stop`; stopping sooner is
 *               never a breach of a limit)
 *   USR1        activity, but only when it came from outside the container: a kill from
 *               the engine (`POST /containers/{id}/kill`) is sent from the host's PID
 *               namespace, so it arrives as SI_USER with sender pid 0; every process
 *               inside has a pid here, and sigqueue(), which can claim any pid, cannot
 *               claim SI_USER (the kernel refuses a code >= 0 sent to another process).
 *               So the sandbox's code can no longer keep its idle limit awake.
 *   CHLD        orphans re-parented to process 1 are reaped.
 * Past the deadline (the earlier of start + MAX and last activity + IDLE) it writes the
 * same line as the shell loop (`anvia-sandbox: lifetime limit reached, stopping`, or
 * idle) and exits 0, which stops the container.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"

#define INIT_MAX_LIMIT_MS 9000000000000LL /* LIFETIME_MAX_MS (codec/lifetime_cmd.h) */

static int64_t boot_ms(void) {
  struct timespec ts;
  if (clock_gettime(CLOCK_BOOTTIME, &ts) != 0) clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A decimal limit, 0 or up to INIT_MAX_LIMIT_MS: nothing else. */
static int parse_limit(const char *s, int64_t *out) {
  if (s[0] == 0 || strlen(s) > 16) return -1;
  int64_t v = 0;
  for (const char *p = s; *p; p++) {
    if (*p < '0' || *p > '9') return -1;
    v = v * 10 + (*p - '0');
  }
  if (v > INIT_MAX_LIMIT_MS) return -1;
  *out = v;
  return 0;
}

static void say(const char *line) {
  /* Never blocks: a full log pipe must not keep the container alive. */
  int fl = fcntl(1, F_GETFL);
  if (fl >= 0) fcntl(1, F_SETFL, fl | O_NONBLOCK);
  size_t n = strlen(line);
  while (n > 0) {
    ssize_t w = write(1, line, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) break;
    line += w;
    n -= (size_t)w;
  }
}

static void reap_all(void) {
  while (waitpid(-1, NULL, WNOHANG) > 0) {
  }
}

int init_main(int argc, char **argv) {
  int64_t idle = 0, max = 0;
  if (argc != 4 || parse_limit(argv[2], &idle) != 0 || parse_limit(argv[3], &max) != 0) {
    fprintf(stderr, "usage: anvia-agent init IDLE_MS MAX_MS\n");
    return 1;
  }
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGUSR1);
  sigaddset(&set, SIGCHLD);
  int sfd = -1;
  if (sigprocmask(SIG_BLOCK, &set, NULL) != 0 || (sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK)) < 0) {
    fprintf(stderr, "anvia-agent init: signals cannot be taken: %s\n", strerror(errno));
    return 1;
  }
  const int64_t start = boot_ms();
  int64_t last = start;
  for (;;) {
    reap_all();
    int64_t now = boot_ms();
    int64_t deadline = max > 0 ? start + max : INT64_MAX;
    if (idle > 0 && last + idle < deadline) deadline = last + idle;
    if (now >= deadline) {
      int lifetime = max > 0 && now >= start + max;
      say(lifetime ? "anvia-sandbox: lifetime limit reached, stopping\n" : "anvia-sandbox: idle limit reached, stopping\n");
      return 0;
    }
    int64_t left = deadline - now;
    struct pollfd p = {.fd = sfd, .events = POLLIN};
    if (poll(&p, 1, left > INT_MAX ? INT_MAX : (int)left) <= 0) continue;
    struct signalfd_siginfo si[16];
    ssize_t got;
    while ((got = read(sfd, si, sizeof(si))) > 0) {
      for (size_t i = 0; i < (size_t)got / sizeof(si[0]); i++) {
        uint32_t sig = si[i].ssi_signo;
        if (sig == SIGTERM || sig == SIGINT) return 0;
        if (sig == SIGUSR1 && si[i].ssi_pid == 0 && si[i].ssi_code == SI_USER) last = boot_ms();
      }
    }
  }
}
