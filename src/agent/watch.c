/*
 * watch.c - WATCH: changes beneath a directory of the workdir, from inotify, streamed as
 * records on stream 2 within its credit (PROTOCOL.md "WATCH").
 *
 * Owns: per WATCH record its state (r->u.watch, malloc'd here): the inotify descriptor
 * (kept in r->out[0].fd, so the poll loop watches it like a pipe), the map of watch
 * descriptors to the directories' paths, the inotify bytes read and not yet converted,
 * and the records converted and not yet sent. watch_cancel and watch_close release them
 * (closing the inotify descriptor drops every watch with it).
 *
 * Directories are opened without following any symbolic link (walk.c for a path; below a
 * directory, openat O_PATH | O_NOFOLLOW of the name, checked to be a directory, then "."
 * reopened from it) and watched through their descriptor (/proc/self/fd/N), so a link is
 * never watched and a path the sandbox swaps meanwhile cannot redirect a watch. The map
 * is bounded by the request's max_watches; the walks by AW_MAX_DEPTH levels (one open
 * directory per level) and AW_MAX_PATH bytes of path; past a bound the RESULT says
 * `limit` and the directory is not watched.
 *
 * Flow: inotify is read only while the stream has credit (the poll loop asks for POLLIN
 * only then); events are converted one at a time, and only while the record buffer has
 * room for the largest record, so what is not converted stays in the read buffer, and
 * what is not read stays in the kernel's queue (whose overflow is reported by the kernel
 * as IN_Q_OVERFLOW). Only the records of a directory's contents found by a walk can miss
 * the buffer; they are replaced by one overflow record.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent.h"

#define WATCH_MASK                                                                                          \
  (IN_CREATE | IN_MODIFY | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | \
   IN_EXCL_UNLINK)
#define WATCH_PENDING (64u * 1024u) /* records converted, not yet sent */
#define WATCH_READ (16u * 1024u)    /* inotify bytes read at once (an event takes at most 16 + 256) */

/* One watched directory: its inotify watch descriptor and its path beneath the workdir
 * (clean components, "" for the workdir itself). An empty slot has path NULL. */
typedef struct wentry {
  int wd;
  uint16_t len;
  char *path;
} wentry_t;

struct watch_state {
  uint32_t flags;       /* AW_WATCH_* */
  uint32_t max_watches; /* entries of the map at most */
  uint32_t res_flags;   /* AW_WATCHF_* for the RESULT */
  int root_wd;
  int root_gone; /* the directory went: the RESULT follows the records held */
  uint64_t events; /* records sent */
  /* wd -> path: open addressing with linear probing, cap a power of two */
  wentry_t *map;
  size_t map_cap, map_count;
  /* a MOVED_FROM whose MOVED_TO is later in the read buffer (a move within the tree) */
  int paired;
  int paired_watched; /* the moved directory's own watch was renamed with it */
  uint32_t paired_cookie;
  /* inotify bytes read, converted up to rpos */
  size_t rpos, rlen;
  uint8_t rbuf[WATCH_READ];
  /* whole records, in order; last_off: where the last one starts (has_last) */
  size_t pend_len, last_off;
  int has_last;
  uint8_t pend[WATCH_PENDING];
};

/* ---- the map ---- */

static size_t slot_of(const watch_state_t *w, int wd) {
  return ((uint32_t)wd * 2654435761u) & (w->map_cap - 1);
}

static wentry_t *map_find(watch_state_t *w, int wd) {
  if (w->map_cap == 0) return NULL;
  for (size_t i = slot_of(w, wd);; i = (i + 1) & (w->map_cap - 1)) {
    if (w->map[i].path == NULL) return NULL;
    if (w->map[i].wd == wd) return &w->map[i];
  }
}

static int map_grow(watch_state_t *w) {
  size_t cap = w->map_cap ? w->map_cap * 2 : 64;
  wentry_t *old = w->map;
  size_t old_cap = w->map_cap;
  wentry_t *m = calloc(cap, sizeof(*m));
  if (m == NULL) return -1;
  w->map = m;
  w->map_cap = cap;
  for (size_t i = 0; i < old_cap; i++) {
    if (old[i].path == NULL) continue;
    size_t j = slot_of(w, old[i].wd);
    while (m[j].path != NULL) j = (j + 1) & (cap - 1);
    m[j] = old[i];
  }
  free(old);
  return 0;
}

