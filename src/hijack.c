/*
 * hijack.c - upgraded exec connections (see hijack.h).
 */
#include "hijack.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "frames.h"
#include "tlsconn.h"
#include "trace.h"

#define MAX_HEAD_BYTES (16 * 1024)
#define MAX_ERROR_BODY (64 * 1024)
#define READ_BUFFER_BYTES (64 * 1024)

typedef struct pending_write {
  uv_write_t req;
  struct pending_write *next;
  size_t len;
  uint8_t data[];
} pending_write_t;

/* H_TLS: the TLS handshake, on a tcp endpoint with TLS only. */
enum { H_WAIT_ENGINE = 1, H_RESOLVING, H_CONNECTING, H_TLS, H_HEAD, H_STREAM, H_ERROR_BODY, H_DONE };

struct hijack {
  engine_t *eng;
  addon_t *addon; /* for counting our libuv handles */
  engine_waiter_t waiter;
  union {
    uv_pipe_t pipe;
    uv_tcp_t tcp;
  } handle;
  int handle_open;
  uv_connect_t connect_req;
  uv_getaddrinfo_t gai;
  int gai_pending;
  uv_write_t head_write;
  uv_shutdown_t shutdown_req;
  char *request;
  size_t request_len;
  pending_write_t *queue; /* not yet handed to libuv */
  pending_write_t **queue_tail;
  int writes_in_flight;
  int stdin_end_requested;
  int stdin_ended;
  int state;
  int closing;
  int paused;
  int reading;
  long status;
  long content_length;
  int chunked;
  buf_t head;
  buf_t error_body;
  frame_demux_t demux;
  tls_conn_t *tls;    /* TLS endpoints: the session the bytes go through */
  uint8_t *plainbuf;  /* TLS endpoints: decrypted bytes, READ_BUFFER_BYTES */
  hijack_callbacks_t cbs;
  void *ud;
  uint8_t readbuf[READ_BUFFER_BYTES];
};

static void h_free(hijack_t *h) {
  pending_write_t *w = h->queue;
  while (w) {
    pending_write_t *next = w->next;
    free(w);
    w = next;
  }
  free(h->request);
  tls_conn_free(h->tls);
  free(h->plainbuf);
  buf_free(&h->head);
  buf_free(&h->error_body);
  engine_unref(h->eng);
  free(h);
}

static void on_handle_closed(uv_handle_t *handle) {
  hijack_t *h = handle->data;
  addon_t *a = h->addon;
  h->handle_open = 0;
  /* A getaddrinfo still running keeps the struct alive until its callback. */
  if (!h->gai_pending) h_free(h);
  addon_handle_closed(a);
}

void hijack_close(hijack_t *h) {
  if (h == NULL || h->closing) return;
  h->closing = 1;
  h->state = H_DONE;
  if (h->waiter.queued) engine_cancel_wait(h->eng, &h->waiter);
  if (h->gai_pending) uv_cancel((uv_req_t *)&h->gai);
  if (h->handle_open) {
    uv_close((uv_handle_t *)&h->handle, on_handle_closed);
  } else if (!h->gai_pending) {
    h_free(h);
  }
}

/* Reports the end once; afterwards the caller is expected to close. */
static void finish(hijack_t *h, err_t *err) {
  if (h->closing || h->state == H_DONE) return;
  h->state = H_DONE;
  if (h->reading) {
    uv_read_stop((uv_stream_t *)&h->handle);
    h->reading = 0;
  }
  h->cbs.on_end(h->ud, err);
}

static void fail_with(hijack_t *h, const char *code, const char *fmt, const char *arg) {
  err_t err;
  err_init(&err);
  err_sandbox(&err, code, fmt, arg);
  finish(h, &err);
  err_clear(&err);
}

/* ---- stdin ---- */

static void pump_writes(hijack_t *h);

static void on_stdin_written(uv_write_t *req, int status) {
  pending_write_t *w = (pending_write_t *)req;
  hijack_t *h = req->data;
  free(w);
  h->writes_in_flight--;
  /* A command that exits without reading its input closes the stream under us:
   * EPIPE/ECONNRESET here is not an error of the exec; the read side reports the end. */
  (void)status;
  if (!h->closing) pump_writes(h);
}

