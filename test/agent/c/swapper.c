/*
 * swapper.c - a test helper for test/agent/files.test.js: swaps <dir>/d and <dir>/d.link
 * with renameat2(RENAME_EXCHANGE) in a tight loop for <ms> milliseconds, so at every
 * instant <dir>/d is either the real directory or a symlink out of the workdir. Prints
 * the number of swaps. Built by scripts/build-agent.sh.
 *   swapper <dir> <ms>
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef SYS_renameat2
#define SYS_renameat2 316
#endif
#define EXCHANGE 2u

static long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int main(int argc, char **argv) {
  if (argc != 3) return 2;
  int dir = open(argv[1], O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return 1;
  long long end = now_ms() + atoll(argv[2]);
  long swaps = 0, failures = 0;
  while (now_ms() < end) {
    for (int i = 0; i < 64; i++) {
      if (syscall(SYS_renameat2, dir, "d", dir, "d.link", EXCHANGE) == 0) swaps++;
      else failures++;
    }
  }
  printf("%ld %ld\n", swaps, failures);
  return 0;
}