/* Sets the path of `wd` (a copy of path[0..len)): 0, or -1 out of memory. */
static int map_put(watch_state_t *w, int wd, const char *path, size_t len) {
  char *copy = malloc(len + 1);
  if (copy == NULL) return -1;
  memcpy(copy, path, len);
  copy[len] = 0;
  wentry_t *e = map_find(w, wd);
  if (e != NULL) {
    free(e->path);
    e->path = copy;
    e->len = (uint16_t)len;
    return 0;
  }
  if ((w->map_count + 1) * 2 > w->map_cap && map_grow(w) < 0) {
    free(copy);
    return -1;
  }
  size_t i = slot_of(w, wd);
  while (w->map[i].path != NULL) i = (i + 1) & (w->map_cap - 1);
  w->map[i].wd = wd;
  w->map[i].len = (uint16_t)len;
  w->map[i].path = copy;
  w->map_count++;
  return 0;
}

/* Removes `wd`, shifting back the entries of its probe run. */
static void map_del(watch_state_t *w, int wd) {
  wentry_t *e = map_find(w, wd);
  if (e == NULL) return;
  size_t mask = w->map_cap - 1;
  size_t i = (size_t)(e - w->map);
  free(e->path);
  e->path = NULL;
  w->map_count--;
  for (size_t j = (i + 1) & mask; w->map[j].path != NULL; j = (j + 1) & mask) {
    size_t home = slot_of(w, w->map[j].wd);
    /* The entry at j may move to the hole at i unless its home lies cyclically in (i, j]. */
    int stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
    if (stays) continue;
    w->map[i] = w->map[j];
    w->map[j].path = NULL;
    i = j;
  }
}

/* 1 when `path` is `dir` or beneath it. */
static int under(const char *path, size_t len, const char *dir, size_t dlen) {
  return len >= dlen && memcmp(path, dir, dlen) == 0 && (len == dlen || dlen == 0 || path[dlen] == '/');
}

/* The watch descriptors of `dir` and everything beneath it (a malloc'd array, *n of them;
 * NULL with *n 0 when there are none or memory ran out). */
static int *map_under(watch_state_t *w, const char *dir, size_t dlen, size_t *n) {
  *n = 0;
  size_t count = 0;
  for (size_t i = 0; i < w->map_cap; i++)
    if (w->map[i].path != NULL && under(w->map[i].path, w->map[i].len, dir, dlen)) count++;
  if (count == 0) return NULL;
  int *wds = malloc(count * sizeof(*wds));
  if (wds == NULL) return NULL;
  for (size_t i = 0; i < w->map_cap; i++)
    if (w->map[i].path != NULL && under(w->map[i].path, w->map[i].len, dir, dlen)) wds[(*n)++] = w->map[i].wd;
  return wds;
}

/* A directory left the tree: its watches and those beneath it are removed. */
static void map_remove_under(watch_state_t *w, int ifd, const char *dir, size_t dlen) {
  size_t n;
  int *wds = map_under(w, dir, dlen, &n);
  for (size_t i = 0; i < n; i++) {
    if (wds[i] == w->root_wd) continue;
    inotify_rm_watch(ifd, wds[i]);
    map_del(w, wds[i]);
  }
  free(wds);
}

/* A directory moved within the tree: the paths of its watches and those beneath it begin
 * with the new path (a watch whose path would grow past AW_MAX_PATH is removed). Returns
 * 1 when the directory itself was watched. */
static int map_rename_under(watch_state_t *w, int ifd, const char *from, size_t flen, const char *to, size_t tlen) {
  size_t n;
  int self = 0;
  int *wds = map_under(w, from, flen, &n);
  char buf[AW_MAX_PATH + 1];
  for (size_t i = 0; i < n; i++) {
    wentry_t *e = map_find(w, wds[i]);
    if (e == NULL || wds[i] == w->root_wd) continue;
    size_t rest = e->len - flen;
    if (tlen + rest > AW_MAX_PATH) {
      inotify_rm_watch(ifd, wds[i]);
      map_del(w, wds[i]);
      w->res_flags |= AW_WATCHF_LIMIT;
      continue;
    }
    memcpy(buf, to, tlen);
    memcpy(buf + tlen, e->path + flen, rest);
    if (rest == 0) self = 1;
    if (map_put(w, wds[i], buf, tlen + rest) < 0) {
      inotify_rm_watch(ifd, wds[i]);
      map_del(w, wds[i]);
    }
  }
  free(wds);
  return self;
}

