/*
 * files.c - READ, WRITE, MKDIR and LIST beneath the workdir, as the user the agent runs
 * as; paths are resolved by walk.c, so no symlink is followed anywhere on a path.
 *
 * Owns: the workdir descriptor (g.workdir_fd, opened on first use and kept) and the
 * temporary names' counter (g.tmp_seq); per READ record the file's descriptor; per LIST
 * record the DIR stream; per WRITE record the parent directory's descriptor, the
 * temporary file's descriptor and name, and the final name. files_close releases them; a
 * WRITE that did not commit removes its temporary file (when it fails or is cancelled).
 * A WRITE lands in a temporary file ".anvia-agent-<pid>-<n>.tmp" in the target's
 * directory and is renamed over the target once all of its declared bytes have arrived,
 * so no reader ever sees a partial file.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent.h"

int files_workdir(ag_err_t *e) {
  if (g.workdir_fd >= 0) return g.workdir_fd;
  if (g.workdir == NULL) {
    ag_err_set(e, AW_E_NO_WORKDIR, 0, "the agent was started without --workdir");
    return -1;
  }
  int fd = open(g.workdir, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    ag_err_set(e, AW_E_NO_WORKDIR, errno, "%s", g.workdir);
    return -1;
  }
  g.workdir_fd = fd;
  return fd;
}

static int64_t mtime_of(const struct stat *st) { return util_realtime_ns_of(&st->st_mtim); }

/* Sends ERROR and ends the request (what op_fail does for these types). */
static void file_fail(req_t *r, const ag_err_t *e) {
  if (r->id != 0) out_error(r->id, e);
  files_cancel(r, 0);
}

/* ---- READ ---- */

void files_read_start(uint32_t id, const uint8_t *p, size_t len) {
  aw_read_req_t m;
  ag_err_t e;
  agpath_t path;
  int fd = -1;
  int rc = aw_dec_read(p, len, &m);
  if (rc != AW_OK) {
    ag_err_decode(&e, rc, "READ");
    goto fail;
  }
  if (walk_path_parse(m.path.p, m.path.len, &path, &e) < 0) goto fail;
  int wd = files_workdir(&e);
  if (wd < 0) goto fail;
  fd = walk_open(wd, &path, O_RDONLY | O_NONBLOCK | O_NOCTTY, g.use_openat2, &e);
  if (fd < 0) goto fail;
  struct stat st;
  if (fstat(fd, &st) < 0) {
    ag_err_set(&e, ag_err_kind_of(errno), errno, "fstat");
    goto fail;
  }
  if (!S_ISREG(st.st_mode)) {
    ag_err_set(&e, S_ISDIR(st.st_mode) ? AW_E_IS_DIRECTORY : AW_E_NOT_REGULAR, 0, NULL);
    e.detail_len = walk_path_join(&path, path.n, e.detail, sizeof(e.detail));
    e.value = (uint64_t)st.st_mode;
    goto fail;
  }
  if (m.max_bytes && (uint64_t)st.st_size > m.max_bytes) {
    ag_err_set(&e, AW_E_TOO_LARGE, EFBIG, NULL);
    e.detail_len = walk_path_join(&path, path.n, e.detail, sizeof(e.detail));
    e.value = (uint64_t)st.st_size;
    goto fail;
  }
  req_t *r = req_new(id, AW_T_READ);
  if (r == NULL) {
    ag_err_set(&e, AW_E_RESOURCES, ENOMEM, "out of memory");
    goto fail;
  }
  r->nout = 1;
  r->out[0].fd = fd;
  r->out[0].active = 1;
  r->out[0].credit = m.window;
  r->u.read.max_bytes = m.max_bytes;
  r->u.read.mode = (uint32_t)st.st_mode;
  r->u.read.mtime_ns = mtime_of(&st);
  return;
fail:
  if (fd >= 0) close(fd);
  out_error(id, &e);
}