static void on_shutdown(uv_shutdown_t *req, int status) {
  (void)req;
  (void)status;
}

/* TLS: hands the ciphertext the session produced to libuv, in order with every other
 * write. 0, or -1 when it cannot (the connection is failing; the read side reports it). */
static int send_cipher(hijack_t *h) {
  size_t n;
  while (h->tls != NULL && (n = tls_conn_pending(h->tls)) > 0) {
    pending_write_t *w = malloc(sizeof(*w) + n);
    if (w == NULL) return -1;
    w->next = NULL;
    w->len = tls_conn_take(h->tls, w->data, n);
    w->req.data = h;
    uv_buf_t b = uv_buf_init((char *)w->data, (unsigned int)w->len);
    if (w->len == 0 || uv_write(&w->req, (uv_stream_t *)&h->handle, &b, 1, on_stdin_written) != 0) {
      free(w);
      return -1;
    }
    h->writes_in_flight++;
  }
  return 0;
}

/* TLS: encrypts the queued stdin and the end of it (close_notify before the half-close). */
static void pump_tls_writes(hijack_t *h) {
  while (h->queue) {
    pending_write_t *w = h->queue;
    h->queue = w->next;
    if (h->queue == NULL) h->queue_tail = &h->queue;
    err_t err;
    err_init(&err);
    int rc = tls_conn_write(h->tls, w->data, w->len, &err);
    free(w);
    if (rc != 0 || send_cipher(h) != 0) {
      if (rc != 0) finish(h, &err);
      else fail_with(h, CODE_DOCKER_COMMAND_FAILED, "Docker engine connection failed during an exec%s.", "");
      err_clear(&err);
      return;
    }
    err_clear(&err);
  }
  if (h->stdin_end_requested && !h->stdin_ended) {
    h->stdin_ended = 1;
    tls_conn_close_notify(h->tls);
    (void)send_cipher(h);
    h->shutdown_req.data = h;
    uv_shutdown(&h->shutdown_req, (uv_stream_t *)&h->handle, on_shutdown);
  }
}

static void pump_writes(hijack_t *h) {
  if (h->closing || h->state < H_STREAM || h->state == H_DONE) return;
  if (h->tls != NULL) {
    pump_tls_writes(h);
    return;
  }
  while (h->queue) {
    pending_write_t *w = h->queue;
    h->queue = w->next;
    if (h->queue == NULL) h->queue_tail = &h->queue;
    w->req.data = h;
    uv_buf_t b = uv_buf_init((char *)w->data, (unsigned int)w->len);
    if (uv_write(&w->req, (uv_stream_t *)&h->handle, &b, 1, on_stdin_written) != 0) {
      free(w);
      continue;
    }
    h->writes_in_flight++;
  }
  if (h->stdin_end_requested && !h->stdin_ended) {
    h->stdin_ended = 1;
    h->shutdown_req.data = h;
    uv_shutdown(&h->shutdown_req, (uv_stream_t *)&h->handle, on_shutdown);
  }
}

int hijack_write(hijack_t *h, const uint8_t *data, size_t len) {
  if (h->closing || h->stdin_end_requested) return -1;
  size_t off = 0;
  /* Chunks bound each write's size (libuv buffers lengths in unsigned int). */
  while (off < len || len == 0) {
    size_t n = len - off;
    if (n > (1u << 30)) n = 1u << 30;
    pending_write_t *w = malloc(sizeof(*w) + (n ? n : 1));
    if (w == NULL) return -1;
    w->next = NULL;
    w->len = n;
    if (n) memcpy(w->data, data + off, n);
    *h->queue_tail = w;
    h->queue_tail = &w->next;
    off += n;
    if (len == 0) break;
  }
  pump_writes(h);
  return 0;
}

void hijack_end_stdin(hijack_t *h) {
  if (h->closing) return;
  h->stdin_end_requested = 1;
  pump_writes(h);
}

/* ---- reading ---- */

static void on_alloc(uv_handle_t *handle, size_t suggested, uv_buf_t *buf) {
  (void)suggested;
  hijack_t *h = handle->data;
  *buf = uv_buf_init((char *)h->readbuf, sizeof(h->readbuf));
}

static int on_frame(void *ud, int stream, const uint8_t *data, size_t len) {
  hijack_t *h = ud;
  h->cbs.on_data(h->ud, stream, data, len);
  return h->closing ? 1 : 0;
}

