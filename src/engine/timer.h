/*
 * timer.h - one-shot timers on the libuv loop that are safe to cancel from anywhere.
 *
 * Owns: each timer owns its uv_timer_t, released after libuv closes it. Cancelling
 * guarantees the callback never runs afterwards.
 */
#ifndef SBX_TIMER_H
#define SBX_TIMER_H

#include <stdint.h>

#include "engine/io.h"

typedef struct sbx_timer sbx_timer_t;

/* NULL when the context is closing or out of memory. */
sbx_timer_t *sbx_timer_start(io_t *io, uint64_t ms, void (*cb)(void *ud), void *ud);
/* Stops and releases a timer whose callback has not run (once it runs, the timer is
 * already gone: forget the pointer in the callback). NULL is fine. */
void sbx_timer_cancel(sbx_timer_t *t);
/* Keeps Node from waiting for this timer alone (a heartbeat, say). NULL is fine. */
void sbx_timer_unref(sbx_timer_t *t);

#endif
