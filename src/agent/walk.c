/*
 * walk.c - resolving a host-given path beneath the workdir with no symbolic link
 * followed anywhere on it.
 *
 * Owns: the descriptors it returns (the caller closes them) and none other.
 *
 * A path is validated first (walk_path_parse): relative, at most AW_MAX_PATH bytes and
 * AW_MAX_DEPTH components of at most AW_MAX_NAME bytes, no ".." (refused as "outside"),
 * empty and "." components dropped. Resolution then uses openat2(RESOLVE_BENEATH |
 * RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS) from the workdir's descriptor when the
 * kernel has it; when it fails for any reason, or the kernel has no openat2, the same path
 * is walked one component at a time: each is opened with O_PATH | O_NOFOLLOW relative to
 * the descriptor of the one before, and fstat decides: a symlink is refused (naming the
 * component), anything but a directory is "not a directory". Every step holds the
 * directory it checked, so renaming a directory and a symlink into each other's place
 * while the walk runs cannot redirect it. The last component is opened twice (open_final:
 * O_PATH first, then for real, the same inode both times), because one kernel we run on
 * (gVisor) follows a final link despite O_NOFOLLOW. The walk also turns openat2's errors
 * into the typed error naming the component at fault.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent.h"

#ifndef SYS_openat2
#define SYS_openat2 437
#endif
#define AG_RESOLVE_NO_MAGICLINKS 0x02
#define AG_RESOLVE_NO_SYMLINKS 0x04
#define AG_RESOLVE_BENEATH 0x08

struct ag_open_how {
  uint64_t flags;
  uint64_t mode;
  uint64_t resolve;
};

static int sys_openat2(int dirfd, const char *path, int flags) {
  struct ag_open_how how;
  memset(&how, 0, sizeof(how));
  how.flags = (uint64_t)(unsigned)flags;
  how.resolve = AG_RESOLVE_BENEATH | AG_RESOLVE_NO_SYMLINKS | AG_RESOLVE_NO_MAGICLINKS;
  return (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
}

int walk_openat2_probe(void) {
  int fd = sys_openat2(AT_FDCWD, ".", O_PATH | O_CLOEXEC);
  if (fd < 0) return 0;
  close(fd);
  return 1;
}

int walk_path_parse(const uint8_t *p, size_t len, agpath_t *out, ag_err_t *e) {
  out->n = 0;
  if (len > AW_MAX_PATH) {
    ag_err_set(e, AW_E_LIMIT, ENAMETOOLONG, "path longer than %u bytes", (unsigned)AW_MAX_PATH);
    e->value = AW_MAX_PATH;
    return -1;
  }
  if (aw_has_nul(p, len)) {
    ag_err_set(e, AW_E_INVALID, 0, "path holds a NUL byte");
    return -1;
  }
  if (len > 0 && p[0] == '/') {
    ag_err_set(e, AW_E_OUTSIDE, 0, "absolute path");
    ag_err_detail_bytes(e, p, len);
    return -1;
  }
  size_t used = 0;
  size_t i = 0;
  while (i < len) {
    size_t j = i;
    while (j < len && p[j] != '/') j++;
    size_t clen = j - i;
    if (clen == 0 || (clen == 1 && p[i] == '.')) {
      i = j + 1;
      continue;
    }
    if (clen == 2 && p[i] == '.' && p[i + 1] == '.') {
      ag_err_set(e, AW_E_OUTSIDE, 0, "..");
      ag_err_detail_bytes(e, p, len);
      return -1;
    }
    if (clen > AW_MAX_NAME) {
      ag_err_set(e, AW_E_LIMIT, ENAMETOOLONG, "a path component is longer than %u bytes", (unsigned)AW_MAX_NAME);
      e->value = AW_MAX_NAME;
      return -1;
    }
    if (out->n >= AW_MAX_DEPTH) {
      ag_err_set(e, AW_E_LIMIT, 0, "path deeper than %u components", (unsigned)AW_MAX_DEPTH);
      e->value = AW_MAX_DEPTH;
      return -1;
    }
    if (used + clen + 1 > sizeof(out->buf)) {
      ag_err_set(e, AW_E_LIMIT, ENAMETOOLONG, "path too long");
      e->value = AW_MAX_PATH;
      return -1;
    }
    out->off[out->n++] = (uint16_t)used;
    memcpy(out->buf + used, p + i, clen);
    out->buf[used + clen] = 0;
    used += clen + 1;
    i = j + 1;
  }
  return 0;
}

size_t walk_path_join(const agpath_t *path, size_t upto, char *buf, size_t cap) {
  size_t n = 0;
  if (cap == 0) return 0;
  for (size_t i = 0; i < upto && i < path->n; i++) {
    const char *c = path->buf + path->off[i];
    size_t clen = strlen(c);
    if (i > 0 && n + 1 < cap) buf[n++] = '/';
    if (n + clen >= cap) clen = cap - 1 - n;
    memcpy(buf + n, c, clen);
    n += clen;
  }
  buf[n] = 0;
  return n;
}

/* The error for component i (0-based) of `path`, with the path up to it as detail. */
static void comp_err(ag_err_t *e, const agpath_t *path, size_t i, uint16_t kind, int errnum) {
  ag_err_set(e, kind, errnum, NULL);
  e->detail_len = walk_path_join(path, i + 1, e->detail, sizeof(e->detail));
}

