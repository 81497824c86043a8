/*
 * req.c - the request table and what every request has in common, whatever its type:
 * lookup by id, the credit windows of its streams (both directions), the checks of DATA
 * and WINDOW from the host, and the end of a request.
 *
 * Owns: every req_t record and the table's list (g.head, g.tail, g.nreq, g.nrecords). A
 * record is made by req_new when a request arrives and freed by req_free at the sweep
 * (ops.c) after req_finish; between the two, its type's file (exec.c, files.c, ports.c)
 * owns the descriptors and buffers inside it and releases them in exec_close/files_close.
 * An EXEC whose host-visible end came before its child was reaped keeps its record, with
 * id 0, until the child is reaped: nothing is ever left unreaped. What depends on a
 * request's type (cancelling it, feeding its input, producing its output) is ops.c's.
 */
#define _GNU_SOURCE
#include <stdlib.h>

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

void req_end(req_t *r, uint16_t why) {
  if (why != 0 && r->id != 0) {
    out_error_simple(r->id, why, 0, why == AW_E_SHUTDOWN ? "the agent is exiting" : "cancelled");
  }
  req_finish(r);
}

void req_free(req_t *r) {
  if (r->prev) r->prev->next = r->next;
  else g.head = r->next;
  if (r->next) r->next->prev = r->prev;
  else g.tail = r->prev;
  req_detach_id(r);
  g.nrecords--;
  free(r);
}

void req_to_tail(req_t *r) {
  if (g.tail == r) return;
  if (r->prev) r->prev->next = r->next;
  else g.head = r->next;
  if (r->next) r->next->prev = r->prev;
  r->prev = g.tail;
  r->next = NULL;
  g.tail->next = r;
  g.tail = r;
}

/* ---- host -> agent streams ---- */

void req_in_consumed(req_t *r, uint32_t n, int drained) {
  r->in.to_return += n;
  if (r->id == 0 || r->in.ended || r->in.to_return == 0) return;
  if (r->in.to_return >= AW_IN_WINDOW / 4 || drained) {
    out_window(r->id, AW_S_IN, r->in.to_return);
    r->in.outstanding += r->in.to_return;
    r->in.to_return = 0;
  }
}

int req_take_data(req_t *r, const aw_header_t *h, ag_err_t *e) {
  if (!r->has_in) {
    ag_err_set(e, AW_E_PROTOCOL, 0, "DATA for a request that takes no input");
    return -1;
  }
  if (r->in.ended) {
    ag_err_set(e, AW_E_PROTOCOL, 0, "DATA after the end of the input");
    return -1;
  }
  if (h->len > r->in.outstanding) {
    ag_err_set(e, AW_E_FLOW_CONTROL, 0, "DATA of %u bytes with %u bytes of credit", (unsigned)h->len,
            (unsigned)r->in.outstanding);
    return -1;
  }
  r->in.outstanding -= h->len;
  r->in.received += h->len;
  if (h->flags & AW_F_END) r->in.ended = 1;
  return 0;
}

/* ---- agent -> host streams ---- */

int req_take_window(req_t *r, const aw_header_t *h, uint32_t inc, ag_err_t *e) {
  ostream_t *o = NULL;
  for (int i = 0; i < r->nout; i++)
    if (r->out[i].stream == h->stream) o = &r->out[i];
  if (o == NULL) {
    ag_err_set(e, AW_E_PROTOCOL, 0, "WINDOW for stream %u, which this request does not have", (unsigned)h->stream);
    return -1;
  }
  if ((uint64_t)o->credit + inc > AW_MAX_WINDOW) {
    ag_err_set(e, AW_E_FLOW_CONTROL, 0, "credit over %u bytes", (unsigned)AW_MAX_WINDOW);
    return -1;
  }
  o->credit += inc;
  return 0;
}

int req_source_ready(const req_t *r, int which) {
  const ostream_t *o = &r->out[which];
  return o->active && o->credit > 0 && r->id != 0;
}