static void map_free(watch_state_t *w) {
  for (size_t i = 0; i < w->map_cap; i++) free(w->map[i].path);
  free(w->map);
  w->map = NULL;
  w->map_cap = w->map_count = 0;
}

/* ---- records ---- */

static size_t rec_size(const uint8_t *p) { return AW_WATCH_FIXED + (((size_t)p[2] << 8) | p[3]); }

static void put_record(watch_state_t *w, uint8_t type, uint8_t kind, const char *path, size_t len) {
  aw_wevent_t ev = {type, kind, {(const uint8_t *)path, (uint32_t)len}};
  aw_writer_t wr;
  aw_w_init(&wr, w->pend + w->pend_len, sizeof(w->pend) - w->pend_len);
  if (aw_put_wevent(&wr, &ev) != AW_OK) return;
  w->last_off = w->pend_len;
  w->has_last = 1;
  w->pend_len += wr.len;
}

/* Appends a record. A modify identical to the last record held, and an overflow after an
 * overflow, add nothing. The buffer always keeps room for one overflow record, which
 * takes the place of the records that do not fit. */
static void record_add(watch_state_t *w, uint8_t type, uint8_t kind, const char *path, size_t len) {
  const uint8_t *last = w->has_last ? w->pend + w->last_off : NULL;
  int last_overflow = last != NULL && last[0] == AW_WEV_OVERFLOW;
  if (type == AW_WEV_MODIFY && last != NULL && last[0] == type && rec_size(last) == AW_WATCH_FIXED + len &&
      memcmp(last + AW_WATCH_FIXED, path, len) == 0)
    return;
  if (type != AW_WEV_OVERFLOW && w->pend_len + AW_WATCH_FIXED + len + AW_WATCH_FIXED <= sizeof(w->pend)) {
    put_record(w, type, kind, path, len);
    return;
  }
  if (last_overflow) return;
  put_record(w, AW_WEV_OVERFLOW, AW_WKIND_NONE, NULL, 0);
}

/* Room for the largest record (and the overflow record kept in reserve). */
static int can_convert(const watch_state_t *w) { return w->pend_len + AW_WATCH_MAX + AW_WATCH_FIXED <= sizeof(w->pend); }

/* dir/name into out (no '/' before a name in the workdir itself): its length, or 0 when
 * the whole would be longer than AW_MAX_PATH. */
static size_t join(const char *dir, size_t dlen, const char *name, size_t nlen, char *out) {
  size_t n = dlen + (dlen ? 1 : 0) + nlen;
  if (nlen == 0 || n > AW_MAX_PATH) return 0;
  memmove(out, dir, dlen);
  if (dlen) out[dlen] = '/';
  memcpy(out + n - nlen, name, nlen);
  out[n] = 0;
  return n;
}

/* ---- watching directories ---- */

/* Watches the directory open at `fd`: its wd (>= 0), -2 past max_watches, -1 on error
 * (errno). */
static int watch_add(watch_state_t *w, int ifd, int fd, const char *path, size_t len) {
  if (w->map_count >= w->max_watches) {
    w->res_flags |= AW_WATCHF_LIMIT;
    return -2;
  }
  char proc[40];
  snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
  int wd = inotify_add_watch(ifd, proc, WATCH_MASK);
  if (wd < 0) {
    if (errno == ENOSPC) w->res_flags |= AW_WATCHF_LIMIT; /* the kernel's max_user_watches */
    return -1;
  }
  if (map_put(w, wd, path, len) < 0) {
    inotify_rm_watch(ifd, wd);
    errno = ENOMEM;
    return -1;
  }
  return wd;
}

/* The child directory `name` of `dirfd`, opened for reading without following a link:
 * the name is opened O_PATH | O_NOFOLLOW (which every kernel honours), must be a
 * directory, and is reopened through "." of that descriptor. -1 otherwise. */
