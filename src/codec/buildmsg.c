/*
 * buildmsg.c - the build context archive and the build message stream (see buildmsg.h).
 *
 * Owns: the jansson values of one message (parsed, rendered, released before the next),
 * and what build_stream_t owns (buildmsg.h). Nothing here does I/O.
 *
 * The rendering follows the docker CLI's display of a classic build's messages (Docker
 * CLI 28 renders them the same on a terminal and elsewhere: no progress bars), field by
 * field: an "aux" message is not shown (its ID is kept); an error ends the stream; a
 * progress update with something to count is skipped; otherwise a time prefix, "id: ",
 * "(from image) ", then the status and the old "progress" text, or the stream text as it
 * is, or the status and a newline. Fields of the wrong JSON type count as absent.
 */
#include "codec/buildmsg.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/tar.h"

typedef struct str {
  const char *p;
  size_t len;
} str_t;

static str_t field_str(json_t *o, const char *key) {
  json_t *v = json_object_get(o, key);
  str_t s = {"", 0};
  if (json_is_string(v)) {
    s.p = json_string_value(v);
    s.len = json_string_length(v);
  }
  return s;
}

static str_t literal(const char *text) { return (str_t){text, strlen(text)}; }

static int64_t field_int(json_t *o, const char *key) {
  json_t *v = json_object_get(o, key);
  return json_is_integer(v) ? (int64_t)json_integer_value(v) : 0;
}

/* ---- sizes ------------------------------------------------------------------------- */

void build_human_size(double size, char out[32]) {
  static const char *const units[] = {"B", "kB", "MB", "GB", "TB", "PB", "EB", "ZB", "YB"};
  size_t i = 0;
  while (size >= 1000.0 && i < sizeof(units) / sizeof(units[0]) - 1) {
    size /= 1000.0;
    i++;
  }
  snprintf(out, 32, "%.4g%s", size, units[i]);
}

int build_context_line(uint64_t bytes, buf_t *out) {
  char size[32];
  build_human_size((double)bytes, size);
  return buf_printf(out, "Sending build context to Docker daemon %8s\r\r\n", size);
}

/* ---- the context ------------------------------------------------------------------- */

int build_context_name_ok(const char *name) {
  return name != NULL && name[0] != '\0' && strchr(name, '/') == NULL && strcmp(name, ".") != 0 &&
         strcmp(name, "..") != 0;
}

int build_context_archive(const build_file_t *files, size_t n, buf_t *out, err_t *err) {
  if (n > BUILD_CONTEXT_MAX_FILES)
    return err_sandbox(err, CODE_INVALID_PATH, "A build context holds at most %d files (got %zu).",
                       BUILD_CONTEXT_MAX_FILES, n);
  tar_entry_spec_t *entries = calloc(n ? n : 1, sizeof(*entries));
  if (entries == NULL) return err_oom(err);
  int rc = -1;
  for (size_t i = 0; i < n; i++) {
    const build_file_t *f = &files[i];
    if (!build_context_name_ok(f->name)) {
      err_sandbox(err, CODE_INVALID_PATH, "Build context file name must be a plain file name: %s",
                  f->name ? f->name : "");
      goto done;
    }
    for (size_t k = 0; k < i; k++) {
      if (strcmp(files[k].name, f->name) == 0) {
        err_sandbox(err, CODE_INVALID_PATH, "Build context file is named twice: %s", f->name);
        goto done;
      }
    }
    if (f->len > BUILD_CONTEXT_MAX_FILE_BYTES) {
      err_sandbox(err, CODE_FILE_TOO_LARGE, "Build context file exceeds %d bytes: %s", BUILD_CONTEXT_MAX_FILE_BYTES,
                  f->name);
      goto done;
    }
    /* As the docker CLI sends a context: the file's mode and time, owned by root. */
    entries[i] = (tar_entry_spec_t){
        .path = f->name, .is_dir = 0, .data = f->data, .len = f->len, .mode = f->mode & 07777, .uid = 0, .gid = 0,
        .mtime = f->mtime};
  }
  rc = tar_build(entries, n, out, err);
done:
  free(entries);
  return rc;
}