/* Opens component i relative to `cur` as a directory, refusing symlinks. */
static int step(int cur, const agpath_t *path, size_t i, int create, mode_t mode, int *created, ag_err_t *e) {
  const char *name = path->buf + path->off[i];
  for (int attempt = 0; attempt < 2; attempt++) {
    int fd = openat(cur, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
      int err = errno;
      if (err == ENOENT && create && attempt == 0) {
        if (mkdirat(cur, name, mode) == 0) {
          if (created) *created = 1;
          continue;
        }
        if (errno == EEXIST) continue; /* made meanwhile: look again */
        err = errno;
      }
      comp_err(e, path, i, ag_err_kind_of(err), err);
      return -1;
    }
    struct stat st;
    if (fstat(fd, &st) < 0) {
      int err = errno;
      close(fd);
      comp_err(e, path, i, ag_err_kind_of(err), err);
      return -1;
    }
    if (S_ISLNK(st.st_mode)) {
      close(fd);
      comp_err(e, path, i, AW_E_SYMLINK, ELOOP);
      return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
      close(fd);
      comp_err(e, path, i, AW_E_NOT_DIRECTORY, ENOTDIR);
      return -1;
    }
    return fd;
  }
  comp_err(e, path, i, AW_E_NOT_FOUND, ENOENT);
  return -1;
}

static int walk_manual(int wdfd, const agpath_t *path, size_t upto, int create, mode_t mode, int *created,
                       ag_err_t *e) {
  int cur = fcntl(wdfd, F_DUPFD_CLOEXEC, 0);
  if (cur < 0) {
    ag_err_set(e, ag_err_kind_of(errno), errno, "dup");
    return -1;
  }
  for (size_t i = 0; i < upto; i++) {
    int made = 0;
    int fd = step(cur, path, i, create, i + 1 == upto ? mode : 0755, &made, e);
    close(cur);
    if (fd < 0) return -1;
    if (created && i + 1 == upto) *created = made;
    cur = fd;
  }
  return cur;
}

int walk_dir(int wdfd, const agpath_t *path, size_t upto, int create, mode_t mode, int use_openat2, int *created,
             ag_err_t *e) {
  if (created) *created = 0;
  if (upto > path->n) upto = path->n;
  if (use_openat2 && upto > 0) {
    char joined[AW_MAX_PATH + 1];
    walk_path_join(path, upto, joined, sizeof(joined));
    int fd = sys_openat2(wdfd, joined, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) return fd;
  }
  return walk_manual(wdfd, path, upto, create, mode, created, e);
}

/*
 * The last component of `path`, opened in `dir` with `flags` (O_NOFOLLOW among them), and
 * proven to be what the name held when it was not a link. O_NOFOLLOW alone is not enough
 * everywhere: gVisor (runsc 2022-12, which has no openat2 either) follows a final link to a
 * directory when O_DIRECTORY is given. So the name is first opened O_PATH | O_NOFOLLOW
 * (which every kernel honours) and refused if it is a link, then opened for real, and the
 * two must be the same inode: a link swapped in between fails as a link.
 */
static int open_final(int dir, const agpath_t *path, int flags, ag_err_t *e) {
  size_t last = path->n - 1;
  const char *name = path->buf + path->off[last];
  struct stat named, opened;
  int pfd = openat(dir, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
  if (pfd < 0) {
    comp_err(e, path, last, ag_err_kind_of(errno), errno);
    return -1;
  }
  if (fstat(pfd, &named) != 0) {
    int err = errno;
    close(pfd);
    comp_err(e, path, last, ag_err_kind_of(err), err);
    return -1;
  }
  close(pfd);
  if (S_ISLNK(named.st_mode)) {
    comp_err(e, path, last, AW_E_SYMLINK, ELOOP);
    return -1;
  }
  int fd = openat(dir, name, flags);
  if (fd < 0) {
    int err = errno;
    struct stat st;
    /* O_NOFOLLOW on a final symlink is ELOOP, or ENOTDIR with O_DIRECTORY: say which. */
    if ((err == ELOOP || err == ENOTDIR) && fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
      comp_err(e, path, last, AW_E_SYMLINK, ELOOP);
    else
      comp_err(e, path, last, ag_err_kind_of(err), err);
    return -1;
  }
  if (fstat(fd, &opened) != 0 || opened.st_dev != named.st_dev || opened.st_ino != named.st_ino) {
    close(fd);
    comp_err(e, path, last, AW_E_SYMLINK, ELOOP);
    return -1;
  }
  return fd;
}

int walk_open(int wdfd, const agpath_t *path, int flags, int use_openat2, ag_err_t *e) {
  flags |= O_NOFOLLOW | O_CLOEXEC;
  if (path->n == 0) {
    int fd = openat(wdfd, ".", flags);
    if (fd < 0) ag_err_set(e, ag_err_kind_of(errno), errno, ".");
    return fd;
  }
  if (use_openat2) {
    char joined[AW_MAX_PATH + 1];
    walk_path_join(path, path->n, joined, sizeof(joined));
    int fd = sys_openat2(wdfd, joined, flags);
    if (fd >= 0) return fd;
  }
  int dir = walk_manual(wdfd, path, path->n - 1, 0, 0, NULL, e);
  if (dir < 0) return -1;
  int fd = open_final(dir, path, flags, e);
  close(dir);
  return fd;
}