static int open_child_dir(int dirfd, const char *name) {
  int pfd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
  if (pfd < 0) return -1;
  struct stat st;
  int fd = -1;
  if (fstat(pfd, &st) == 0 && S_ISDIR(st.st_mode)) fd = openat(pfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  close(pfd);
  return fd;
}

static void tree_add(watch_state_t *w, int ifd, int fd, char *path, size_t len, unsigned depth, int report);

/* The entries of the directory open at `fd` (its path is path[0..len), in a buffer of
 * AW_MAX_PATH + 1 bytes that the walk extends in place): with `report`, a create record
 * each; every subdirectory is watched, with what is beneath it. Closes fd. */
static void walk_children(watch_state_t *w, int ifd, int fd, char *path, size_t len, unsigned depth, int report) {
  DIR *d = fdopendir(fd);
  if (d == NULL) {
    close(fd);
    return;
  }
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    const char *name = de->d_name;
    if (name[0] == '.' && (name[1] == 0 || (name[1] == '.' && name[2] == 0))) continue;
    size_t nlen = strnlen(name, AW_MAX_NAME + 1);
    if (nlen > AW_MAX_NAME) continue;
    size_t clen = join(path, len, name, nlen, path);
    if (clen == 0) {
      path[len] = 0;
      continue; /* too long to be named on the wire */
    }
    int isdir = de->d_type == DT_DIR;
    if (de->d_type == DT_UNKNOWN) {
      struct stat st;
      isdir = fstatat(dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
    }
    if (report) record_add(w, AW_WEV_CREATE, isdir ? AW_WKIND_DIR : AW_WKIND_FILE, path, clen);
    if (isdir) {
      if (depth + 1 > AW_MAX_DEPTH) {
        w->res_flags |= AW_WATCHF_LIMIT;
      } else {
        int cfd = open_child_dir(dirfd(d), name);
        if (cfd >= 0) tree_add(w, ifd, cfd, path, clen, depth + 1, report);
      }
    }
    path[len] = 0;
  }
  closedir(d);
}

/* Watches the directory open at `fd` and, recursively, everything beneath it. Closes fd. */
static void tree_add(watch_state_t *w, int ifd, int fd, char *path, size_t len, unsigned depth, int report) {
  if (watch_add(w, ifd, fd, path, len) < 0) {
    close(fd);
    return;
  }
  walk_children(w, ifd, fd, path, len, depth, report);
}

/* A directory made or moved in (recursive watches): it is opened by its path beneath the
 * workdir (no link followed), watched with everything beneath it, and what it already
 * holds is reported as created. Gone or replaced meanwhile: nothing (its own events say
 * what happened). */
static void dir_arrived(watch_state_t *w, int ifd, const char *p, size_t len) {
  agpath_t ap;
  ag_err_t e;
  if (walk_path_parse((const uint8_t *)p, len, &ap, &e) < 0) {
    w->res_flags |= AW_WATCHF_LIMIT;
    return;
  }
  int wdfd = files_workdir(&e);
  if (wdfd < 0) return;
  int fd = walk_open(wdfd, &ap, O_RDONLY | O_DIRECTORY, g.use_openat2, &e);
  if (fd < 0) return;
  char path[AW_MAX_PATH + 1];
  memcpy(path, p, len);
  path[len] = 0;
  tree_add(w, ifd, fd, path, len, ap.n, 1);
}

/* ---- inotify events ---- */

/* The MOVED_TO of `cookie` later in the read buffer: its path into out (length), or 0. */
static size_t find_moved_to(watch_state_t *w, uint32_t cookie, char *out) {
  size_t off = w->rpos;
  while (w->rlen - off >= sizeof(struct inotify_event)) {
    struct inotify_event ev;
    memcpy(&ev, w->rbuf + off, sizeof(ev));
    if (ev.len > w->rlen - off - sizeof(ev)) return 0;
    if ((ev.mask & IN_MOVED_TO) && ev.cookie == cookie) {
      wentry_t *dir = map_find(w, ev.wd);
      if (dir == NULL) return 0;
      const char *name = (const char *)w->rbuf + off + sizeof(ev);
      return join(dir->path, dir->len, name, strnlen(name, ev.len), out);
    }
    off += sizeof(ev) + ev.len;
  }
  return 0;
}

/* Converts the event at rpos into records and changes of the map. */
static void convert_one(req_t *r) {
  watch_state_t *w = r->u.watch;
  int ifd = r->out[0].fd;
  struct inotify_event ev;
  size_t left = w->rlen - w->rpos;
  if (left < sizeof(ev)) {
    w->rpos = w->rlen;
    return;
  }
  memcpy(&ev, w->rbuf + w->rpos, sizeof(ev));
  if (ev.len > left - sizeof(ev)) {
    w->rpos = w->rlen; /* not what the kernel writes: the rest is dropped */
    return;
  }
  const char *name = (const char *)w->rbuf + w->rpos + sizeof(ev);
  size_t nlen = strnlen(name, ev.len);
  w->rpos += sizeof(ev) + ev.len;

  if (ev.mask & IN_Q_OVERFLOW) {
    record_add(w, AW_WEV_OVERFLOW, AW_WKIND_NONE, NULL, 0);
    return;
  }
  if (ev.wd == w->root_wd && (ev.mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED | IN_UNMOUNT))) {
    w->root_gone = 1;
    return;
  }
  if (ev.mask & IN_IGNORED) {
    map_del(w, ev.wd);
    return;
  }
  wentry_t *dir = map_find(w, ev.wd);
  if (dir == NULL || nlen == 0 || nlen > AW_MAX_NAME) return; /* a watch removed, or the directory itself */
  char path[AW_MAX_PATH + 1];
  size_t plen = join(dir->path, dir->len, name, nlen, path);
  if (plen == 0) return; /* too long to be named on the wire */
  int isdir = (ev.mask & IN_ISDIR) != 0;
  int recursive = (w->flags & AW_WATCH_RECURSIVE) != 0;
  uint8_t kind = isdir ? AW_WKIND_DIR : AW_WKIND_FILE;
  if (ev.mask & IN_CREATE) {
    record_add(w, AW_WEV_CREATE, kind, path, plen);
    if (isdir && recursive) dir_arrived(w, ifd, path, plen);
  } else if (ev.mask & IN_MODIFY) {
    record_add(w, AW_WEV_MODIFY, kind, path, plen);
  } else if (ev.mask & IN_DELETE) {
    record_add(w, AW_WEV_DELETE, kind, path, plen);
  } else if (ev.mask & IN_MOVED_FROM) {
    record_add(w, AW_WEV_RENAME, kind, path, plen);
    if (isdir && recursive) {
      char to[AW_MAX_PATH + 1];
      size_t tlen = find_moved_to(w, ev.cookie, to);
      if (tlen > 0) {
        w->paired = 1;
        w->paired_cookie = ev.cookie;
        w->paired_watched = map_rename_under(w, ifd, path, plen, to, tlen);
      } else {
        map_remove_under(w, ifd, path, plen);
      }
    }
  } else if (ev.mask & IN_MOVED_TO) {
    record_add(w, AW_WEV_CREATE, kind, path, plen);
    if (isdir && recursive) {
      int moved_watched = w->paired && w->paired_cookie == ev.cookie && w->paired_watched;
      if (w->paired && w->paired_cookie == ev.cookie) w->paired = 0;
      if (!moved_watched) dir_arrived(w, ifd, path, plen);
    }
  }
}

