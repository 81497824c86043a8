/*
 * build_task.c - an image build on the engine (see build_task.h).
 *
 * Owns: each build_task_t and what build_task.h lists; the descriptors and file buffers of
 * build_context_read (closed and freed before it returns).
 *
 * The reply is fed to the parser inside libcurl's write callback, which only appends to
 * the task's output buffer and starts a 0 ms timer; the timer hands the output to the
 * reader, resumes a paused reply and, once the request is done, reports the end. Once
 * the stream reports an error the transfer is dropped at once, as the docker CLI closes
 * the reply when it stops reading.
 */
#include "engine/build_task.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "codec/buildmsg.h"
#include "engine/stream.h"
#include "engine/timer.h"

/* Never reached: the reply pauses at BUILD_OUT_HIGH, and one piece of it (at most
 * libcurl's 256 KiB buffer, plus a held line of up to BUILD_MAX_LINE) renders to at most
 * 4 times its size (the worst is a bare {"time":1}, 10 bytes shown as 37): a last guard. */
#define BUILD_OUT_LIMIT (32 * 1024 * 1024)

struct build_task {
  engine_t *eng;
  stream_req_t *req;
  buf_t archive;
  size_t sent;
  int body_sent;
  build_stream_t parser;
  buf_t out;
  sbx_timer_t *timer;
  int paused;      /* the reply waits for the output to be taken */
  int out_of_memory;
  int finished;    /* the request is done: report once the output is out */
  err_t result;
  int calling;     /* inside a callback of the reader */
  int free_pending;
  build_task_cbs_t cbs;
  void *ud;
};

/* ---- the context ------------------------------------------------------------------- */

static int read_file(int dfd, const char *dir, const char *name, build_file_t *f, err_t *err) {
  int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ELOOP) return err_sandbox(err, CODE_INVALID_PATH, "Refusing to read through symlink: %s/%s", dir, name);
    return err_sandbox(err, CODE_INVALID_PATH, "Unable to read build context file %s/%s: %s", dir, name, strerror(errno));
  }
  struct stat st;
  uint8_t *data = NULL;
  size_t len = 0;
  if (fstat(fd, &st) != 0) {
    err_sandbox(err, CODE_INVALID_PATH, "Unable to read build context file %s/%s: %s", dir, name, strerror(errno));
    goto fail;
  }
  if (!S_ISREG(st.st_mode)) {
    err_sandbox(err, CODE_INVALID_PATH, "Build context file is not a regular file: %s/%s", dir, name);
    goto fail;
  }
  if (st.st_size > BUILD_CONTEXT_MAX_FILE_BYTES) goto too_large;
  /* Read one byte more than allowed: a file that grew is refused, not cut. */
  data = malloc((size_t)st.st_size + 1);
  if (data == NULL) {
    err_oom(err);
    goto fail;
  }
  for (;;) {
    ssize_t n = read(fd, data + len, (size_t)st.st_size + 1 - len);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      err_sandbox(err, CODE_INVALID_PATH, "Unable to read build context file %s/%s: %s", dir, name, strerror(errno));
      goto fail;
    }
    if (n == 0) break;
    len += (size_t)n;
    if (len > (size_t)st.st_size) goto too_large;
  }
  close(fd);
  f->name = name;
  f->data = data;
  f->len = len;
  f->mode = (unsigned)st.st_mode & 07777;
  f->mtime = st.st_mtime;
  return 0;
too_large:
  err_sandbox(err, CODE_FILE_TOO_LARGE, "Build context file exceeds %d bytes: %s/%s", BUILD_CONTEXT_MAX_FILE_BYTES, dir,
              name);
fail:
  free(data);
  close(fd);
  return -1;
}

int build_context_read(const char *dir, char *const *names, size_t n, buf_t *archive, err_t *err) {
  if (n > BUILD_CONTEXT_MAX_FILES)
    return err_sandbox(err, CODE_INVALID_PATH, "A build context holds at most %d files (got %zu).",
                       BUILD_CONTEXT_MAX_FILES, n);
  for (size_t i = 0; i < n; i++)
    if (!build_context_name_ok(names[i]))
      return err_sandbox(err, CODE_INVALID_PATH, "Build context file name must be a plain file name: %s", names[i]);
  int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dfd < 0) {
    if (errno == ELOOP || errno == ENOTDIR) {
      struct stat st;
      if (lstat(dir, &st) == 0 && S_ISLNK(st.st_mode))
        return err_sandbox(err, CODE_INVALID_PATH, "Refusing to read through symlink: %s", dir);
    }
    return err_sandbox(err, CODE_INVALID_PATH, "Unable to open build context %s: %s", dir, strerror(errno));
  }
  build_file_t files[BUILD_CONTEXT_MAX_FILES];
  size_t got = 0;
  int rc = -1;
  for (; got < n; got++)
    if (read_file(dfd, dir, names[got], &files[got], err) != 0) goto done;
  rc = build_context_archive(files, n, archive, err);
done:
  for (size_t i = 0; i < got; i++) free((void *)files[i].data);
  close(dfd);
  return rc;
}

/* ---- the build --------------------------------------------------------------------- */