static void feed_stream(hijack_t *h, const uint8_t *data, size_t len) {
  err_t err;
  err_init(&err);
  size_t consumed = 0;
  int rc = frame_demux_feed(&h->demux, data, len, &consumed, on_frame, h, &err);
  if (rc < 0) {
    finish(h, &err);
  }
  err_clear(&err);
}

static void start_stream(hijack_t *h, const uint8_t *rest, size_t rest_len) {
  h->state = H_STREAM;
  pump_writes(h);
  if (rest_len > 0) feed_stream(h, rest, rest_len);
}

/* The value of a header in the head (up to the end of its line), or NULL. */
static const char *header_value(const char *head, const char *name, size_t *len) {
  size_t n = strlen(name);
  for (const char *p = strstr(head, "\r\n"); p != NULL; p = strstr(p + 2, "\r\n")) {
    const char *line = p + 2;
    if (strncasecmp(line, name, n) == 0 && line[n] == ':') {
      const char *v = line + n + 1;
      while (*v == ' ' || *v == '\t') v++;
      const char *e = strstr(v, "\r\n");
      *len = e ? (size_t)(e - v) : strlen(v);
      return v;
    }
  }
  return NULL;
}

static long header_value_long(const char *head, const char *name) {
  size_t n = strlen(name);
  for (const char *p = strstr(head, "\r\n"); p != NULL; p = strstr(p + 2, "\r\n")) {
    const char *line = p + 2;
    if (strncasecmp(line, name, n) == 0 && line[n] == ':') return strtol(line + n + 1, NULL, 10);
  }
  return -1;
}

/*
 * Decodes a complete chunked body in place. Returns 1 when the last chunk was seen, 0 when
 * more bytes are needed, -1 when the framing is broken.
 */