/* ---- the request ---- */

static void release(req_t *r) {
  util_close_fd(&r->out[0].fd);
  r->out[0].active = 0;
  r->out[0].ready = 0;
  if (r->u.watch != NULL) {
    map_free(r->u.watch);
    free(r->u.watch);
    r->u.watch = NULL;
  }
}

static void watch_fail(req_t *r, const ag_err_t *e) {
  if (r->id != 0) out_error(r->id, e);
  release(r);
  req_finish(r);
}

void watch_start(uint32_t id, const uint8_t *p, size_t len) {
  aw_watch_req_t m;
  ag_err_t e;
  agpath_t path;
  int fd = -1, ifd = -1;
  watch_state_t *w = NULL;
  int rc = aw_dec_watch(p, len, &m);
  if (rc != AW_OK) {
    ag_err_decode(&e, rc, "WATCH");
    goto fail;
  }
  if (!g.proc_ok) {
    ag_err_set(&e, AW_E_UNSUPPORTED, 0, "WATCH needs a readable /proc");
    goto fail;
  }
  if (walk_path_parse(m.path.p, m.path.len, &path, &e) < 0) goto fail;
  int wdfd = files_workdir(&e);
  if (wdfd < 0) goto fail;
  fd = walk_open(wdfd, &path, O_RDONLY | O_DIRECTORY, g.use_openat2, &e);
  if (fd < 0) goto fail;
  ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (ifd < 0) {
    int err = errno;
    ag_err_set(&e, err == ENOSYS ? AW_E_UNSUPPORTED : ag_err_kind_of(err), err, "inotify_init1");
    goto fail;
  }
  w = calloc(1, sizeof(*w));
  if (w == NULL) {
    ag_err_set(&e, AW_E_RESOURCES, ENOMEM, "out of memory");
    goto fail;
  }
  w->flags = m.flags;
  w->max_watches = m.max_watches;
  char buf[AW_MAX_PATH + 1];
  size_t blen = walk_path_join(&path, path.n, buf, sizeof(buf));
  w->root_wd = watch_add(w, ifd, fd, buf, blen);
  if (w->root_wd < 0) {
    int err = errno;
    uint16_t kind = err == ENOSPC || err == ENOMEM ? AW_E_RESOURCES : ag_err_kind_of(err);
    ag_err_set(&e, kind, err, "inotify_add_watch%s", err == ENOSPC ? ": no inotify watch left (max_user_watches)" : "");
    goto fail;
  }
  if (m.flags & AW_WATCH_RECURSIVE) {
    walk_children(w, ifd, fd, buf, blen, path.n, 0);
  } else {
    close(fd);
  }
  fd = -1;
  req_t *r = req_new(id, AW_T_WATCH);
  if (r == NULL) {
    ag_err_set(&e, AW_E_RESOURCES, ENOMEM, "out of memory");
    goto fail;
  }
  r->nout = 1;
  r->out[0].fd = ifd;
  r->out[0].active = 1;
  r->out[0].credit = m.window;
  r->u.watch = w;
  return;
fail:
  if (fd >= 0) close(fd);
  if (ifd >= 0) close(ifd);
  if (w != NULL) {
    map_free(w);
    free(w);
  }
  out_error(id, &e);
}