static void destroy(build_task_t *t) {
  sbx_timer_cancel(t->timer);
  stream_req_free(t->req);
  buf_free(&t->archive);
  buf_free(&t->out);
  build_stream_free(&t->parser);
  err_clear(&t->result);
  engine_unref(t->eng);
  free(t);
}

static void on_timer(void *ud);

static void schedule(build_task_t *t) {
  if (t->timer == NULL && !t->free_pending) t->timer = sbx_timer_start(engine_io(t->eng), 0, on_timer, t);
}

/* Hands the output out, resumes the reply, reports the end. Returns with t freed when
 * the reader freed it. From the loop only. */
static void flush(build_task_t *t) {
  while (t->out.len > 0) {
    buf_t chunk = t->out;
    buf_init(&t->out, BUILD_OUT_LIMIT);
    t->calling = 1;
    t->cbs.on_output(t->ud, chunk.data, chunk.len);
    t->calling = 0;
    buf_free(&chunk);
    if (t->free_pending) {
      destroy(t);
      return;
    }
  }
  if (t->paused && t->req != NULL) {
    t->paused = 0;
    stream_req_resume(t->req);
  }
  if (t->finished) {
    t->finished = 0;
    t->calling = 1;
    t->cbs.on_done(t->ud, err_is_set(&t->result) ? &t->result : NULL, t->parser.image_id);
    t->calling = 0;
    if (t->free_pending) destroy(t);
  }
}

static void on_timer(void *ud) {
  build_task_t *t = ud;
  t->timer = NULL;
  flush(t);
}

static size_t on_body(void *ud, uint8_t *buf, size_t max) {
  build_task_t *t = ud;
  size_t left = t->archive.len - t->sent;
  if (left == 0) {
    /* The docker CLI's line once the context is sent. */
    if (!t->body_sent && build_context_line(t->archive.len, &t->out) != 0) t->out_of_memory = 1;
    t->body_sent = 1;
    schedule(t);
    return 0;
  }
  size_t n = left < max ? left : max;
  memcpy(buf, t->archive.data + t->sent, n);
  t->sent += n;
  return n;
}

static int on_data(void *ud, const uint8_t *data, size_t len) {
  build_task_t *t = ud;
  if (t->parser.stopped || t->out_of_memory) return -1;
  if (t->out.len >= BUILD_OUT_HIGH) {
    t->paused = 1;
    schedule(t);
    return 1;
  }
  if (build_stream_feed(&t->parser, data, len, &t->out) != 0) t->out_of_memory = 1;
  schedule(t);
  return t->parser.stopped || t->out_of_memory ? -1 : 0;
}

static void on_done(void *ud, stream_req_t *r) {
  build_task_t *t = ud;
  t->req = NULL;
  if (!t->parser.stopped && !t->out_of_memory && stream_req_ok(r) && build_stream_finish(&t->parser, &t->out) != 0)
    t->out_of_memory = 1;
  if (t->out_of_memory) err_oom(&t->result);
  else if (build_stream_failure(&t->parser, &t->result) != 0) { /* the stream's own error */
  } else if (!stream_req_ok(r)) stream_req_error(r, &t->result);
  stream_req_free(r);
  t->finished = 1;
  sbx_timer_cancel(t->timer);
  t->timer = NULL;
  flush(t); /* from the loop: the output and the end go out now */
}

static const stream_req_cbs_t req_cbs = {.on_body = on_body, .on_data = on_data, .on_done = on_done};

build_task_t *build_task_start(engine_t *e, const char *image_tag, buf_t *archive, const build_task_cbs_t *cbs, void *ud,
                               err_t *err) {
  build_task_t *t = calloc(1, sizeof(*t));
  char *tag = url_escape(image_tag);
  if (t == NULL || tag == NULL) {
    free(t);
    free(tag);
    err_oom(err);
    return NULL;
  }
  t->eng = e;
  engine_ref(e);
  t->archive = *archive;
  buf_init(archive, archive->limit);
  buf_init(&t->out, BUILD_OUT_LIMIT);
  build_stream_init(&t->parser);
  err_init(&t->result);
  t->cbs = *cbs;
  t->ud = ud;
  /* What `docker build --tag <tag>` asks for (Docker CLI 28, classic builder); the
   * engine's defaults do the rest (rm: intermediate containers removed on success). */
  t->req = stream_req_new(e, "POST", "/build?dockerfile=Dockerfile&t=%s&version=1", tag);
  free(tag);
  if (t->req == NULL || stream_req_set_body(t->req, "application/x-tar") != 0) {
    err_oom(err);
    goto fail;
  }
  if (stream_req_start(t->req, &req_cbs, t, err) != 0) goto fail;
  return t;
fail:
  destroy(t);
  return NULL;
}

void build_task_free(build_task_t *t) {
  if (t == NULL) return;
  if (t->calling) {
    /* From the reader's callback: stop now, free when it returns. */
    t->free_pending = 1;
    sbx_timer_cancel(t->timer);
    t->timer = NULL;
    stream_req_free(t->req);
    t->req = NULL;
    return;
  }
  destroy(t);
}
