/*
 * timer.c - cancellable one-shot timers (see timer.h).
 */
#include "engine/timer.h"

#include <stdlib.h>

struct sbx_timer {
  uv_timer_t handle;
  io_t *io;
  void (*cb)(void *);
  void *ud;
};

static void on_closed(uv_handle_t *h) {
  sbx_timer_t *t = h->data;
  io_t *io = t->io;
  free(t);
  io_handle_closed(io);
}

static void on_fire(uv_timer_t *h) {
  sbx_timer_t *t = h->data;
  void (*cb)(void *) = t->cb;
  void *ud = t->ud;
  /* One shot: release before calling, so the callback may start a new timer freely. */
  uv_close((uv_handle_t *)&t->handle, on_closed);
  cb(ud);
}

sbx_timer_t *sbx_timer_start(io_t *io, uint64_t ms, void (*cb)(void *), void *ud) {
  if (io->closing) return NULL;
  sbx_timer_t *t = calloc(1, sizeof(*t));
  if (t == NULL) return NULL;
  if (uv_timer_init(io->uv, &t->handle) != 0) {
    free(t);
    return NULL;
  }
  t->io = io;
  io_handle_opened(io);
  t->handle.data = t;
  t->cb = cb;
  t->ud = ud;
  /* libuv counts from the time cached at the start of this loop iteration; JavaScript may
   * have run long since then, and a timeout must never be shorter than asked. */
  uv_update_time(io->uv);
  uv_timer_start(&t->handle, on_fire, ms, 0);
  return t;
}

void sbx_timer_cancel(sbx_timer_t *t) {
  if (t == NULL) return;
  uv_timer_stop(&t->handle);
  uv_close((uv_handle_t *)&t->handle, on_closed);
}

void sbx_timer_unref(sbx_timer_t *t) {
  if (t) uv_unref((uv_handle_t *)&t->handle);
}
