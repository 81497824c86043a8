/*
 * ptree.c - process trees: reading /proc/<pid>/stat, ending a command's whole tree, and
 * counting a process group's members.
 *
 * Owns: the process table of one scan (allocated and freed inside each call).
 *
 * A command's tree is its process group, every process of its session (each command is
 * a session leader, so the session id is its pid), and every descendant of those by
 * parent links. Members are frozen with SIGSTOP as they are found and the scan repeats
 * until it finds nothing new, so nothing forks away between the scan and the signal; a
 * frozen process cannot reap, so no pid in the set can be reused before the signal lands.
 * Limit: a process that double-forks and calls setsid() after its parent has exited is
 * in another session and has no parent link to the tree (it was reparented to the agent,
 * the subreaper): it escapes, as it escapes every pgid/sid-based tool.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"

#define MAX_PROCS (1u << 20)
#define MAX_ROUNDS 32

static int read_stat(int procfd, const char *name, proc_stat_t *out) {
  char path[64];
  snprintf(path, sizeof(path), "%s/stat", name);
  int fd = openat(procfd, path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char buf[1024];
  ssize_t n;
  do n = read(fd, buf, sizeof(buf));
  while (n < 0 && errno == EINTR);
  close(fd);
  if (n <= 0) return -1;
  return procfs_stat_parse(buf, (size_t)n, out);
}

static int by_pid(const void *a, const void *b) {
  pid_t x = ((const proc_stat_t *)a)->pid, y = ((const proc_stat_t *)b)->pid;
  return x < y ? -1 : x > y;
}

/* Every process in /proc, sorted by pid; NULL when /proc cannot be read. */
static proc_stat_t *proc_scan(size_t *count) {
  *count = 0;
  int procfd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (procfd < 0) return NULL;
  DIR *d = fdopendir(procfd);
  if (d == NULL) {
    close(procfd);
    return NULL;
  }
  size_t cap = 256, n = 0;
  proc_stat_t *t = malloc(cap * sizeof(*t));
  if (t == NULL) goto fail;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    if (!isdigit((unsigned char)de->d_name[0])) continue;
    if (n == cap) {
      if (cap >= MAX_PROCS) break;
      proc_stat_t *nt = realloc(t, cap * 2 * sizeof(*t));
      if (nt == NULL) goto fail;
      t = nt;
      cap *= 2;
    }
    if (read_stat(dirfd(d), de->d_name, &t[n]) == 0) n++;
  }
  closedir(d);
  qsort(t, n, sizeof(*t), by_pid);
  *count = n;
  return t;
fail:
  free(t);
  closedir(d);
  return NULL;
}

static long find(const proc_stat_t *t, size_t n, pid_t pid) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (t[mid].pid == pid) return (long)mid;
    if (t[mid].pid < pid) lo = mid + 1;
    else hi = mid;
  }
  return -1;
}

typedef struct pidset {
  pid_t *v;
  size_t n, cap;
} pidset_t;

static int set_has(const pidset_t *s, pid_t p) {
  for (size_t i = 0; i < s->n; i++)
    if (s->v[i] == p) return 1;
  return 0;
}

static int set_add(pidset_t *s, pid_t p) {
  if (s->n == s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 64;
    if (cap > MAX_PROCS) return -1;
    pid_t *nv = realloc(s->v, cap * sizeof(pid_t));
    if (nv == NULL) return -1;
    s->v = nv;
    s->cap = cap;
  }
  s->v[s->n++] = p;
  return 0;
}

/* One scan: adds the tree's members not yet in `set` (freezing them when asked).
 * Returns how many were new, or -1 when /proc could not be read. */
static long scan_round(pid_t pgid, pidset_t *set, int freeze) {
  size_t n;
  proc_stat_t *t = proc_scan(&n);
  if (t == NULL) return -1;
  unsigned char *mark = calloc(n ? n : 1, 1);
  if (mark == NULL) {
    free(t);
    return -1;
  }
  for (size_t i = 0; i < n; i++)
    mark[i] = (t[i].pgrp == pgid || t[i].session == pgid) && t[i].pid != g.self;
  /* Descendants by parent links, as far down as they go. */
  for (int changed = 1, passes = 0; changed && passes < 4096; passes++) {
    changed = 0;
    for (size_t i = 0; i < n; i++) {
      if (mark[i] || t[i].pid == g.self) continue;
      long pi = find(t, n, t[i].ppid);
      if (pi >= 0 && mark[pi]) {
        mark[i] = 1;
        changed = 1;
      }
    }
  }
  long added = 0;
  for (size_t i = 0; i < n; i++) {
    if (!mark[i] || set_has(set, t[i].pid)) continue;
    if (set_add(set, t[i].pid) < 0) break;
    if (freeze) kill(t[i].pid, SIGSTOP);
    added++;
  }
  free(mark);
  free(t);
  return added;
}

int ptree_signal(pid_t pgid, int sig, int freeze) {
  if (pgid <= 1 || pgid == g.self) {
    errno = EINVAL;
    return -1;
  }
  if (freeze) kill(-pgid, SIGSTOP);
  pidset_t set = {NULL, 0, 0};
  if (g.proc_ok) {
    for (int round = 0; round < MAX_ROUNDS; round++) {
      long added = scan_round(pgid, &set, freeze);
      if (added <= 0) break;
    }
  }
  int count = 0;
  for (size_t i = 0; i < set.n; i++)
    if (kill(set.v[i], sig) == 0) count++;
  int group_rc = kill(-pgid, sig);
  int group_errno = errno;
  if (freeze && sig != SIGKILL && sig != SIGSTOP) {
    for (size_t i = 0; i < set.n; i++) kill(set.v[i], SIGCONT);
    kill(-pgid, SIGCONT);
  }
  free(set.v);
  if (count == 0) {
    if (group_rc == 0) return 1;
    errno = group_errno;
    return -1;
  }
  return count;
}

int ptree_group_members(pid_t pgid, uint32_t *live, uint32_t *zombies) {
  size_t n;
  proc_stat_t *t = proc_scan(&n);
  if (t == NULL) return -1;
  *live = 0;
  *zombies = 0;
  for (size_t i = 0; i < n; i++) {
    if (t[i].pgrp != pgid) continue;
    if (t[i].state == 'Z' || t[i].state == 'X') (*zombies)++;
    else (*live)++;
  }
  free(t);
  return 0;
}
