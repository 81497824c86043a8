/*
 * hijack.c - upgraded exec connections (see hijack.h).
 */
#include "engine/hijack.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codec/execreply.h"
#include "engine/sshconn.h"
#include "engine/tlsconn.h"
#include "base/trace.h"

#define READ_BUFFER_BYTES (64 * 1024)

typedef struct pending_write {
  uv_write_t req;
  struct pending_write *next;
  size_t len;
  uint8_t data[];
} pending_write_t;

/* H_TLS: the TLS handshake, on a tcp endpoint with TLS only. H_REPLY: the request is
 * sent; the reply is read (codec/execreply.h says which part of it). */
enum { H_WAIT_ENGINE = 1, H_RESOLVING, H_CONNECTING, H_TLS, H_REPLY, H_DONE };

struct hijack {
  engine_t *eng;
  io_t *io; /* for counting our libuv handles */
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
  size_t queued; /* bytes of every pending_write_t allocated and not freed (hijack_queued) */
  int stdin_end_requested;
  int stdin_ended;
  int state;
  int closing;
  int paused;
  int reading;
  int unref; /* the handle does not keep the loop alive (hijack_set_ref) */
  int reset; /* the stream ended with a reset rather than an end of file */
  int tty;   /* a Tty exec: raw stream (hijack_start) */
  ssh_conn_t *ssh;          /* ssh:// endpoints: the connection's process (a reference) */
  ssh_exit_waiter_t ssh_wait; /* a failure waits for it to end, to say why (its stderr) */
  int ssh_waiting;
  err_t ssh_pending;        /* the failure reported once the process has ended */
  exec_reply_t reply;
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
  if (h->ssh_waiting) ssh_conn_cancel_wait(&h->ssh_wait);
  ssh_conn_unref(h->ssh);
  err_clear(&h->ssh_pending);
  tls_conn_free(h->tls);
  free(h->plainbuf);
  exec_reply_free(&h->reply);
  engine_unref(h->eng);
  free(h);
}

