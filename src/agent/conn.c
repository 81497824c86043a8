/*
 * conn.c - the input side of the host connection: reading the host's frames, checking
 * them, and dispatching each: HOST_HELLO and PING here, CANCEL, DATA and WINDOW to the
 * request they name, and every request frame to its operation's file.
 *
 * Owns: g.inbuf's contents (the buffer is allocated once in main.c, filled and compacted
 * here), g.in_len, g.in_eof, g.in_dead, g.hello_done and g.last_rx_ms. The host's frames
 * are processed only while the output queue holds less than AG_OUT_PAUSE_IN: a host that
 * does not read stops being read.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"

#define IN_CAP (AW_HEADER_LEN + AW_MAX_PAYLOAD + 65536u)

/* ---- dispatch ---- */

static void fatal_protocol(const char *what, int status) {
  g.in_dead = 1;
  g.in_len = 0;
  ag_err_t e;
  ag_err_set(&e, AW_E_PROTOCOL, 0, "%s: %s", what, aw_status_str(status));
  out_error(0, &e);
  util_log("protocol error from the host: %s: %s", what, aw_status_str(status));
  shutdown_begin(3, "protocol error");
}

static void on_host_hello(const uint8_t *p, size_t len) {
  aw_host_hello_t m;
  int rc = aw_dec_host_hello(p, len, &m);
  if (rc != AW_OK) {
    fatal_protocol("HOST_HELLO", rc);
    return;
  }
  if (m.version_min > AW_VERSION || m.version_max < AW_VERSION) {
    ag_err_t e;
    ag_err_set(&e, AW_E_VERSION, 0, "the agent speaks version %u only; the host %u..%u", AW_VERSION,
            (unsigned)m.version_min, (unsigned)m.version_max);
    e.value = AW_VERSION;
    out_error(0, &e);
    shutdown_begin(3, "no common version");
    return;
  }
  g.hello_done = 1;
}

static void on_request(const aw_header_t *h, const uint8_t *p) {
  if (g.shutting_down) {
    out_error_simple(h->id, AW_E_SHUTDOWN, 0, "the agent is exiting");
    return;
  }
  if (req_find(h->id) != NULL) {
    out_error_simple(h->id, AW_E_DUPLICATE_ID, 0, "a request with this id is in flight");
    return;
  }
  if (g.nreq >= AW_MAX_REQUESTS) {
    ag_err_t e;
    ag_err_set(&e, AW_E_LIMIT, 0, "too many requests in flight");
    e.value = AW_MAX_REQUESTS;
    out_error(h->id, &e);
    return;
  }
  if (!op_start(h->id, h->type, p, h->len)) out_error_simple(h->id, AW_E_UNSUPPORTED, 0, aw_type_name(h->type));
}

static void dispatch(const aw_header_t *h, const uint8_t *p) {
  if (!g.hello_done) {
    if (h->type != AW_T_HOST_HELLO) {
      fatal_protocol("the first frame must be HOST_HELLO", AW_ERR_TYPE);
      return;
    }
    on_host_hello(p, h->len);
    return;
  }
  switch (h->type) {
  case AW_T_HOST_HELLO: fatal_protocol("HOST_HELLO sent twice", AW_ERR_TYPE); return;
  case AW_T_PING: {
    int rc = aw_dec_ping(p, h->len);
    if (rc != AW_OK && h->id == 0) fatal_protocol("PING", AW_ERR_LIMIT); /* an ERROR with id 0 ends the connection */
    else if (rc != AW_OK) out_error_simple(h->id, AW_E_LIMIT, 0, "PING payload over 64 bytes");
    else out_pong(h->id, p, h->len);
    return;
  }
  case AW_T_CANCEL: {
    req_t *r = req_find(h->id);
    if (r != NULL) op_cancel(r, AW_E_CANCELLED);
    return;
  }
  case AW_T_DATA: {
    req_t *r = req_find(h->id);
    if (r != NULL) op_data(r, h, p);
    return;
  }
  case AW_T_WINDOW: {
    uint32_t inc = 0;
    int rc = aw_dec_window(p, h->len, &inc);
    req_t *r = req_find(h->id);
    if (r == NULL) return;
    ag_err_t e;
    if (rc != AW_OK) {
      ag_err_set(&e, AW_E_PROTOCOL, 0, "WINDOW: %s", aw_status_str(rc));
      out_error(h->id, &e);
      op_cancel(r, 0);
      return;
    }
    if (req_take_window(r, h, inc, &e) < 0) op_fail(r, &e);
    return;
  }
  default: on_request(h, p); return;
  }
}

void conn_dispatch_pending(void) {
  size_t off = 0;
  while (!g.in_dead) {
    if (g.out.len >= AG_OUT_PAUSE_IN) break;
    aw_header_t h;
    const uint8_t *payload = NULL;
    size_t flen = 0;
    int rc = aw_frame_parse(g.inbuf + off, g.in_len - off, AW_FROM_HOST, &h, &payload, &flen);
    if (rc == 0) break;
    if (rc < 0) {
      fatal_protocol("frame header", rc);
      return;
    }
    off += flen;
    dispatch(&h, payload);
    if (g.in_dead) return;
  }
  if (off > 0) {
    memmove(g.inbuf, g.inbuf + off, g.in_len - off);
    g.in_len -= off;
  }
}

void conn_read(void) {
  for (;;) {
    if (g.in_len >= IN_CAP) break;
    ssize_t n = read(g.in_fd, g.inbuf + g.in_len, IN_CAP - g.in_len);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) break;
      g.in_eof = 1;
      break;
    }
    if (n == 0) {
      g.in_eof = 1;
      break;
    }
    g.in_len += (size_t)n;
    g.last_rx_ms = util_now_ms();
    conn_dispatch_pending();
    if (g.out.len >= AG_OUT_PAUSE_IN || g.in_dead) break;
  }
  conn_dispatch_pending();
  if (g.in_eof && g.in_len > 0) {
    /* A frame cut by the end of input: nothing more will come. */
    g.in_len = 0;
  }
}
