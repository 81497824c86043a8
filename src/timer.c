/*
 * timer.c - cancellable one-shot timers (see timer.h).
 */
#include "timer.h"

#include <stdlib.h>

struct sbx_timer {
  uv_timer_t handle;
  addon_t *addon;
  void (*cb)(void *);
  void *ud;
};

static void on_closed(uv_handle_t *h) {
  sbx_timer_t *t = h->data;
  addon_t *a = t->addon;
  free(t);
  addon_handle_closed(a);
}

static void on_fire(uv_timer_t *h) {
  sbx_timer_t *t = h->data;
  void (*cb)(void *) = t->cb;
  void *ud = t->ud;
  /* One shot: release before calling, so the callback may start a new timer freely. */
  uv_close((uv_handle_t *)&t->handle, on_closed);
  cb(ud);
}

sbx_timer_t *sbx_timer_start(addon_t *a, uint64_t ms, void (*cb)(void *), void *ud) {
  if (a->closing) return NULL;
  sbx_timer_t *t = calloc(1, sizeof(*t));
  if (t == NULL) return NULL;
  if (uv_timer_init(a->uv, &t->handle) != 0) {
    free(t);
    return NULL;
  }
  t->addon = a;
  addon_handle_opened(a);
  t->handle.data = t;
  t->cb = cb;
  t->ud = ud;
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