static int hex_value(uint8_t c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

static int dechunk(const buf_t *in, buf_t *out) {
  size_t i = 0;
  buf_reset(out);
  for (;;) {
    /* The size line: hex digits, then an optional extension, then CRLF. Parsed by hand:
     * strtoul would skip white space (CR and LF included) into the following lines. */
    size_t size = 0, digits = 0;
    while (i < in->len && hex_value(in->data[i]) >= 0) {
      size = size * 16 + (size_t)hex_value(in->data[i]);
      if (size > MAX_ERROR_BODY) return -1;
      i++;
      digits++;
    }
    if (i >= in->len) return 0;
    if (digits == 0) return -1;
    while (i < in->len && in->data[i] != '\r' && in->data[i] != '\n') i++; /* extension */
    if (i + 1 >= in->len) return 0;
    if (in->data[i] != '\r' || in->data[i + 1] != '\n') return -1;
    i += 2;
    if (size == 0) return 1;
    if (in->len - i < size + 2) return 0;
    if (in->data[i + size] != '\r' || in->data[i + size + 1] != '\n') return -1;
    if (buf_append(out, in->data + i, size) != 0) return -1;
    i += size + 2;
  }
}

static void engine_error(hijack_t *h) {
  char *msg = NULL;
  if (h->chunked) {
    buf_t body;
    buf_init(&body, MAX_ERROR_BODY);
    dechunk(&h->error_body, &body);
    buf_free(&h->error_body);
    h->error_body = body;
  }
  json_t *j = json_loadb((const char *)(h->error_body.data ? h->error_body.data : (uint8_t *)""), h->error_body.len, 0, NULL);
  json_t *m = json_object_get(j, "message");
  if (json_is_string(m)) msg = strdup(json_string_value(m));
  else msg = strndup((const char *)(h->error_body.data ? h->error_body.data : (uint8_t *)""), h->error_body.len > 1024 ? 1024 : h->error_body.len);
  json_decref(j);
  err_t err;
  err_init(&err);
  err_sandbox(&err, CODE_DOCKER_COMMAND_FAILED, "Docker engine refused to start the exec (%ld): %s", h->status, msg ? msg : "");
  err_set_details(&err, json_pack("{s:I, s:s, s:s, s:s}", "statusCode", (json_int_t)h->status, "message", msg ? msg : "",
                                  "method", "POST", "path", "/exec/start"));
  free(msg);
  finish(h, &err);
  err_clear(&err);
}

/* Keeps the error body, up to its Content-Length (bytes after it are not part of it). */
static void append_error_body(hijack_t *h, const uint8_t *data, size_t len) {
  size_t room = MAX_ERROR_BODY - h->error_body.len;
  if (!h->chunked && h->content_length >= 0) {
    size_t want = (size_t)h->content_length > h->error_body.len ? (size_t)h->content_length - h->error_body.len : 0;
    if (want < room) room = want;
  }
  buf_append(&h->error_body, data, len < room ? len : room);
}

/* The error body is complete when its length is reached, or its last chunk has come. */
static int error_body_complete(hijack_t *h) {
  if (h->error_body.len >= MAX_ERROR_BODY) return 1;
  if (h->chunked) {
    buf_t scratch;
    buf_init(&scratch, MAX_ERROR_BODY);
    int rc = dechunk(&h->error_body, &scratch);
    buf_free(&scratch);
    return rc != 0;
  }
  return h->content_length >= 0 && h->error_body.len >= (size_t)h->content_length;
}

/*
 * Called with the head buffer holding everything read so far (bounded), plus `extra`:
 * bytes of the same read that did not go into the head buffer. Once the blank line is
 * found, whatever follows it belongs to the stream (or to the error body).
 */
static void parse_head(hijack_t *h, const uint8_t *extra, size_t extra_len) {
  char *head = (char *)h->head.data;
  char *end = strstr(head, "\r\n\r\n");
  if (end == NULL) {
    if (h->head.len >= MAX_HEAD_BYTES)
      fail_with(h, CODE_DOCKER_COMMAND_FAILED, "Docker engine sent an oversized response head%s.", "");
    return;
  }
  size_t head_len = (size_t)(end - head) + 4;
  int major = 0, minor = 0;
  long status = 0;
  char *line_end = strstr(head, "\r\n");
  int consumed = 0;
  if (line_end == NULL || line_end - head > 256 ||
      sscanf(head, "HTTP/%d.%d %3ld%n", &major, &minor, &status, &consumed) != 3 || head + consumed > line_end ||
      status < 100 || status > 599) {
    fail_with(h, CODE_DOCKER_COMMAND_FAILED, "Docker engine sent a malformed response to exec start%s.", "");
    return;
  }
  h->status = status;
  trace_event("exec start -> %ld", status);
  /* Everything after the head: the rest of the head buffer, then the extra bytes. */
  buf_t rest;
  buf_init(&rest, 0);
  if (buf_append(&rest, h->head.data + head_len, h->head.len - head_len) != 0 ||
      buf_append(&rest, extra, extra_len) != 0) {
    buf_free(&rest);
    fail_with(h, CODE_DOCKER_COMMAND_FAILED, "Out of memory%s.", "");
    return;
  }
  /* From here on, header lookups see the head only, never the bytes after it. */
  h->head.data[head_len - 2] = 0;
  size_t ctype_len = 0;
  const char *ctype = header_value(head, "Content-Type", &ctype_len);
  int json_reply = ctype != NULL && ctype_len >= 16 && strncasecmp(ctype, "application/json", 16) == 0;
  size_t te_len = 0;
  const char *te = header_value(head, "Transfer-Encoding", &te_len);
  h->chunked = te != NULL && te_len >= 7 && strncasecmp(te, "chunked", 7) == 0;
  if (status == 101 || (status == 200 && !json_reply)) {
    /* 101, or 200 from older engines that still hijack: the stream starts here. */
    buf_free(&h->head);
    start_stream(h, rest.data, rest.len);
    buf_free(&rest);
    return;
  }
  h->content_length = header_value_long(head, "Content-Length");
  h->state = H_ERROR_BODY;
  buf_free(&h->error_body);
  buf_init(&h->error_body, MAX_ERROR_BODY);
  append_error_body(h, rest.data, rest.len);
  buf_free(&rest);
  buf_free(&h->head);
  if (error_body_complete(h)) engine_error(h);
}

/* The connection ended (nread < 0), or the TLS peer sent close_notify (UV_EOF). */
static void on_input_end(hijack_t *h, ssize_t nread) {
  if (h->state == H_STREAM) {
    if (nread == UV_EOF) {
      trace_event("exec stream end");
      err_t err;
      err_init(&err);
      if (frame_demux_finish(&h->demux, &err) == 0) finish(h, NULL);
      else finish(h, &err);
      err_clear(&err);
    } else {
      fail_with(h, CODE_DOCKER_COMMAND_FAILED, "Docker engine connection failed during an exec: %s", uv_strerror((int)nread));
    }
  } else if (h->state == H_ERROR_BODY) {
    engine_error(h);
  } else if (h->state == H_TLS) {
    fail_with(h, CODE_DOCKER_UNAVAILABLE, "Docker engine closed the connection during the TLS handshake%s.", "");
  } else {
    fail_with(h, CODE_DOCKER_COMMAND_FAILED, "Docker engine closed the connection before answering exec start%s.", "");
  }
}

/* Plain bytes of the HTTP exchange: the response head, then the stream or an error body. */
static void on_bytes(hijack_t *h, const uint8_t *data, size_t len) {
  switch (h->state) {
    case H_HEAD: {
      /* Only the head goes into the head buffer (bounded); output read along with it is
       * handed over with it. */
      size_t room = MAX_HEAD_BYTES - h->head.len;
      size_t take = len < room ? len : room;
      if (buf_append(&h->head, data, take) != 0) {
        fail_with(h, CODE_DOCKER_COMMAND_FAILED, "Docker engine sent an oversized response head%s.", "");
        return;
      }
      buf_terminate(&h->head);
      parse_head(h, data + take, len - take);
      break;
    }
    case H_STREAM:
      feed_stream(h, data, len);
      break;
    case H_ERROR_BODY:
      append_error_body(h, data, len);
      if (error_body_complete(h)) engine_error(h);
      break;
    default:
      break;
  }
}

static int live(const hijack_t *h) {
  return !h->closing && h->state != H_DONE;
}

/* TLS: ciphertext in; the handshake, then the request, then decrypted bytes out. */
static void on_cipher(hijack_t *h, const uint8_t *data, size_t len) {
  err_t err;
  err_init(&err);
  if (tls_conn_feed(h->tls, data, len) != 0) {
    fail_with(h, CODE_DOCKER_COMMAND_FAILED, "Out of memory%s.", "");
    goto done;
  }
  if (h->state == H_TLS) {
    int rc = tls_conn_handshake(h->tls, &err);
    if (rc < 0) {
      finish(h, &err);
      goto done;
    }
    if (rc == 0) {
      (void)send_cipher(h);
      goto done;
    }
    trace_event("exec TLS handshake done");
    h->state = H_HEAD;
    if (tls_conn_write(h->tls, (const uint8_t *)h->request, h->request_len, &err) != 0) {
      finish(h, &err);
      goto done;
    }
  }
  while (live(h)) {
    ssize_t n = tls_conn_read(h->tls, h->plainbuf, READ_BUFFER_BYTES, &err);
    if (n == 0) break;
    if (n == TLS_CONN_EOF) {
      on_input_end(h, UV_EOF);
    } else if (n < 0) {
      finish(h, &err);
    } else {
      on_bytes(h, h->plainbuf, (size_t)n);
      continue;
    }
    break;
  }
  if (live(h) && send_cipher(h) != 0)
    fail_with(h, CODE_DOCKER_COMMAND_FAILED, "Docker engine connection failed during an exec%s.", "");
done:
  err_clear(&err);
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf) {
  hijack_t *h = stream->data;
  if (h->closing) return;
  if (nread < 0) {
    on_input_end(h, nread);
    return;
  }
  if (nread == 0) return;
  if (h->tls != NULL) on_cipher(h, (const uint8_t *)buf->base, (size_t)nread);
  else on_bytes(h, (const uint8_t *)buf->base, (size_t)nread);
}

static void start_reading(hijack_t *h) {
  if (h->reading || h->paused || h->closing || h->state == H_DONE) return;
  if (uv_read_start((uv_stream_t *)&h->handle, on_alloc, on_read) == 0) h->reading = 1;
}

void hijack_pause(hijack_t *h) {
  if (h == NULL || h->paused) return;
  h->paused = 1;
  if (h->reading && h->state == H_STREAM) {
    uv_read_stop((uv_stream_t *)&h->handle);
    h->reading = 0;
  }
}

void hijack_resume(hijack_t *h) {
  if (h == NULL || !h->paused) return;
  h->paused = 0;
  if (h->handle_open && h->state >= H_HEAD) start_reading(h);
}

/* ---- connecting ---- */

/* The handshake and the response head are read whatever a consumer asked: pausing
 * applies to the stream only. */
static void read_now(hijack_t *h) {
  if (!h->reading && uv_read_start((uv_stream_t *)&h->handle, on_alloc, on_read) == 0) h->reading = 1;
}

static void on_head_written(uv_write_t *req, int status) {
  hijack_t *h = req->data;
  if (h->closing) return;
  if (status < 0) fail_with(h, CODE_DOCKER_COMMAND_FAILED, "Docker engine connection failed during an exec: %s", uv_strerror(status));
}

static void on_connected(uv_connect_t *req, int status) {
  hijack_t *h = req->data;
  if (h->closing) return;
  if (status < 0) {
    engine_reset(h->eng);
    err_t err;
    err_init(&err);
    err_sandbox(&err, CODE_DOCKER_UNAVAILABLE, "Docker engine is not reachable at %s: %s", engine_display(h->eng), uv_strerror(status));
    finish(h, &err);
    err_clear(&err);
    return;
  }
  trace_event("exec connection open");
  buf_init(&h->head, MAX_HEAD_BYTES);
  if (h->tls != NULL) {
    /* The request goes out encrypted once the handshake is done (on_cipher). */
    h->state = H_TLS;
    err_t err;
    err_init(&err);
    if (tls_conn_handshake(h->tls, &err) < 0) {
      finish(h, &err);
      err_clear(&err);
      return;
    }
    err_clear(&err);
    if (send_cipher(h) != 0) {
      fail_with(h, CODE_DOCKER_COMMAND_FAILED, "Docker engine connection failed during an exec%s.", "");
      return;
    }
    read_now(h);
    return;
  }
  h->state = H_HEAD;
  h->head_write.data = h;
  uv_buf_t b = uv_buf_init(h->request, (unsigned int)h->request_len);
  if (uv_write(&h->head_write, (uv_stream_t *)&h->handle, &b, 1, on_head_written) != 0) {
    fail_with(h, CODE_DOCKER_COMMAND_FAILED, "Docker engine connection failed during an exec%s.", "");
    return;
  }
  read_now(h);
}

static void on_resolved(uv_getaddrinfo_t *req, int status, struct addrinfo *res) {
  hijack_t *h = req->data;
  addon_t *a = h->addon;
  h->gai_pending = 0;
  if (h->closing) {
    if (res) uv_freeaddrinfo(res);
    if (!h->handle_open) h_free(h);
    addon_handle_closed(a);
    return;
  }
  addon_handle_closed(a);
  if (status < 0 || res == NULL) {
    if (res) uv_freeaddrinfo(res);
    err_t err;
    err_init(&err);
    err_sandbox(&err, CODE_DOCKER_UNAVAILABLE, "Docker engine is not reachable at %s: %s", engine_display(h->eng),
                uv_strerror(status < 0 ? status : UV_EAI_NONAME));
    finish(h, &err);
    err_clear(&err);
    return;
  }
  if (uv_tcp_init(engine_uv(h->eng), &h->handle.tcp) != 0) {
    uv_freeaddrinfo(res);
    fail_with(h, CODE_DOCKER_COMMAND_FAILED, "Cannot open a connection to the Docker engine%s.", "");
    return;
  }
  h->handle.tcp.data = h;
  h->handle_open = 1;
  addon_handle_opened(h->addon);
  uv_tcp_nodelay(&h->handle.tcp, 1);
  h->state = H_CONNECTING;
  h->connect_req.data = h;
  int rc = uv_tcp_connect(&h->connect_req, &h->handle.tcp, res->ai_addr, on_connected);
  uv_freeaddrinfo(res);
  if (rc != 0) on_connected(&h->connect_req, rc);
}

/* Opens the connection. Returns 0, or -1 with err set (nothing has been called). */
static int connect_now(hijack_t *h, err_t *err) {
  const endpoint_t *ep = engine_endpoint(h->eng);
  if (ep->tls && h->tls == NULL) {
    /* Certificates load before any connection is made, so a bad path fails fast. */
    tls_ctx_t *ctx = engine_tls_ctx(h->eng, err);
    if (ctx == NULL) return -1;
    h->tls = tls_conn_new(ctx, ep, engine_display(h->eng), err);
    if (h->tls == NULL) return -1;
    h->plainbuf = malloc(READ_BUFFER_BYTES);
    if (h->plainbuf == NULL) return err_oom(err);
  }
  /* The request, now that the API version is known. */
  buf_t r;
  buf_init(&r, 0);
  const char *body = "{\"Detach\":false,\"Tty\":false}";
  int rc = buf_printf(&r,
                      "POST /v%s/exec/%s/start HTTP/1.1\r\nHost: %s\r\nUser-Agent: anvia-sandbox\r\n"
                      "Content-Type: application/json\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n"
                      "Content-Length: %zu\r\n\r\n%s",
                      engine_api_version(h->eng), (char *)h->request, ep->kind == EP_UNIX ? "localhost" : ep->host,
                      strlen(body), body);
  if (rc != 0) {
    buf_free(&r);
    return err_oom(err);
  }
  free(h->request);
  h->request = (char *)buf_steal(&r, &h->request_len);
  if (ep->kind == EP_UNIX) {
    if (uv_pipe_init(engine_uv(h->eng), &h->handle.pipe, 0) != 0)
      return err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, "Cannot open a connection to the Docker engine.");
    h->handle.pipe.data = h;
    h->handle_open = 1;
    addon_handle_opened(h->addon);
    h->state = H_CONNECTING;
    h->connect_req.data = h;
    uv_pipe_connect(&h->connect_req, &h->handle.pipe, ep->unix_path, on_connected);
    return 0;
  }
  char port[16];
  snprintf(port, sizeof(port), "%d", ep->port);
  struct addrinfo hints;
  memset(&hints, 0, sizeof(hints));
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  h->state = H_RESOLVING;
  h->gai.data = h;
  h->gai_pending = 1;
  addon_handle_opened(h->addon);
  if (uv_getaddrinfo(engine_uv(h->eng), &h->gai, on_resolved, ep->host, port, &hints) != 0) {
    h->gai_pending = 0;
    addon_handle_closed(h->addon);
    return err_sandbox(err, CODE_DOCKER_UNAVAILABLE, "Docker engine host cannot be resolved: %s", ep->host);
  }
  return 0;
}