/* ---- the stream -------------------------------------------------------------------- */

void build_stream_init(build_stream_t *s) {
  memset(s, 0, sizeof(*s));
  buf_init(&s->line, BUILD_MAX_LINE);
}

void build_stream_free(build_stream_t *s) {
  buf_free(&s->line);
  free(s->error);
  free(s->image_id);
  free(s->broken);
  s->error = s->image_id = s->broken = NULL;
}

static void stop_broken(build_stream_t *s, const char *why, const char *detail) {
  s->stopped = 1;
  free(s->broken);
  size_t n = strlen(why) + (detail ? strlen(detail) : 0) + 1;
  s->broken = malloc(n);
  if (s->broken) snprintf(s->broken, n, "%s%s", why, detail ? detail : "");
}

static void stop_overlong(build_stream_t *s) {
  char why[96];
  snprintf(why, sizeof(why), "Docker engine sent a build message over %d bytes.", BUILD_MAX_LINE);
  stop_broken(s, why, NULL);
}

/* Go's RFC3339NanoFixed in local time: "2006-01-02T15:04:05.000000000Z07:00". */
static int put_time(buf_t *out, int64_t sec, int64_t nsec) {
  time_t t = (time_t)sec;
  struct tm tm;
  if (localtime_r(&t, &tm) == NULL) return 0;
  int rc = buf_printf(out, "%04d-%02d-%02dT%02d:%02d:%02d.%09lld", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                      tm.tm_hour, tm.tm_min, tm.tm_sec, (long long)nsec);
  long off = tm.tm_gmtoff;
  if (off == 0) return rc | buf_append_str(out, "Z ");
  char sign = off < 0 ? '-' : '+';
  if (off < 0) off = -off;
  return rc | buf_printf(out, "%c%02ld:%02ld ", sign, off / 3600, (off / 60) % 60);
}

static void set_error(build_stream_t *s, const char *text, size_t len, int code) {
  s->stopped = 1;
  s->error_code = code;
  free(s->error);
  s->error = malloc(len + 1);
  if (s->error) {
    memcpy(s->error, text, len);
    s->error[len] = '\0';
  }
}

static int render(build_stream_t *s, json_t *m, buf_t *out) {
  json_t *aux = json_object_get(m, "aux");
  if (aux != NULL && !json_is_null(aux)) {
    str_t id = field_str(aux, "ID");
    if (id.len > 0 && id.len <= BUILD_MAX_IMAGE_ID && memchr(id.p, '\0', id.len) == NULL) {
      free(s->image_id);
      s->image_id = strdup(id.p);
      if (s->image_id == NULL) return -1;
    }
    return 0;
  }
  json_t *detail = json_object_get(m, "errorDetail");
  str_t error = field_str(m, "error");
  if (detail != NULL && !json_is_null(detail)) {
    str_t message = field_str(detail, "message");
    if (message.len == 0) message = error;
    if (message.len == 0) message = literal("The engine reported an error without a message.");
    set_error(s, message.p, message.len, (int)field_int(detail, "code"));
    return s->error == NULL ? -1 : 0;
  }
  /* The docker CLI shows an "error" without "errorDetail" as an empty line and goes on;
   * an error is an error: the build fails. */
  if (error.len > 0) {
    set_error(s, error.p, error.len, 0);
    return s->error == NULL ? -1 : 0;
  }

  /* A progress update is not shown, unless it has nothing to count (as the docker CLI
   * measures it: neither a current nor a total above zero). */
  json_t *pd = json_object_get(m, "progressDetail");
  if (json_is_object(pd) && (field_int(pd, "current") > 0 || field_int(pd, "total") > 0)) return 0;
  str_t stream = field_str(m, "stream"), status = field_str(m, "status"), id = field_str(m, "id");
  str_t from = field_str(m, "from"), progress = field_str(m, "progress");
  int64_t when_ns = field_int(m, "timeNano"), when = field_int(m, "time");
  int rc = 0;
  if (when_ns != 0) {
    int64_t sec = when_ns / 1000000000, nsec = when_ns % 1000000000;
    if (nsec < 0) {
      nsec += 1000000000;
      sec -= 1;
    }
    rc |= put_time(out, sec, nsec);
  } else if (when != 0) {
    rc |= put_time(out, when, 0);
  }
  if (id.len > 0) rc |= buf_append(out, id.p, id.len) | buf_append_str(out, ": ");
  if (from.len > 0) rc |= buf_append_str(out, "(from ") | buf_append(out, from.p, from.len) | buf_append_str(out, ") ");
  if (progress.len > 0) /* the old "progress" text, with no line end */
    rc |= buf_append(out, status.p, status.len) | buf_append_str(out, " ") | buf_append(out, progress.p, progress.len);
  else if (stream.len > 0)
    rc |= buf_append(out, stream.p, stream.len);
  else
    rc |= buf_append(out, status.p, status.len) | buf_append_str(out, "\n");
  return rc ? -1 : 0;
}

