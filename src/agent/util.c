/*
 * util.c - clocks, descriptor helpers (closing all but some, for a child that lives on)
 * and diagnostics.
 *
 * Owns: nothing. Diagnostics go to stderr, which is non-blocking: a host that does not
 * read the agent's stderr loses messages instead of stalling the agent.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"

int64_t util_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t util_now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t util_realtime_ns_of(const struct timespec *ts) { return (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec; }

void util_log(const char *fmt, ...) {
  char line[512];
  int n = snprintf(line, sizeof(line), "anvia-agent[%d]: ", (int)g.self);
  if (n < 0) return;
  va_list ap;
  va_start(ap, fmt);
  int m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
  va_end(ap);
  if (m < 0) return;
  size_t len = (size_t)n + (size_t)m;
  if (len > sizeof(line) - 2) len = sizeof(line) - 2;
  line[len++] = '\n';
  ssize_t w = write(2, line, len);
  (void)w;
}

int util_set_nonblock(int fd) {
  int fl = fcntl(fd, F_GETFL);
  if (fl < 0) return -1;
  if (fl & O_NONBLOCK) return 0;
  return fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

void util_close_fd(int *fd) {
  if (*fd >= 0) {
    close(*fd);
    *fd = -1;
  }
}

ssize_t util_write_all(int fd, const void *p, size_t len) {
  const uint8_t *b = p;
  size_t done = 0;
  while (done < len) {
    ssize_t w = write(fd, b + done, len - done);
    if (w < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    done += (size_t)w;
  }
  return (ssize_t)done;
}

static int keep(const int *fds, int n, int fd) {
  for (int i = 0; i < n; i++)
    if (fds[i] == fd) return 1;
  return 0;
}

void util_close_all_except(const int *fds, int n) {
  DIR *d = opendir("/proc/self/fd");
  if (d != NULL) {
    int dfd = dirfd(d);
    int list[1024];
    int count = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL && count < 1024) {
      char *end;
      long v = strtol(de->d_name, &end, 10);
      if (*end || end == de->d_name) continue;
      if ((int)v != dfd && !keep(fds, n, (int)v)) list[count++] = (int)v;
    }
    closedir(d);
    for (int i = 0; i < count; i++) close(list[i]);
    if (count < 1024) return;
  }
  for (int fd = 0; fd < 65536; fd++)
    if (!keep(fds, n, fd)) close(fd);
}
