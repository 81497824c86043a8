/*
 * req.c - the request table and what every request has in common: lookup by id, the
 * credit windows of its streams (both directions), DATA and WINDOW from the host,
 * cancellation, and the end of a request.
 *
 * Owns: every req_t. A record is made by req_new when a request arrives and freed by
 * req_sweep after req_finish; between the two, its type's file (exec.c, files.c, ports.c)
 * owns the descriptors and buffers inside it and releases them in exec_close/file_close.
 * An EXEC whose host-visible end came before its child was reaped keeps its record, with
 * id 0, until the child is reaped: nothing is ever left unreaped.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"

req_t *req_new(uint32_t id, uint8_t type) {
  req_t *r = calloc(1, sizeof(*r));
  if (r == NULL) return NULL;
  r->id = id;
  r->type = type;
  for (int i = 0; i < 2; i++) {
    r->out[i].fd = -1;
    r->out[i].stream = i == 0 ? AW_S_OUT : AW_S_ERR;
  }
  r->in.outstanding = AW_IN_WINDOW;
  r->prev = g.tail;
  if (g.tail) g.tail->next = r;
  else g.head = r;
  g.tail = r;
  g.nreq++;
  g.nrecords++;
  return r;
}

req_t *req_find(uint32_t id) {
  if (id == 0) return NULL;
  for (req_t *r = g.head; r != NULL; r = r->next)
    if (r->id == id) return r;
  return NULL;
}

void req_detach_id(req_t *r) {
  if (r->id != 0) {
    r->id = 0;
    g.nreq--;
  }
}

void req_finish(req_t *r) {
  req_detach_id(r);
  r->finished = 1;
}

static void req_free(req_t *r) {
  if (r->type == AW_T_EXEC) exec_close(r);
  else file_close(r);
  if (r->prev) r->prev->next = r->next;
  else g.head = r->next;
  if (r->next) r->next->prev = r->prev;
  else g.tail = r->prev;
  req_detach_id(r);
  g.nrecords--;
  free(r);
}

void req_sweep(void) {
  req_t *r = g.head;
  while (r != NULL) {
    req_t *next = r->next;
    if (r->finished) req_free(r);
    r = next;
  }
}

void req_cancel(req_t *r, uint16_t why) {
  switch (r->type) {
  case AW_T_EXEC:
    exec_kill(r, why == AW_E_CANCELLED || why == AW_E_SHUTDOWN ? AW_EXITF_CANCELLED : 0);
    /* The host does not want the rest of the output: close the pipes now. */
    for (int i = 0; i < r->nout; i++) {
      if (r->out[i].active) {
        close_fd(&r->out[i].fd);
        r->out[i].active = 0;
        r->u.exec.flags |= AW_EXITF_OUTPUT_CUT;
      }
    }
    close_fd(&r->u.exec.stdin_fd);
    r->in.dead = 1;
    if (why == 0) req_detach_id(r);
    exec_check(r);
    return;
  case AW_T_WRITE: write_abort(r); break;
  default: break;
  }
  if (why != 0 && r->id != 0) {
    send_error_simple(r->id, why, 0, why == AW_E_SHUTDOWN ? "the agent is exiting" : "cancelled");
  }
  req_finish(r);
}

void req_fail(req_t *r, const ag_err_t *e) {
  if (r->id != 0) send_error(r->id, e);
  req_cancel(r, 0);
}

/* ---- host -> agent streams ---- */

void in_consumed(req_t *r, uint32_t n, int drained) {
  r->in.to_return += n;
  if (r->id == 0 || r->in.ended || r->in.to_return == 0) return;
  if (r->in.to_return >= AW_IN_WINDOW / 4 || drained) {
    send_window(r->id, AW_S_IN, r->in.to_return);
    r->in.outstanding += r->in.to_return;
    r->in.to_return = 0;
  }
}

void req_on_data(req_t *r, const aw_header_t *h, const uint8_t *p) {
  ag_err_t e;
  if (!r->has_in) {
    err_set(&e, AW_E_PROTOCOL, 0, "DATA for a request that takes no input");
    req_fail(r, &e);
    return;
  }
  if (r->in.ended) {
    err_set(&e, AW_E_PROTOCOL, 0, "DATA after the end of the input");
    req_fail(r, &e);
    return;
  }
  if (h->len > r->in.outstanding) {
    err_set(&e, AW_E_FLOW_CONTROL, 0, "DATA of %u bytes with %u bytes of credit", (unsigned)h->len,
            (unsigned)r->in.outstanding);
    req_fail(r, &e);
    return;
  }
  r->in.outstanding -= h->len;
  r->in.received += h->len;
  int end = (h->flags & AW_F_END) != 0;
  if (end) r->in.ended = 1;
  if (r->type == AW_T_EXEC) exec_stdin_data(r, p, h->len, end);
  else if (r->type == AW_T_WRITE) write_data(r, p, h->len, end);
}

/* ---- agent -> host streams ---- */

void req_on_window(req_t *r, const aw_header_t *h, uint32_t inc) {
  ag_err_t e;
  ostream_t *o = NULL;
  for (int i = 0; i < r->nout; i++)
    if (r->out[i].stream == h->stream) o = &r->out[i];
  if (o == NULL) {
    err_set(&e, AW_E_PROTOCOL, 0, "WINDOW for stream %u, which this request does not have", (unsigned)h->stream);
    req_fail(r, &e);
    return;
  }
  if ((uint64_t)o->credit + inc > AW_MAX_WINDOW) {
    err_set(&e, AW_E_FLOW_CONTROL, 0, "credit over %u bytes", (unsigned)AW_MAX_WINDOW);
    req_fail(r, &e);
    return;
  }
  o->credit += inc;
}

int req_source_ready(req_t *r, int which) {
  ostream_t *o = &r->out[which];
  if (!o->active || o->credit == 0 || r->id == 0) return 0;
  if (r->type == AW_T_EXEC) return o->ready;
  /* A listing sends whole records: it waits for credit for the one it holds. */
  if (r->type == AW_T_LIST && r->u.list.pending_len > o->credit) return 0;
  return 1;
}

int req_produce(req_t *r, int which) {
  switch (r->type) {
  case AW_T_EXEC: return produce_pipe(r, &r->out[which]);
  case AW_T_READ: return read_produce(r);
  case AW_T_LIST: return list_produce(r);
  default: return 0;
  }
}

int produce_pipe(req_t *r, ostream_t *o) {
  size_t want = o->credit < AW_MAX_DATA ? o->credit : AW_MAX_DATA;
  uint8_t *b = outq_reserve(AW_HEADER_LEN + want);
  if (b == NULL) return 0; /* the queue is at its cap: try again once it drains */
  ssize_t n;
  do n = read(o->fd, b + AW_HEADER_LEN, want);
  while (n < 0 && errno == EINTR);
  if (n < 0 && errno == EAGAIN) {
    o->ready = 0;
    return 0;
  }
  if (n <= 0) {
    /* End of the stream (or a read error, which ends it as well). */
    close_fd(&o->fd);
    o->active = 0;
    o->ready = 0;
    if (r->type == AW_T_EXEC) exec_check(r);
    return 0;
  }
  aw_header_t h = {(uint32_t)n, AW_T_DATA, 0, o->stream, 0, r->id};
  aw_header_encode(b, &h);
  outq_commit(AW_HEADER_LEN + (size_t)n);
  o->credit -= (uint32_t)n;
  o->sent += (uint64_t)n;
  return 1;
}