static void on_handle_closed(uv_handle_t *handle) {
  hijack_t *h = handle->data;
  io_t *io = h->io;
  h->handle_open = 0;
  /* A getaddrinfo still running keeps the struct alive until its callback. */
  if (!h->gai_pending) h_free(h);
  io_handle_closed(io);
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

static void finish(hijack_t *h, err_t *err);

static void on_ssh_ended(ssh_exit_waiter_t *w) {
  hijack_t *h = (hijack_t *)((char *)w - offsetof(hijack_t, ssh_wait));
  h->ssh_waiting = 0;
  err_t err = ERR_INIT;
  err_move(&err, &h->ssh_pending);
  h->state = H_REPLY; /* finish() reports it now */
  finish(h, &err);
  err_clear(&err);
}

/* Reports the end once; afterwards the caller is expected to close. */
static void finish(hijack_t *h, err_t *err) {
  if (h->closing || h->state == H_DONE) return;
  h->state = H_DONE;
  if (h->reading) {
    uv_read_stop((uv_stream_t *)&h->handle);
    h->reading = 0;
  }
  if (err != NULL && h->ssh != NULL) {
    /* ssh://: the connection's process says why it failed (its stderr), once it has
     * ended; it does soon, its end of the connection being gone. */
    if (!ssh_conn_ended(h->ssh) && !h->ssh_waiting) {
      err_move(&h->ssh_pending, err);
      h->ssh_wait.fn = on_ssh_ended;
      h->ssh_waiting = 1;
      ssh_conn_when_ended(h->ssh, &h->ssh_wait);
      return;
    }
    err_t why = ERR_INIT;
    if (ssh_conn_failure(h->ssh, engine_display(h->eng), &why)) {
      h->cbs.on_end(h->ud, &why);
      err_clear(&why);
      return;
    }
  }
  h->cbs.on_end(h->ud, err);
}

static void fail_with(hijack_t *h, const char *code, const char *fmt, const char *arg) {
  err_t err = ERR_INIT;
  err_sandbox(&err, code, fmt, arg);
  finish(h, &err);
  err_clear(&err);
}

/* ---- stdin ---- */

static void pump_writes(hijack_t *h);

static void on_stdin_written(uv_write_t *req, int status) {
  pending_write_t *w = (pending_write_t *)req;
  hijack_t *h = req->data;
  h->queued -= w->len;
  free(w);
  h->writes_in_flight--;
  /* A command that exits without reading its input closes the stream under us:
   * EPIPE/ECONNRESET here is not an error of the exec; the read side reports the end. */
  (void)status;
  if (h->closing) return;
  pump_writes(h);
  if (!h->closing && h->cbs.on_written != NULL) h->cbs.on_written(h->ud);
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
    h->queued += w->len;
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
    err_t err = ERR_INIT;
    int rc = tls_conn_write(h->tls, w->data, w->len, &err);
    h->queued -= w->len;
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

/* stdin flows once the reply's head said the stream started. */
static int stream_open(const hijack_t *h) { return h->state == H_REPLY && h->reply.state == XR_STREAM; }

static void pump_writes(hijack_t *h) {
  if (h->closing || !stream_open(h)) return;
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
      h->queued -= w->len;
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
    h->queued += n;
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

static void on_reply_stream(void *ud) {
  hijack_t *h = ud;
  trace_event("exec start -> %ld", h->reply.status);
  pump_writes(h);
}

static int on_reply_output(void *ud, int stream, const uint8_t *data, size_t len) {
  hijack_t *h = ud;
  h->cbs.on_data(h->ud, stream, data, len);
  return h->closing ? 1 : 0;
}

static const exec_reply_callbacks_t reply_cbs = {.on_stream = on_reply_stream, .on_output = on_reply_output};

/* The connection ended (nread < 0), or the TLS peer sent close_notify (UV_EOF). A reset
 * (or a broken pipe) once the stream is open is its end as well: an engine may drop the
 * connection when the command exits without reading its input (Podman does); what was
 * read is the output, and the exit code comes from the exec's inspection (hijack_was_reset
 * tells the exec task to check that the command has really ended). */
static void on_input_end(hijack_t *h, ssize_t nread) {
  int reset = nread == UV_ECONNRESET || nread == UV_EPIPE;
  if (h->state == H_REPLY && h->reply.state == XR_STREAM && reset) {
    trace_event("exec stream end (%s)", uv_err_name((int)nread));
    h->reset = 1;
    nread = UV_EOF;
  }
  if (h->state == H_REPLY && (nread == UV_EOF || h->reply.state != XR_STREAM)) {
    if (h->reply.state == XR_STREAM) trace_event("exec stream end");
    err_t err = ERR_INIT;
    exec_reply_eof(&h->reply, &err);
    finish(h, err_is_set(&err) ? &err : NULL);
    err_clear(&err);
  } else if (h->state == H_REPLY) {
    fail_with(h, CODE_DOCKER_COMMAND_FAILED, "Docker engine connection failed during an exec: %s", uv_strerror((int)nread));
  } else if (h->state == H_TLS) {
    fail_with(h, CODE_DOCKER_UNAVAILABLE, "Docker engine closed the connection during the TLS handshake%s.", "");
  } else {
    fail_with(h, CODE_DOCKER_COMMAND_FAILED, "Docker engine closed the connection before answering exec start%s.", "");
  }
}

/* Plain bytes of the HTTP exchange: the response head, then the stream or an error body. */
static void on_bytes(hijack_t *h, const uint8_t *data, size_t len) {
  if (h->state != H_REPLY) return;
  err_t err = ERR_INIT;
  if (exec_reply_feed(&h->reply, data, len, &reply_cbs, h, &err) == 1) finish(h, err_is_set(&err) ? &err : NULL);
  err_clear(&err);
}

static int live(const hijack_t *h) {
  return !h->closing && h->state != H_DONE;
}

/* TLS: ciphertext in; the handshake, then the request, then decrypted bytes out. */
static void on_cipher(hijack_t *h, const uint8_t *data, size_t len) {
  err_t err = ERR_INIT;
  if (tls_conn_feed(h->tls, data, len) != 0) {
    err_oom(&err);
    finish(h, &err);
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
    h->state = H_REPLY;
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

size_t hijack_queued(const hijack_t *h) { return h == NULL ? 0 : h->queued; }

int hijack_was_reset(const hijack_t *h) { return h != NULL && h->reset; }

void hijack_set_ref(hijack_t *h, int ref) {
  if (h == NULL || h->closing) return;
  h->unref = !ref;
  if (!h->handle_open) return; /* applied when the handle opens */
  if (ref) uv_ref((uv_handle_t *)&h->handle);
  else uv_unref((uv_handle_t *)&h->handle);
}

void hijack_pause(hijack_t *h) {
  if (h == NULL || h->paused) return;
  h->paused = 1;
  if (h->reading && stream_open(h)) {
    uv_read_stop((uv_stream_t *)&h->handle);
    h->reading = 0;
  }
}

void hijack_resume(hijack_t *h) {
  if (h == NULL || !h->paused) return;
  h->paused = 0;
  if (h->handle_open && h->state >= H_REPLY) start_reading(h);
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
    err_t err = ERR_INIT;
    err_sandbox(&err, CODE_DOCKER_UNAVAILABLE, "Docker engine is not reachable at %s: %s", engine_display(h->eng), uv_strerror(status));
    finish(h, &err);
    err_clear(&err);
    return;
  }
  trace_event("exec connection open");
  if (h->tls != NULL) {
    /* The request goes out encrypted once the handshake is done (on_cipher). */
    h->state = H_TLS;
    err_t err = ERR_INIT;
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
  h->state = H_REPLY;
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
  io_t *io = h->io;
  h->gai_pending = 0;
  if (h->closing) {
    if (res) uv_freeaddrinfo(res);
    if (!h->handle_open) h_free(h);
    io_handle_closed(io);
    return;
  }
  io_handle_closed(io);
  if (status < 0 || res == NULL) {
    if (res) uv_freeaddrinfo(res);
    err_t err = ERR_INIT;
    err_sandbox(&err, CODE_DOCKER_UNAVAILABLE, "Docker engine is not reachable at %s: %s", engine_display(h->eng),
                uv_strerror(status < 0 ? status : UV_EAI_NONAME));
    finish(h, &err);
    err_clear(&err);
    return;
  }
  if (uv_tcp_init(h->io->uv, &h->handle.tcp) != 0) {
    uv_freeaddrinfo(res);
    fail_with(h, CODE_DOCKER_COMMAND_FAILED, "Cannot open a connection to the Docker engine%s.", "");
    return;
  }
  h->handle.tcp.data = h;
  h->handle_open = 1;
  io_handle_opened(h->io);
  if (h->unref) uv_unref((uv_handle_t *)&h->handle);
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
  const char *body = h->tty ? "{\"Detach\":false,\"Tty\":true}" : "{\"Detach\":false,\"Tty\":false}";
  int rc = buf_printf(&r,
                      "POST /v%s/exec/%s/start HTTP/1.1\r\nHost: %s\r\nUser-Agent: anvia-sandbox\r\n"
                      "Content-Type: application/json\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n"
                      "Content-Length: %zu\r\n\r\n%s",
                      engine_api_version(h->eng), (char *)h->request, ep->kind == EP_TCP ? ep->host : "localhost",
                      strlen(body), body);
  if (rc != 0) {
    buf_free(&r);
    return err_oom(err);
  }
  free(h->request);
  h->request = (char *)buf_steal(&r, &h->request_len);
  if (ep->kind == EP_SSH) {
    /* An ssh process's socket, already connected (a spare, or a new ssh): the request is
     * written at once, ssh carries it once its session is up. */
    int fd = ssh_transport_connect(engine_ssh(h->eng), &h->ssh, err);
    if (fd < 0) return -1;
    if (uv_pipe_init(h->io->uv, &h->handle.pipe, 0) != 0) {
      close(fd);
      return err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, "Cannot open a connection to the Docker engine.");
    }
    h->handle.pipe.data = h;
    h->handle_open = 1;
    io_handle_opened(h->io);
    if (h->unref) uv_unref((uv_handle_t *)&h->handle);
    if (uv_pipe_open(&h->handle.pipe, fd) != 0) {
      close(fd);
      return err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, "Cannot open a connection to the Docker engine.");
    }
    trace_event("exec connection open (ssh)");
    h->state = H_REPLY;
    h->head_write.data = h;
    uv_buf_t b = uv_buf_init(h->request, (unsigned int)h->request_len);
    if (uv_write(&h->head_write, (uv_stream_t *)&h->handle, &b, 1, on_head_written) != 0)
      return err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, "Cannot open a connection to the Docker engine.");
    read_now(h);
    return 0;
  }
  if (ep->kind == EP_UNIX) {
    if (uv_pipe_init(h->io->uv, &h->handle.pipe, 0) != 0)
      return err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, "Cannot open a connection to the Docker engine.");
    h->handle.pipe.data = h;
    h->handle_open = 1;
    io_handle_opened(h->io);
    if (h->unref) uv_unref((uv_handle_t *)&h->handle);
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
  io_handle_opened(h->io);
  if (uv_getaddrinfo(h->io->uv, &h->gai, on_resolved, ep->host, port, &hints) != 0) {
    h->gai_pending = 0;
    io_handle_closed(h->io);
    return err_sandbox(err, CODE_DOCKER_UNAVAILABLE, "Docker engine host cannot be resolved: %s", ep->host);
  }
  return 0;
}

static void on_engine_ready(engine_waiter_t *w, const err_t *err) {
  hijack_t *h = (hijack_t *)((char *)w - offsetof(hijack_t, waiter));
  if (err != NULL) {
    err_t copy = ERR_INIT;
    err_copy(&copy, err);
    finish(h, &copy);
    err_clear(&copy);
    return;
  }
  err_t e = ERR_INIT;
  if (connect_now(h, &e) != 0) finish(h, &e);
  err_clear(&e);
}

hijack_t *hijack_start(engine_t *eng, const char *exec_id, int tty, const hijack_callbacks_t *cbs, void *ud,
                       err_t *err) {
  hijack_t *h = calloc(1, sizeof(*h));
  if (h == NULL) {
    err_oom(err);
    return NULL;
  }
  h->eng = eng;
  engine_ref(eng);
  h->io = engine_io(eng);
  if (h->io->closing) {
    free(h);
    engine_unref(eng);
    err_sandbox(err, CODE_INVALID_STATE, "The addon is shutting down.");
    return NULL;
  }
  h->cbs = *cbs;
  h->ud = ud;
  h->queue_tail = &h->queue;
  exec_reply_init(&h->reply);
  h->tty = tty != 0;
  if (h->tty) exec_reply_set_raw(&h->reply);
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
