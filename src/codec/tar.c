/*
 * tar.c - building upload archives and reading download archives with libarchive
 * (see tar.h).
 *
 * Owns: the libarchive handles of one call (created and freed inside it). Archives are
 * written through custom callbacks that append to the caller's buf_t and read from the
 * caller's memory through a callback that also notes when libarchive asked for bytes
 * past the end: that is how a prefix that is merely short (more bytes will come) is told
 * apart from bytes that cannot be an archive. Only the tar format is enabled for reading
 * (no compression filters), and no allocation is ever sized from a header: file data is
 * appended as it is read, after the announced size was checked against the caller's limit.
 */
#include "codec/tar.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <locale.h>
#include <string.h>

/*
 * Entry names are UTF-8 (JavaScript strings, Go's archive/tar). libarchive converts
 * names between the archive's charset and the calling thread's locale, which in Node is
 * "C": a non-ASCII name would then be written with "hdrcharset=BINARY" (GNU tar warns
 * about it) and read with a warning. For the lifetime of each archive handle the calling
 * thread uses C.UTF-8 (uselocale is per thread: no process state changes), so names
 * pass through as the UTF-8 they are. Without that locale, names still pass as raw bytes.
 */
typedef struct utf8_scope {
  locale_t utf8;
  locale_t prev;
} utf8_scope_t;

static void utf8_enter(utf8_scope_t *s) {
  s->prev = (locale_t)0;
  s->utf8 = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
  if (s->utf8 != (locale_t)0) s->prev = uselocale(s->utf8);
}

static void utf8_leave(utf8_scope_t *s) {
  if (s->utf8 == (locale_t)0) return;
  uselocale(s->prev);
  freelocale(s->utf8);
  s->utf8 = (locale_t)0;
}

/* ---- writing ----------------------------------------------------------------------- */

typedef struct sink {
  buf_t *out;
  int failed;
} sink_t;

static la_ssize_t sink_write(struct archive *a, void *ud, const void *data, size_t len) {
  sink_t *s = ud;
  if (buf_append(s->out, data, len) != 0) {
    s->failed = 1;
    archive_set_error(a, ENOMEM, "out of memory");
    return -1;
  }
  return (la_ssize_t)len;
}

static int path_has_dotdot(const char *p) {
  while (*p) {
    const char *slash = strchr(p, '/');
    size_t n = slash ? (size_t)(slash - p) : strlen(p);
    if (n == 2 && p[0] == '.' && p[1] == '.') return 1;
    if (slash == NULL) break;
    p = slash + 1;
  }
  return 0;
}

static int build_failed(struct archive *a, sink_t *sink, err_t *err) {
  if (sink->failed) return err_oom(err);
  const char *msg = archive_error_string(a);
  return err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, "Could not build the upload archive: %s",
                     msg ? msg : "unknown error");
}

int tar_build(const tar_entry_spec_t *entries, size_t count, buf_t *out, err_t *err) {
  size_t start = out->len;
  sink_t sink = {out, 0};
  struct archive_entry *e = NULL;
  int rc = -1;
  utf8_scope_t loc;
  utf8_enter(&loc);
  struct archive *a = archive_write_new();
  if (a == NULL) {
    utf8_leave(&loc);
    return err_oom(err);
  }
  if (archive_write_set_format_pax_restricted(a) != ARCHIVE_OK ||
      archive_write_set_bytes_in_last_block(a, 1) != ARCHIVE_OK ||
      archive_write_open(a, &sink, NULL, sink_write, NULL) != ARCHIVE_OK) {
    build_failed(a, &sink, err);
    goto done;
  }
  e = archive_entry_new();
  if (e == NULL) {
    err_oom(err);
    goto done;
  }
  for (size_t i = 0; i < count; i++) {
    const tar_entry_spec_t *s = &entries[i];
    if (s->path == NULL || s->path[0] == '\0' || s->path[0] == '/' || path_has_dotdot(s->path)) {
      err_sandbox(err, CODE_INVALID_PATH, "Archive entry path must be relative: %s", s->path ? s->path : "");
      goto done;
    }
    archive_entry_clear(e);
    archive_entry_copy_pathname(e, s->path);
    archive_entry_set_mode(e, (s->is_dir ? AE_IFDIR : AE_IFREG) | (s->mode & 07777));
    archive_entry_set_uid(e, (la_int64_t)s->uid);
    archive_entry_set_gid(e, (la_int64_t)s->gid);
    archive_entry_set_mtime(e, s->mtime, 0);
    archive_entry_set_size(e, s->is_dir ? 0 : (la_int64_t)s->len);
    /* A WARN is a name that could not be converted to UTF-8: written as raw bytes. */
    if (archive_write_header(a, e) < ARCHIVE_WARN) {
      build_failed(a, &sink, err);
      goto done;
    }
    if (!s->is_dir) {
      size_t off = 0;
      while (off < s->len) {
        la_ssize_t n = archive_write_data(a, s->data + off, s->len - off);
        if (n <= 0) {
          build_failed(a, &sink, err);
          goto done;
        }
        off += (size_t)n;
      }
    }
  }
  if (archive_write_close(a) != ARCHIVE_OK) {
    build_failed(a, &sink, err);
    goto done;
  }
  rc = 0;
done:
  archive_entry_free(e);
  archive_write_free(a); /* may still write a trailer after a failure: trimmed below */
  utf8_leave(&loc);
  if (rc != 0) out->len = start;
  return rc;
}