static void read_finish(req_t *r) {
  aw_read_res_t res;
  res.bytes = r->out[0].sent;
  res.mode = r->u.read.mode;
  res.flags = r->u.read.truncated ? AW_READF_TRUNCATED : 0;
  res.mtime_ns = r->u.read.mtime_ns;
  aw_writer_t w;
  if (out_frame_begin(&w, 64)) out_frame_end(&w, aw_put_read_result(&w, r->id, &res));
  util_close_fd(&r->out[0].fd);
  r->out[0].active = 0;
  req_finish(r);
}

int files_read_produce(req_t *r, int which) {
  (void)which;
  ostream_t *o = &r->out[0];
  uint64_t want = o->credit < AW_MAX_DATA ? o->credit : AW_MAX_DATA;
  if (r->u.read.max_bytes) {
    uint64_t left = r->u.read.max_bytes - o->sent;
    if (left == 0) {
      /* All that was allowed has gone: one byte more means the file grew. */
      uint8_t c;
      ssize_t n;
      do n = read(o->fd, &c, 1);
      while (n < 0 && errno == EINTR);
      if (n > 0) r->u.read.truncated = 1;
      read_finish(r);
      return 1;
    }
    if (want > left) want = left;
  }
  uint8_t *b = out_reserve(AW_HEADER_LEN + want);
  if (b == NULL) return 0;
  ssize_t n;
  do n = read(o->fd, b + AW_HEADER_LEN, want);
  while (n < 0 && errno == EINTR);
  if (n < 0) {
    ag_err_t e;
    ag_err_set(&e, ag_err_kind_of(errno), errno, "read");
    file_fail(r, &e);
    return 1;
  }
  if (n == 0) {
    read_finish(r);
    return 1;
  }
  aw_header_t h = {(uint32_t)n, AW_T_DATA, 0, AW_S_OUT, 0, r->id};
  aw_header_encode(b, &h);
  out_commit(AW_HEADER_LEN + (size_t)n);
  o->credit -= (uint32_t)n;
  o->sent += (uint64_t)n;
  return 1;
}

/* ---- WRITE ---- */

