/*
 * loop.h - libcurl's multi interface driven by the libuv loop Node already runs.
 *
 * Owns: the CURLM handle, one uv_poll_t per socket libcurl asks us to watch, and one
 * uv_timer_t for libcurl's timeouts. Nothing polls on a timer: libcurl tells us which
 * sockets to watch (CURLMOPT_SOCKETFUNCTION) and when to wake it (CURLMOPT_TIMERFUNCTION).
 *
 * Completion callbacks run after curl_multi_socket_action has returned, never from
 * inside libcurl, so they may add and remove transfers and call into JavaScript.
 */
#ifndef SBX_LOOP_H
#define SBX_LOOP_H

#include <curl/curl.h>
#include <uv.h>

typedef struct curl_loop curl_loop_t;
typedef struct curl_job curl_job_t;

typedef void (*curl_job_done_fn)(curl_job_t *job, CURLcode result);

/* Embed in the transfer's own struct; CURLOPT_PRIVATE is set to it by curl_loop_add. */
struct curl_job {
  CURL *easy;
  curl_job_done_fn done;
  int active; /* added to the multi handle and not finished */
  curl_job_t *prev, *next; /* the loop's list of active jobs */
};

curl_loop_t *curl_loop_new(uv_loop_t *uv);
/* Starts a transfer. Returns 0, or -1 when libcurl refuses it. */
int curl_loop_add(curl_loop_t *l, curl_job_t *job);
/* Stops a transfer without calling its done callback. Safe on an inactive job. */
void curl_loop_remove(curl_loop_t *l, curl_job_t *job);
/* Unpauses a paused transfer (CURL_WRITEFUNC_PAUSE) and lets libcurl act on it. */
void curl_loop_unpause(curl_loop_t *l, curl_job_t *job);
/*
 * Tears the loop down. Transfers still added are detached (marked inactive, so freeing
 * them later never touches the loop). The uv handles are closed asynchronously; `closed`
 * runs once the last one is gone and the struct is freed.
 */
void curl_loop_close(curl_loop_t *l, void (*closed)(void *arg), void *arg);

#endif