/* One line of the reply: zero or more JSON messages (whitespace between them). */
static int take_line(build_stream_t *s, const char *text, size_t len, buf_t *out) {
  size_t off = 0;
  while (off < len && !s->stopped) {
    char c = text[off];
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
      off++;
      continue;
    }
    json_error_t je;
    json_t *m = json_loadb(text + off, len - off, JSON_DISABLE_EOF_CHECK | JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
    if (m == NULL) {
      stop_broken(s, "Docker engine sent a malformed build message: ", je.text);
      return 0;
    }
    size_t used = je.position > 0 && (size_t)je.position <= len - off ? (size_t)je.position : len - off;
    off += used;
    if (!json_is_object(m)) {
      json_decref(m);
      stop_broken(s, "Docker engine sent a build message that is not a JSON object.", NULL);
      return 0;
    }
    int rc = render(s, m, out);
    json_decref(m);
    if (rc != 0) return -1;
  }
  return 0;
}

int build_stream_feed(build_stream_t *s, const uint8_t *data, size_t len, buf_t *out) {
  size_t start = 0;
  for (size_t i = 0; i < len && !s->stopped; i++) {
    if (data[i] != '\n') continue;
    int rc;
    if (s->line.len > 0) {
      if (buf_append(&s->line, data + start, i - start) != 0) {
        stop_overlong(s);
        return 0;
      }
      rc = take_line(s, (const char *)s->line.data, s->line.len, out);
      buf_reset(&s->line);
    } else {
      if (i - start > BUILD_MAX_LINE) {
        stop_overlong(s);
        return 0;
      }
      rc = take_line(s, (const char *)data + start, i - start, out);
    }
    if (rc != 0) return -1;
    start = i + 1;
  }
  if (!s->stopped && start < len && buf_append(&s->line, data + start, len - start) != 0) {
    buf_reset(&s->line);
    stop_overlong(s);
  }
  return 0;
}

int build_stream_finish(build_stream_t *s, buf_t *out) {
  int rc = 0;
  if (!s->stopped && s->line.len > 0) rc = take_line(s, (const char *)s->line.data, s->line.len, out);
  buf_reset(&s->line);
  return rc;
}

int build_stream_failure(const build_stream_t *s, err_t *err) {
  if (s->error != NULL) {
    err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, "%s", s->error);
    if (s->error_code != 0) err_set_details(err, json_pack("{s:i}", "code", s->error_code));
    return -1;
  }
  if (s->broken != NULL) return err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, "%s", s->broken);
  if (s->stopped) return err_oom(err); /* a message could not be kept */
  return 0;
}
