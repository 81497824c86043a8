/*
 * ops.c - what depends on a request's type, in one place above the operations: which
 * file cancels a request, takes its input, produces its output and releases it; the
 * round-robin scheduler that interleaves data frames; the sweep of finished records; and
 * the end of every request when the agent exits.
 *
 * Owns: nothing; the records are req.c's and what is inside them their type's file's.
 * Data frames are queued only while the output queue holds less than AG_OUT_HIGH, one
 * frame per source per round, so a reply to a small request waits behind at most that
 * much.
 */
#define _GNU_SOURCE
#include "agent.h"

void op_cancel(req_t *r, uint16_t why) {
  switch (r->type) {
  case AW_T_EXEC: exec_cancel(r, why); return;
  case AW_T_READ:
  case AW_T_WRITE:
  case AW_T_LIST: file_cancel(r, why); return;
  default: req_end(r, why); return;
  }
}

void op_fail(req_t *r, const ag_err_t *e) {
  if (r->id != 0) send_error(r->id, e);
  op_cancel(r, 0);
}

void op_data(req_t *r, const aw_header_t *h, const uint8_t *p) {
  ag_err_t e;
  if (req_take_data(r, h, &e) < 0) {
    op_fail(r, &e);
    return;
  }
  int end = (h->flags & AW_F_END) != 0;
  if (r->type == AW_T_EXEC) exec_stdin_data(r, p, h->len, end);
  else if (r->type == AW_T_WRITE) write_data(r, p, h->len, end);
}

int op_produce(req_t *r, int which) {
  switch (r->type) {
  case AW_T_EXEC: return exec_produce(r, which);
  case AW_T_READ: return read_produce(r);
  case AW_T_LIST: return list_produce(r);
  default: return 0;
  }
}

void schedule_output(void) {
  if (g.out_broken) return;
  for (;;) {
    int progressed = 0;
    size_t n = g.nrecords;
    req_t *r = g.head;
    for (size_t i = 0; i < n && r != NULL; i++) {
      req_t *next = r->next;
      int served = 0;
      for (int which = 0; which < r->nout; which++) {
        if (g.out.len >= AG_OUT_HIGH || g.out_broken) return;
        if (req_source_ready(r, which) && op_produce(r, which)) served = 1;
      }
      if (served) {
        progressed = 1;
        req_to_tail(r);
      }
      r = next;
    }
    if (!progressed) return;
  }
}

void op_sweep(void) {
  req_t *r = g.head;
  while (r != NULL) {
    req_t *next = r->next;
    if (r->finished) {
      if (r->type == AW_T_EXEC) exec_close(r);
      else file_close(r);
      req_free(r);
    }
    r = next;
  }
}

void op_end_all(void) {
  for (req_t *r = g.head; r != NULL; r = r->next) {
    if (r->finished) continue;
    if (r->type == AW_T_EXEC && r->u.exec.detached) continue;
    op_cancel(r, AW_E_SHUTDOWN);
  }
}
