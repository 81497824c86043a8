/*
 * swapper.c - a test helper for test/agent/files.test.js and
 * test/integration/symlink-race.test.js: swaps <dir>/d and <dir>/d.link with
 * renameat2(RENAME_EXCHANGE) in a tight loop, so at every instant <dir>/d is either the
 * real directory or a symlink out of the workdir. Prints the number of swaps (and of failed
 * ones). Built by scripts/build-agent.sh and by the integration test. Where the kernel has
 * no RENAME_EXCHANGE (gVisor answers EINVAL), each swap is three renames through a third
 * name instead, so <dir>/d is also missing for an instant now and then (a directory a write
 * makes there meanwhile is moved aside to d.made.N, as often as it takes).
 *   swapper <dir> <ms>          swaps for <ms> milliseconds
 *   swapper <dir> 0             swaps until its stdin reaches end of file, and prints
 *                               "running" on a line of its own once it has swapped 1000 times
 *   swapper <dir> 0 <name>      swaps until <dir>/<name>.stop exists, and creates
 *                               <dir>/<name>.running once it has swapped 1000 times (for a
 *                               caller whose stdin is given whole, as exec's is)
 * The last two let a test bound the race by events rather than by a duration a slow machine
 * (or gVisor, whose renames are slow) may not fill. Every mode ends after 300 s at most.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef SYS_renameat2
#define SYS_renameat2 316
#endif
#define EXCHANGE 2u

/* One swap of d and d.link: 0, or -1. */
static int swap(int dir, int *exchange) {
  if (*exchange) {
    if (syscall(SYS_renameat2, dir, "d", dir, "d.link", EXCHANGE) == 0) return 0;
    if (errno != EINVAL && errno != ENOSYS) return -1;
    *exchange = 0;
  }
  static long made;
  if (renameat(dir, "d", dir, "d.swap") != 0) return -1;
  if (renameat(dir, "d.link", dir, "d") == 0) return renameat(dir, "d.swap", dir, "d.link");
  /* While d was away a write made a new directory d (writes make their parents): it is
   * moved aside (it is in the workspace) and the directory goes back, so the loop goes on.
   * A write may make d again between the two renames, and a d with a file in it cannot be
   * renamed over (ENOTEMPTY): then it is moved aside again. Giving up there would leave
   * d.swap in the way of every later swap, and the loop would fail forever. */
  for (int tries = 0; tries < 1000; tries++) {
    char aside[32];
    snprintf(aside, sizeof aside, "d.made.%ld", ++made);
    if (renameat(dir, "d", dir, aside) != 0 && errno != ENOENT) return -1;
    if (renameat(dir, "d.swap", dir, "d") == 0 || (errno != ENOTEMPTY && errno != EEXIST)) break;
  }
  return -1;
}

static long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int main(int argc, char **argv) {
  if (argc != 3 && argc != 4) return 2;
  int dir = open(argv[1], O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return 1;
  long long ms = atoll(argv[2]);
  long long start = now_ms(), end = start + ms;
  char stop[256], running[256];
  if (argc == 4 && (snprintf(stop, sizeof stop, "%s.stop", argv[3]) >= (int)sizeof stop ||
                    snprintf(running, sizeof running, "%s.running", argv[3]) >= (int)sizeof running))
    return 2;
  long swaps = 0, failures = 0;
  int said = 0, exchange = 1;
  for (;;) {
    if (now_ms() - start >= 300000) break;
    if (ms > 0) {
      if (now_ms() >= end) break;
    } else if (argc == 4) {
      struct stat st;
      if (fstatat(dir, stop, &st, AT_SYMLINK_NOFOLLOW) == 0) break;
      if (!said && swaps >= 1000) {
        int fd = openat(dir, running, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd >= 0) close(fd);
        said = 1;
      }
    } else {
      struct pollfd in = {.fd = 0, .events = POLLIN};
      char buf[256];
      if (poll(&in, 1, 0) > 0 && read(0, buf, sizeof buf) <= 0) break;
      if (!said && swaps >= 1000) {
        printf("running\n");
        fflush(stdout);
        said = 1;
      }
    }
    for (int i = 0; i < 64; i++) {
      if (swap(dir, &exchange) == 0) swaps++;
      else failures++;
    }
  }
  printf("%ld %ld\n", swaps, failures);
  return 0;
}