static void watch_finish(req_t *r) {
  aw_watch_res_t res = {r->u.watch->events, r->u.watch->res_flags | AW_WATCHF_ROOT_GONE};
  aw_writer_t wr;
  if (out_frame_begin(&wr, 64)) out_frame_end(&wr, aw_put_watch_result(&wr, r->id, &res));
  release(r);
  req_finish(r);
}

int watch_produce(req_t *r, int which) {
  (void)which;
  watch_state_t *w = r->u.watch;
  ostream_t *o = &r->out[0];
  int progress = 0;
  if (w == NULL) return 0;
  while (!w->root_gone && can_convert(w)) {
    if (w->rpos >= w->rlen) {
      if (!o->ready) break;
      ssize_t n = read(o->fd, w->rbuf, sizeof(w->rbuf));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN) {
        o->ready = 0;
        break;
      }
      if (n <= 0) {
        ag_err_t e;
        ag_err_set(&e, n < 0 ? ag_err_kind_of(errno) : AW_E_IO, n < 0 ? errno : 0, "read inotify");
        watch_fail(r, &e);
        return 1;
      }
      w->rpos = 0;
      w->rlen = (size_t)n;
    }
    convert_one(r);
    progress = 1;
  }
  /* Whole records, as many as the credit (and a DATA frame) takes. */
  size_t cap = o->credit < AW_MAX_DATA ? o->credit : AW_MAX_DATA;
  size_t used = 0;
  uint64_t count = 0;
  while (used < w->pend_len && used + rec_size(w->pend + used) <= cap) {
    used += rec_size(w->pend + used);
    count++;
  }
  if (used > 0) {
    uint8_t *b = out_reserve(AW_HEADER_LEN + used);
    if (b == NULL) return progress;
    memcpy(b + AW_HEADER_LEN, w->pend, used);
    aw_header_t h = {(uint32_t)used, AW_T_DATA, 0, AW_S_OUT, 0, r->id};
    aw_header_encode(b, &h);
    out_commit(AW_HEADER_LEN + used);
    o->credit -= (uint32_t)used;
    o->sent += used;
    w->events += count;
    memmove(w->pend, w->pend + used, w->pend_len - used);
    w->pend_len -= used;
    if (w->pend_len == 0) w->has_last = 0;
    else w->last_off -= used;
    progress = 1;
  }
  if (w->root_gone && w->pend_len == 0) {
    watch_finish(r);
    return 1;
  }
  return progress;
}

int watch_ready(const req_t *r, int which) {
  const watch_state_t *w = r->u.watch;
  const ostream_t *o = &r->out[which];
  if (w == NULL) return 0;
  if (w->pend_len > 0) {
    if (rec_size(w->pend) <= o->credit) return 1;
  } else if (w->root_gone) {
    return 1;
  }
  return !w->root_gone && can_convert(w) && (w->rpos < w->rlen || o->ready);
}

/* The poll loop closed the inotify descriptor (it hung up, which inotify never does). */
void watch_closed(req_t *r) {
  ag_err_t e;
  ag_err_set(&e, AW_E_IO, 0, "the inotify descriptor hung up");
  watch_fail(r, &e);
}

void watch_cancel(req_t *r, uint16_t why) {
  release(r);
  req_end(r, why);
}

void watch_close(req_t *r) { release(r); }