void files_write_start(uint32_t id, const uint8_t *p, size_t len) {
  aw_write_req_t m;
  ag_err_t e;
  agpath_t path;
  int parent = -1;
  req_t *r = NULL;
  int rc = aw_dec_write(p, len, &m);
  if (rc != AW_OK) {
    ag_err_decode(&e, rc, "WRITE");
    goto fail;
  }
  if (walk_path_parse(m.path.p, m.path.len, &path, &e) < 0) goto fail;
  if (path.n == 0) {
    ag_err_set(&e, AW_E_IS_DIRECTORY, EISDIR, "the path names the workdir");
    goto fail;
  }
  int wd = files_workdir(&e);
  if (wd < 0) goto fail;
  parent = walk_dir(wd, &path, path.n - 1, 1, 0755, g.use_openat2, NULL, &e);
  if (parent < 0) goto fail;
  const char *name = path.buf + path.off[path.n - 1];
  struct stat st;
  if (fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
    if (S_ISDIR(st.st_mode) || S_ISLNK(st.st_mode)) {
      ag_err_set(&e, S_ISDIR(st.st_mode) ? AW_E_IS_DIRECTORY : AW_E_SYMLINK, S_ISDIR(st.st_mode) ? EISDIR : ELOOP, NULL);
      e.detail_len = walk_path_join(&path, path.n, e.detail, sizeof(e.detail));
      goto fail;
    }
  } else if (errno != ENOENT) {
    ag_err_set(&e, ag_err_kind_of(errno), errno, NULL);
    e.detail_len = walk_path_join(&path, path.n, e.detail, sizeof(e.detail));
    goto fail;
  }
  r = req_new(id, AW_T_WRITE);
  if (r == NULL) {
    ag_err_set(&e, AW_E_RESOURCES, ENOMEM, "out of memory");
    goto fail;
  }
  write_state_t *ws = &r->u.write;
  ws->fd = -1;
  ws->parent_fd = parent;
  parent = -1;
  ws->length = m.length;
  ws->mode = m.mode ? m.mode : 0644;
  ws->flags = m.flags;
  ws->name = strdup(name);
  if (ws->name == NULL) {
    ag_err_set(&e, AW_E_RESOURCES, ENOMEM, "out of memory");
    goto fail;
  }
  for (int i = 0; i < AG_MAX_TEMP_TRIES && ws->fd < 0; i++) {
    snprintf(ws->tmp, sizeof(ws->tmp), ".anvia-agent-%d-%u.tmp", (int)g.self, ++g.tmp_seq);
    ws->fd = openat(ws->parent_fd, ws->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (ws->fd < 0 && errno != EEXIST) break;
  }
  if (ws->fd < 0) {
    ag_err_set(&e, ag_err_kind_of(errno), errno, NULL);
    e.detail_len = walk_path_join(&path, path.n, e.detail, sizeof(e.detail));
    ws->tmp[0] = 0;
    goto fail;
  }
  r->has_in = 1;
  return;
fail:
  if (parent >= 0) close(parent);
  out_error(id, &e);
  if (r != NULL) req_finish(r);
}

static void write_abort(req_t *r) {
  write_state_t *ws = &r->u.write;
  util_close_fd(&ws->fd);
  if (ws->tmp[0] && ws->parent_fd >= 0) unlinkat(ws->parent_fd, ws->tmp, 0);
  ws->tmp[0] = 0;
}

static void write_fail(req_t *r, uint16_t kind, int err, uint64_t value, const char *what) {
  ag_err_t e;
  ag_err_set(&e, kind, err, "%s", what);
  e.value = value;
  write_abort(r);
  file_fail(r, &e);
}

void files_write_data(req_t *r, const uint8_t *p, size_t len, int end) {
  write_state_t *ws = &r->u.write;
  if (r->in.received > ws->length) {
    write_fail(r, AW_E_LENGTH_MISMATCH, 0, r->in.received, "more bytes than the declared length");
    return;
  }
  if (len > 0 && util_write_all(ws->fd, p, len) < 0) {
    int err = errno;
    write_fail(r, ag_err_kind_of(err), err, 0, "write");
    return;
  }
  if (!end) {
    req_in_consumed(r, (uint32_t)len, 0);
    return;
  }
  if (r->in.received != ws->length) {
    write_fail(r, AW_E_LENGTH_MISMATCH, 0, r->in.received, "fewer bytes than the declared length");
    return;
  }
  if (fchmod(ws->fd, (mode_t)ws->mode) < 0 || ((ws->flags & AW_WRITE_FSYNC) && fsync(ws->fd) < 0)) {
    int err = errno;
    write_fail(r, ag_err_kind_of(err), err, 0, "fchmod");
    return;
  }
  util_close_fd(&ws->fd);
  if (renameat(ws->parent_fd, ws->tmp, ws->parent_fd, ws->name) < 0) {
    int err = errno;
    write_fail(r, err == EISDIR || err == ENOTEMPTY || err == EEXIST ? AW_E_IS_DIRECTORY : ag_err_kind_of(err), err, 0,
               ws->name);
    return;
  }
  ws->tmp[0] = 0;
  aw_write_res_t res = {r->in.received, ws->mode};
  aw_writer_t w;
  if (out_frame_begin(&w, 64)) out_frame_end(&w, aw_put_write_result(&w, r->id, &res));
  req_finish(r);
}

/* ---- MKDIR ---- */

void files_mkdir_run(uint32_t id, const uint8_t *p, size_t len) {
  aw_mkdir_req_t m;
  ag_err_t e;
  agpath_t path;
  int fd = -1;
  int created = 0;
  int rc = aw_dec_mkdir(p, len, &m);
  if (rc != AW_OK) {
    ag_err_decode(&e, rc, "MKDIR");
    goto fail;
  }
  if (walk_path_parse(m.path.p, m.path.len, &path, &e) < 0) goto fail;
  int wd = files_workdir(&e);
  if (wd < 0) goto fail;
  mode_t mode = m.mode ? (mode_t)m.mode : 0755;
  if (path.n > 0) {
    if (m.flags & AW_MKDIR_PARENTS) {
      fd = walk_dir(wd, &path, path.n, 1, mode, 0 /* the walk says which it made */, &created, &e);
      if (fd < 0) goto fail;
    } else {
      fd = walk_dir(wd, &path, path.n - 1, 0, 0, g.use_openat2, NULL, &e);
      if (fd < 0) goto fail;
      const char *name = path.buf + path.off[path.n - 1];
      if (mkdirat(fd, name, mode) == 0) {
        created = 1;
      } else {
        int err = errno;
        struct stat st;
        if (err != EEXIST) {
          ag_err_set(&e, ag_err_kind_of(err), err, NULL);
          e.detail_len = walk_path_join(&path, path.n, e.detail, sizeof(e.detail));
          goto fail;
        }
        int st_rc = fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW);
        if (st_rc < 0 || !S_ISDIR(st.st_mode)) {
          int link = st_rc == 0 && S_ISLNK(st.st_mode);
          ag_err_set(&e, link ? AW_E_SYMLINK : AW_E_NOT_DIRECTORY, link ? ELOOP : ENOTDIR, NULL);
          e.detail_len = walk_path_join(&path, path.n, e.detail, sizeof(e.detail));
          goto fail;
        }
      }
    }
  }
  if (fd >= 0) close(fd);
  aw_mkdir_res_t res = {(uint8_t)created};
  aw_writer_t w;
  if (out_frame_begin(&w, 64)) out_frame_end(&w, aw_put_mkdir_result(&w, id, &res));
  return;
fail:
  if (fd >= 0) close(fd);
  out_error(id, &e);
}

