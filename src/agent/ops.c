/*
 * ops.c - what depends on a request's type, in one place above the operations: the table
 * of request types (which file starts a request, cancels it, takes its input, produces
 * its output, runs its timer and releases it, and which descriptors the poll loop
 * watches for it); the round-robin scheduler that interleaves data frames; the sweep of
 * finished records; and the end of every request when the agent exits.
 *
 * Owns: nothing; the records are req.c's and what is inside them their type's file's.
 * Data frames are queued only while the output queue holds less than AG_OUT_HIGH, one
 * frame per source per round, so a reply to a small request waits behind at most that
 * much.
 */
#define _GNU_SOURCE
#include "agent.h"

/* What each request type does, one row per type; NULL (a member left out): the type has
 * none of it. Every other file asks here rather than looking at a request's type itself. */
typedef struct ag_type {
  uint8_t type;
  void (*start)(uint32_t id, const uint8_t *p, size_t len); /* the request's frame */
  void (*cancel)(req_t *r, uint16_t why);                    /* NULL: req_end */
  void (*data)(req_t *r, const uint8_t *p, size_t len, int end); /* its input (stream 1) */
  int (*produce)(req_t *r, int which);                       /* queues one DATA frame */
  int (*ready)(const req_t *r, int which); /* more than credit: NULL, any source with credit */
  void (*timer)(req_t *r, int64_t now);
  int64_t (*due)(const req_t *r);       /* when timer wants to run next; 0: no time */
  int (*detached)(const req_t *r);      /* survives the agent's exit */
  void (*close)(req_t *r);              /* releases what a finished record holds */
  int polled;                           /* its output descriptors are in the poll set */
  int (*input_fd)(const req_t *r);      /* a descriptor its input waits on, or -1 */
  void (*input_ready)(req_t *r);        /* that descriptor is writable */
  void (*output_closed)(req_t *r);      /* main.c closed a polled output at its end */
} ag_type_t;

/* EXEC's stdin pipe while bytes wait for it. The pipe and the bytes are exec.c's; this
 * only reads them, for the poll loop. */
static int stdin_waiting(const req_t *r) {
  return r->u.exec.stdin_fd >= 0 && r->u.exec.stdin_len > 0 ? r->u.exec.stdin_fd : -1;
}

/* Indexed by type code from AW_T_EXEC (the request types are contiguous), so that the
 * scheduler's and the poll loop's look-ups are one index. */
#define FIRST AW_T_EXEC
static const ag_type_t TYPES[] = {
    {.type = AW_T_EXEC, .start = exec_start, .cancel = exec_cancel, .data = exec_stdin_data, .produce = exec_produce,
     .ready = exec_ready, .timer = exec_timer, .due = exec_due, .detached = exec_detached, .close = exec_close,
     .polled = 1, .input_fd = stdin_waiting, .input_ready = exec_stdin_ready, .output_closed = exec_check},
    {.type = AW_T_READ, .start = files_read_start, .cancel = files_cancel, .produce = files_read_produce,
     .close = files_close},
    {.type = AW_T_WRITE, .start = files_write_start, .cancel = files_cancel, .data = files_write_data,
     .close = files_close},
    {.type = AW_T_MKDIR, .start = files_mkdir_run},
    {.type = AW_T_LIST, .start = files_list_start, .cancel = files_cancel, .produce = files_list_produce,
     .ready = files_list_ready, .close = files_close},
    {.type = AW_T_PORT_WAIT, .start = port_start, .timer = port_timer, .due = port_due},
    {.type = AW_T_SIGNAL, .start = procs_signal_run},
    {.type = AW_T_GROUP_ALIVE, .start = procs_alive_run},
    {.type = AW_T_WATCH, .start = watch_start, .cancel = watch_cancel, .produce = watch_produce,
     .ready = watch_ready, .close = watch_close, .polled = 1, .output_closed = watch_closed},
#define TERM_ROW(t, s)                                                                                       \
  {.type = t, .start = s, .cancel = term_cancel, .data = term_data, .produce = term_produce, .ready = term_ready, \
   .close = term_close, .polled = 1, .input_fd = term_input_fd, .input_ready = term_input_ready,               \
   .output_closed = term_closed}
    TERM_ROW(AW_T_TERM_OPEN, term_open_start),
    TERM_ROW(AW_T_TERM_ATTACH, term_attach_start),
    TERM_ROW(AW_T_TERM_RESIZE, term_resize_start),
    TERM_ROW(AW_T_TERM_SIGNAL, term_signal_start),
#undef TERM_ROW
    {.type = AW_T_TERM_LIST, .start = term_list_run},
};
_Static_assert(sizeof(TYPES) / sizeof(TYPES[0]) == AW_T_TERM_LIST - FIRST + 1, "one row per request type, in order");

