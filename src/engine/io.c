/*
 * io.c - the I/O context of one environment (see io.h).
 */
#include "engine/io.h"

#include <stdlib.h>

io_t *io_new(uv_loop_t *uv) {
  io_t *io = calloc(1, sizeof(*io));
  if (io == NULL) return NULL;
  io->uv = uv;
  io->xfers = xfer_loop_new(uv);
  if (io->xfers == NULL) {
    free(io);
    return NULL;
  }
  return io;
}

int io_on_close(io_t *io, io_hook_fn fn) {
  for (io_hook_t *h = io->hooks; h != NULL; h = h->next)
    if (h->fn == fn) return 0;
  io_hook_t *h = malloc(sizeof(*h));
  if (h == NULL) return -1;
  h->fn = fn;
  h->next = io->hooks;
  io->hooks = h;
  return 0;
}

/* Done once the transfers and every handle of ours are closed. */
static void maybe_finish(io_t *io) {
  if (!io->closing || !io->xfers_closed || io->live_handles > 0) return;
  void (*closed)(void *) = io->closed;
  void *arg = io->closed_arg;
  free(io);
  if (closed) closed(arg);
}

void io_handle_opened(io_t *io) { io->live_handles++; }

void io_handle_closed(io_t *io) {
  io->live_handles--;
  maybe_finish(io);
}

static void on_xfers_closed(void *arg) {
  io_t *io = arg;
  io->xfers_closed = 1;
  maybe_finish(io);
}

void io_close(io_t *io, void (*closed)(void *arg), void *arg) {
  io->closing = 1;
  io->closed = closed;
  io->closed_arg = arg;
  while (io->hooks) {
    io_hook_t *h = io->hooks;
    io->hooks = h->next;
    h->fn(io);
    free(h);
  }
  xfer_loop_close(io->xfers, on_xfers_closed, io);
}