/* ---- LIST ---- */

void files_list_start(uint32_t id, const uint8_t *p, size_t len) {
  aw_list_req_t m;
  ag_err_t e;
  agpath_t path;
  int fd = -1;
  int rc = aw_dec_list(p, len, &m);
  if (rc != AW_OK) {
    ag_err_decode(&e, rc, "LIST");
    goto fail;
  }
  if (walk_path_parse(m.path.p, m.path.len, &path, &e) < 0) goto fail;
  int wd = files_workdir(&e);
  if (wd < 0) goto fail;
  fd = walk_open(wd, &path, O_RDONLY | O_DIRECTORY, g.use_openat2, &e);
  if (fd < 0) goto fail;
  DIR *d = fdopendir(fd);
  if (d == NULL) {
    ag_err_set(&e, ag_err_kind_of(errno), errno, "fdopendir");
    goto fail;
  }
  fd = -1; /* the DIR owns it now */
  req_t *r = req_new(id, AW_T_LIST);
  if (r == NULL) {
    closedir(d);
    ag_err_set(&e, AW_E_RESOURCES, ENOMEM, "out of memory");
    goto fail;
  }
  r->nout = 1;
  r->out[0].active = 1;
  r->out[0].credit = m.window;
  r->u.list.dir = d;
  r->u.list.max_entries = m.max_entries;
  return;
fail:
  if (fd >= 0) close(fd);
  out_error(id, &e);
}