/* ---- reading ----------------------------------------------------------------------- */

typedef struct source {
  const uint8_t *data;
  size_t len;
  int served;
  int past_end; /* libarchive wanted bytes beyond `len` */
} source_t;

static la_ssize_t source_read(struct archive *a, void *ud, const void **buf) {
  (void)a;
  source_t *s = ud;
  if (s->served || s->len == 0) {
    s->past_end = 1;
    *buf = NULL;
    return 0;
  }
  s->served = 1;
  *buf = s->data;
  return (la_ssize_t)s->len;
}

static struct archive *reader_open(source_t *src, err_t *err) {
  struct archive *a = archive_read_new();
  if (a == NULL) {
    err_oom(err);
    return NULL;
  }
  if (archive_read_support_format_tar(a) != ARCHIVE_OK) {
    err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, "libarchive cannot read tar archives: %s",
                archive_error_string(a) ? archive_error_string(a) : "unknown error");
    archive_read_free(a);
    return NULL;
  }
  /* Opening reads nothing yet for the tar format alone; failures surface at the header. */
  archive_read_open(a, src, NULL, source_read, NULL);
  return a;
}

/* libarchive leaves some short reads without a message: name them as it does elsewhere. */
static const char *reader_error(struct archive *a, const source_t *src) {
  const char *msg = archive_error_string(a);
  if (msg) return msg;
  return src->past_end ? "Truncated tar archive" : "unknown error";
}

static tar_kind_t entry_kind(struct archive_entry *e) {
  if (archive_entry_hardlink(e) != NULL) return TAR_KIND_OTHER;
  switch (archive_entry_filetype(e)) {
    case AE_IFREG:
      return TAR_KIND_FILE;
    case AE_IFDIR:
      return TAR_KIND_DIRECTORY;
    case AE_IFLNK:
      return TAR_KIND_SYMLINK;
    default:
      return TAR_KIND_OTHER;
  }
}

int tar_peek(const uint8_t *data, size_t len, tar_header_info_t *info, err_t *err) {
  /* A header block is 512 bytes; before that, libarchive (which accepts old v7 headers
   * without a magic) is the only judge, so there is nothing to decide yet. */
  if (len < 512) return 0;
  source_t src = {data, len, 0, 0};
  struct archive_entry *e = NULL;
  utf8_scope_t loc;
  utf8_enter(&loc);
  struct archive *a = reader_open(&src, err);
  if (a == NULL) {
    utf8_leave(&loc);
    return -1;
  }
  int rc;
  int r = archive_read_next_header(a, &e);
  if (r == ARCHIVE_EOF) {
    /* libarchive also says EOF when the bytes stop at a block boundary (after a pax or
     * GNU long-name header, or after a first zero block): only an end marker read
     * without running out of bytes is the end of an empty archive. */
    if (src.past_end) rc = 0;
    else
      rc = err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, "Docker engine returned a malformed archive: %s",
                       "the archive is empty");
  } else if (r < ARCHIVE_WARN) {
    /* Failing after asking for bytes we do not have yet is not a verdict. */
    if (src.past_end) rc = 0;
    else
      rc = err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, "Docker engine returned a malformed archive: %s",
                       reader_error(a, &src));
  } else if (archive_entry_size(e) < 0) {
    rc = err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, "Docker engine returned a malformed archive: %s",
                     "negative entry size");
  } else {
    const char *name = archive_entry_pathname(e);
    memset(info, 0, sizeof(*info));
    if (name) {
      size_t n = strlen(name);
      if (n >= sizeof(info->name)) n = sizeof(info->name) - 1;
      memcpy(info->name, name, n);
    }
    info->kind = entry_kind(e);
    info->size = (uint64_t)archive_entry_size(e);
    rc = 1;
  }
  archive_read_free(a);
  utf8_leave(&loc);
  return rc;
}

