/*
 * xfer.h - libcurl's multi interface driven by the libuv loop Node already runs: the
 * transfers (xfer_t) of one I/O context, started and stopped from anywhere.
 *
 * Owns: the CURLM handle, one uv_poll_t per socket libcurl asks us to watch, and one
 * uv_timer_t for libcurl's timeouts. Nothing polls on a timer: libcurl tells us which
 * sockets to watch (CURLMOPT_SOCKETFUNCTION) and when to wake it (CURLMOPT_TIMERFUNCTION).
 *
 * Completion callbacks run after curl_multi_socket_action has returned, never from
 * inside libcurl, so they may add and remove transfers and call into JavaScript.
 */
#ifndef SBX_XFER_H
#define SBX_XFER_H

#include <curl/curl.h>
#include <uv.h>

typedef struct xfer_loop xfer_loop_t;
typedef struct xfer xfer_t;

typedef void (*xfer_done_fn)(xfer_t *job, CURLcode result);

/* Embed in the transfer's own struct; CURLOPT_PRIVATE is set to it by xfer_start. */
struct xfer {
  CURL *easy;
  xfer_done_fn done;
  int active; /* added to the multi handle and not finished */
  xfer_t *prev, *next; /* the loop's list of active jobs */
};

xfer_loop_t *xfer_loop_new(uv_loop_t *uv);
/* Starts a transfer. Returns 0, or -1 when libcurl refuses it. */
int xfer_start(xfer_loop_t *l, xfer_t *job);
/* Stops a transfer without calling its done callback. Safe on an inactive job. */
void xfer_stop(xfer_loop_t *l, xfer_t *job);
/*
 * Tears the loop down. Transfers still added are detached (marked inactive, so freeing
 * them later never touches the loop). The uv handles are closed asynchronously; `closed`
 * runs once the last one is gone and the struct is freed.
 */
void xfer_loop_close(xfer_loop_t *l, void (*closed)(void *arg), void *arg);

#endif