static const ag_type_t *type_of(uint8_t type) {
  size_t i = (size_t)type - FIRST;
  return type >= FIRST && i < sizeof(TYPES) / sizeof(TYPES[0]) && TYPES[i].type == type ? &TYPES[i] : NULL;
}

int op_start(uint32_t id, uint8_t type, const uint8_t *p, size_t len) {
  const ag_type_t *t = type_of(type);
  if (t == NULL) return 0;
  t->start(id, p, len);
  return 1;
}

void op_cancel(req_t *r, uint16_t why) {
  const ag_type_t *t = type_of(r->type);
  if (t != NULL && t->cancel != NULL) t->cancel(r, why);
  else req_end(r, why);
}

void op_fail(req_t *r, const ag_err_t *e) {
  if (r->id != 0) out_error(r->id, e);
  op_cancel(r, 0);
}

void op_data(req_t *r, const aw_header_t *h, const uint8_t *p) {
  ag_err_t e;
  if (req_take_data(r, h, &e) < 0) {
    op_fail(r, &e);
    return;
  }
  const ag_type_t *t = type_of(r->type);
  if (t != NULL && t->data != NULL) t->data(r, p, h->len, (h->flags & AW_F_END) != 0);
}

static int op_produce(req_t *r, int which) {
  const ag_type_t *t = type_of(r->type);
  return t != NULL && t->produce != NULL ? t->produce(r, which) : 0;
}

int op_source_ready(req_t *r, int which) {
  if (!req_source_ready(r, which)) return 0;
  const ag_type_t *t = type_of(r->type);
  return t == NULL || t->ready == NULL || t->ready(r, which);
}

int op_detached(const req_t *r) {
  const ag_type_t *t = type_of(r->type);
  return t != NULL && t->detached != NULL && t->detached(r);
}

int op_polled(const req_t *r) {
  const ag_type_t *t = type_of(r->type);
  return t != NULL && t->polled;
}

int op_input_fd(const req_t *r) {
  const ag_type_t *t = type_of(r->type);
  return t != NULL && t->input_fd != NULL ? t->input_fd(r) : -1;
}

void op_input_ready(req_t *r) {
  const ag_type_t *t = type_of(r->type);
  if (t != NULL && t->input_ready != NULL) t->input_ready(r);
}

void op_output_closed(req_t *r) {
  const ag_type_t *t = type_of(r->type);
  if (t != NULL && t->output_closed != NULL) t->output_closed(r);
}

int64_t op_next_due(void) {
  int64_t due = 0;
  for (req_t *r = g.head; r != NULL; r = r->next) {
    if (r->finished) continue;
    const ag_type_t *t = type_of(r->type);
    int64_t d = t != NULL && t->due != NULL ? t->due(r) : 0;
    if (d > 0 && (due == 0 || d < due)) due = d;
  }
  return due;
}

void op_run_timers(int64_t now) {
  for (req_t *r = g.head; r != NULL; r = r->next) {
    if (r->finished) continue;
    const ag_type_t *t = type_of(r->type);
    if (t != NULL && t->timer != NULL) t->timer(r, now);
  }
}

void op_schedule_output(void) {
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
        if (op_source_ready(r, which) && op_produce(r, which)) served = 1;
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
      const ag_type_t *t = type_of(r->type);
      if (t != NULL && t->close != NULL) t->close(r);
      req_free(r);
    }
    r = next;
  }
}

void op_end_all(void) {
  for (req_t *r = g.head; r != NULL; r = r->next) {
    if (r->finished) continue;
    if (op_detached(r)) continue;
    op_cancel(r, AW_E_SHUTDOWN);
  }
}