#define MALFORMED "Docker engine returned a malformed archive for %s: %s"

int tar_read_file(const uint8_t *data, size_t len, const char *name, uint64_t max_bytes,
                  const char *display_path, buf_t *out, err_t *err) {
  size_t start = out->len;
  source_t src = {data, len, 0, 0};
  struct archive_entry *e = NULL;
  int rc = -1;
  utf8_scope_t loc;
  utf8_enter(&loc);
  struct archive *a = reader_open(&src, err);
  if (a == NULL) {
    utf8_leave(&loc);
    return -1;
  }

  int r = archive_read_next_header(a, &e);
  if (r == ARCHIVE_EOF) {
    err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, MALFORMED, display_path, "the archive is empty");
    goto done;
  }
  if (r < ARCHIVE_WARN) {
    err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, MALFORMED, display_path, reader_error(a, &src));
    goto done;
  }
  const char *path = archive_entry_pathname(e);
  if (path == NULL || path[0] == '\0' || path[0] == '/' || path_has_dotdot(path)) {
    err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, "Docker engine returned a malformed archive for %s: unsafe entry "
                "name \"%s\"", display_path, path ? path : "");
    goto done;
  }
  if (entry_kind(e) != TAR_KIND_FILE) {
    err_sandbox(err, CODE_INVALID_PATH, "Sandbox path is not a regular file: %s", display_path);
    goto done;
  }
  if (strcmp(path, name) != 0) {
    err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, "Docker engine returned a malformed archive for %s: unexpected "
                "entry \"%s\"", display_path, path);
    goto done;
  }
  la_int64_t size = archive_entry_size(e);
  if (size < 0) {
    err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, MALFORMED, display_path, "negative entry size");
    goto done;
  }
  /* Before a single data byte is read or stored. */
  if ((uint64_t)size > max_bytes) {
    err_sandbox(err, CODE_FILE_TOO_LARGE, "Sandbox file exceeds maxFileBytes (%llu > %llu): %s",
                (unsigned long long)size, (unsigned long long)max_bytes, display_path);
    goto done;
  }
  uint8_t chunk[16384];
  uint64_t total = 0;
  for (;;) {
    la_ssize_t n = archive_read_data(a, chunk, sizeof(chunk));
    if (n == 0) break;
    if (n < 0) {
      err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, MALFORMED, display_path, reader_error(a, &src));
      goto done;
    }
    total += (uint64_t)n;
    if (total > (uint64_t)size) { /* libarchive never gives more than the entry size */
      err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, MALFORMED, display_path, "entry data longer than its size");
      goto done;
    }
    if (buf_append(out, chunk, (size_t)n) != 0) {
      err_oom(err);
      goto done;
    }
  }
  if (total != (uint64_t)size) {
    err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, MALFORMED, display_path, "entry data shorter than its size");
    goto done;
  }
  r = archive_read_next_header(a, &e);
  if (r == ARCHIVE_OK || r == ARCHIVE_WARN) {
    err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, MALFORMED, display_path, "more than one entry");
    goto done;
  }
  if (r != ARCHIVE_EOF) {
    err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, MALFORMED, display_path, reader_error(a, &src));
    goto done;
  }
  rc = 0;
done:
  archive_read_free(a);
  utf8_leave(&loc);
  if (rc != 0) out->len = start;
  return rc;
}