/* The next entry as a record in ls->pending: 1, 0 at the end, -1 on error (errno). */
static int list_next(list_state_t *ls) {
  for (;;) {
    errno = 0;
    struct dirent *de = readdir(ls->dir);
    if (de == NULL) return errno ? -1 : 0;
    const char *name = de->d_name;
    if (name[0] == '.' && (name[1] == 0 || (name[1] == '.' && name[2] == 0))) continue;
    size_t nlen = strnlen(name, AW_MAX_NAME + 1);
    if (nlen == 0 || nlen > AW_MAX_NAME) continue;
    aw_entry_t en;
    memset(&en, 0, sizeof(en));
    en.name.p = (const uint8_t *)name;
    en.name.len = (uint32_t)nlen;
    struct stat st;
    if (fstatat(dirfd(ls->dir), name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
      en.mode = (uint32_t)st.st_mode;
      en.mtime_ns = mtime_of(&st);
      if (S_ISREG(st.st_mode)) {
        en.type = AW_ENT_FILE;
        en.size = (uint64_t)st.st_size;
      } else if (S_ISDIR(st.st_mode)) {
        en.type = AW_ENT_DIR;
      } else if (S_ISLNK(st.st_mode)) {
        en.type = AW_ENT_SYMLINK;
      } else {
        en.type = AW_ENT_OTHER;
      }
    } else if (errno == ENOENT) {
      continue; /* gone since readdir saw it */
    } else {
      en.type = AW_ENT_UNKNOWN;
    }
    aw_writer_t w;
    aw_w_init(&w, ls->pending, sizeof(ls->pending));
    if (aw_put_entry(&w, &en) != AW_OK) continue;
    ls->pending_len = w.len;
    return 1;
  }
}

static void list_finish(req_t *r) {
  aw_list_res_t res = {r->u.list.count, r->u.list.truncated ? AW_LISTF_TRUNCATED : 0};
  aw_writer_t w;
  if (out_frame_begin(&w, 64)) out_frame_end(&w, aw_put_list_result(&w, r->id, &res));
  r->out[0].active = 0;
  req_finish(r);
}

int files_list_produce(req_t *r, int which) {
  (void)which;
  list_state_t *ls = &r->u.list;
  ostream_t *o = &r->out[0];
  size_t cap = o->credit < AW_MAX_DATA ? o->credit : AW_MAX_DATA;
  if (ls->pending_len == 0 && ls->count < ls->max_entries) {
    int rc = list_next(ls);
    if (rc < 0) {
      ag_err_t e;
      ag_err_set(&e, ag_err_kind_of(errno), errno, "readdir");
      file_fail(r, &e);
      return 1;
    }
    if (rc == 0) {
      list_finish(r);
      return 1;
    }
  }
  if (ls->pending_len == 0) {
    /* max_entries reached: one more entry means the listing was cut. */
    int rc = list_next(ls);
    if (rc > 0) ls->truncated = 1;
    ls->pending_len = 0;
    list_finish(r);
    return 1;
  }
  if (ls->pending_len > cap) return 0; /* wait for credit for a whole record */
  uint8_t *b = out_reserve(AW_HEADER_LEN + cap);
  if (b == NULL) return 0;
  size_t used = 0;
  int done = 0;
  while (ls->pending_len > 0 && used + ls->pending_len <= cap) {
    memcpy(b + AW_HEADER_LEN + used, ls->pending, ls->pending_len);
    used += ls->pending_len;
    ls->pending_len = 0;
    ls->count++;
    if (ls->count >= ls->max_entries) {
      int rc = list_next(ls);
      if (rc > 0) ls->truncated = 1;
      ls->pending_len = 0;
      done = 1;
      break;
    }
    int rc = list_next(ls);
    if (rc <= 0) {
      done = 1; /* a readdir error after some entries ends the listing there */
      break;
    }
  }
  aw_header_t h = {(uint32_t)used, AW_T_DATA, 0, AW_S_OUT, 0, r->id};
  aw_header_encode(b, &h);
  out_commit(AW_HEADER_LEN + used);
  o->credit -= (uint32_t)used;
  o->sent += used;
  if (done) list_finish(r);
  return 1;
}

void files_cancel(req_t *r, uint16_t why) {
  if (r->type == AW_T_WRITE) write_abort(r);
  req_end(r, why);
}

void files_close(req_t *r) {
  switch (r->type) {
  case AW_T_READ: util_close_fd(&r->out[0].fd); break;
  case AW_T_LIST:
    if (r->u.list.dir) closedir(r->u.list.dir);
    r->u.list.dir = NULL;
    break;
  case AW_T_WRITE:
    write_abort(r);
    util_close_fd(&r->u.write.parent_fd);
    free(r->u.write.name);
    r->u.write.name = NULL;
    break;
  default: break;
  }
}

/* A listing sends whole records: it waits for credit for the one it holds. */
int files_list_ready(const req_t *r, int which) { return r->u.list.pending_len <= r->out[which].credit; }