static void on_engine_ready(engine_waiter_t *w, const err_t *err) {
  hijack_t *h = (hijack_t *)((char *)w - offsetof(hijack_t, waiter));
  if (err != NULL) {
    err_t copy;
    err_init(&copy);
    err_set(&copy, err->kind, err->code, "%s", err->message);
    if (err->details) err_set_details(&copy, json_deep_copy(err->details));
    finish(h, &copy);
    err_clear(&copy);
    return;
  }
  err_t e;
  err_init(&e);
  if (connect_now(h, &e) != 0) finish(h, &e);
  err_clear(&e);
}

hijack_t *hijack_start(engine_t *eng, const char *exec_id, const hijack_callbacks_t *cbs, void *ud, err_t *err) {
  hijack_t *h = calloc(1, sizeof(*h));
  if (h == NULL) {
    err_oom(err);
    return NULL;
  }
  h->eng = eng;
  engine_ref(eng);
  h->addon = engine_addon(eng);
  if (h->addon->closing) {
    free(h);
    engine_unref(eng);
    err_sandbox(err, CODE_INVALID_STATE, "The addon is shutting down.");
    return NULL;
  }
  h->cbs = *cbs;
  h->ud = ud;
  h->queue_tail = &h->queue;
  h->content_length = -1;
  frame_demux_init(&h->demux);
  buf_init(&h->head, MAX_HEAD_BYTES);
  buf_init(&h->error_body, MAX_ERROR_BODY);
  /* Until the version is known, `request` holds the escaped exec id. */
  h->request = url_escape(exec_id);
  if (h->request == NULL) {
    h_free(h);
    err_oom(err);
    return NULL;
  }
  h->waiter.fn = on_engine_ready;
  h->state = H_WAIT_ENGINE;
  int rc = engine_when_ready(eng, &h->waiter, err);
  if (rc < 0) {
    h_free(h);
    return NULL;
  }
  if (rc == 1 && connect_now(h, err) != 0) {
    hijack_close(h);
    return NULL;
  }
  return h;
}
