/*
 * xfer.c - libcurl multi on libuv (see xfer.h).
 *
 * The shape follows curl's docs/examples/multi-uv.c, with the pitfalls it leaves to the
 * reader handled here:
 *  - a poll context per socket, attached with curl_multi_assign, looked up again by fd
 *    when libcurl closes a socket (CURLOPT_CLOSESOCKETFUNCTION), so the poll handle is
 *    always stopped and closed before the descriptor is;
 *  - a negative poll status is reported to libcurl as CURL_CSELECT_ERR;
 *  - curl_multi_info_read is drained after every curl_multi_socket_action and the done
 *    callbacks run only then (libcurl refuses recursive calls from its own callbacks);
 *  - curl_multi_cleanup still calls the socket callback, so teardown does it first and
 *    closes the timer last.
 */
#include "engine/xfer.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct sock_ctx {
  uv_poll_t poll;
  curl_socket_t fd;
  xfer_loop_t *loop;
} sock_ctx_t;

struct xfer_loop {
  uv_loop_t *uv;
  xfer_t *jobs; /* active transfers */
  CURLM *multi;
  uv_timer_t timer;
  sock_ctx_t **by_fd; /* fd -> poll context, for the close-socket callback */
  size_t by_fd_len;
  int handles_open; /* uv handles not yet closed, timer included */
  int closing;
  void (*closed)(void *);
  void *closed_arg;
};

static void check_multi_info(xfer_loop_t *l);

static void job_unlink(xfer_loop_t *l, xfer_t *job) {
  if (job->prev) job->prev->next = job->next;
  else if (l->jobs == job) l->jobs = job->next;
  if (job->next) job->next->prev = job->prev;
  job->prev = job->next = NULL;
}

static void on_handle_closed(uv_handle_t *h) {
  xfer_loop_t *l = h->data;
  if (h != (uv_handle_t *)&l->timer) free(((char *)h) - offsetof(sock_ctx_t, poll));
  l->handles_open--;
  if (l->closing && l->handles_open == 0) {
    void (*closed)(void *) = l->closed;
    void *arg = l->closed_arg;
    free(l->by_fd);
    free(l);
    if (closed) closed(arg);
  }
}

static int by_fd_set(xfer_loop_t *l, curl_socket_t fd, sock_ctx_t *ctx) {
  if (fd < 0) return -1;
  if ((size_t)fd >= l->by_fd_len) {
    size_t len = l->by_fd_len ? l->by_fd_len : 64;
    while (len <= (size_t)fd) len *= 2;
    sock_ctx_t **p = realloc(l->by_fd, len * sizeof(*p));
    if (p == NULL) return -1;
    memset(p + l->by_fd_len, 0, (len - l->by_fd_len) * sizeof(*p));
    l->by_fd = p;
    l->by_fd_len = len;
  }
  l->by_fd[fd] = ctx;
  return 0;
}

static sock_ctx_t *by_fd_get(xfer_loop_t *l, curl_socket_t fd) {
  if (fd < 0 || (size_t)fd >= l->by_fd_len) return NULL;
  return l->by_fd[fd];
}

static void sock_ctx_release(xfer_loop_t *l, sock_ctx_t *ctx) {
  by_fd_set(l, ctx->fd, NULL);
  uv_poll_stop(&ctx->poll);
  uv_close((uv_handle_t *)&ctx->poll, on_handle_closed);
}

static void on_poll(uv_poll_t *poll, int status, int events) {
  sock_ctx_t *ctx = (sock_ctx_t *)(((char *)poll) - offsetof(sock_ctx_t, poll));
  xfer_loop_t *l = ctx->loop;
  int flags = 0;
  if (status < 0) {
    flags = CURL_CSELECT_ERR;
  } else {
    if (events & UV_READABLE) flags |= CURL_CSELECT_IN;
    if (events & UV_WRITABLE) flags |= CURL_CSELECT_OUT;
    if (events & UV_DISCONNECT) flags |= CURL_CSELECT_IN;
  }
  int running = 0;
  curl_multi_socket_action(l->multi, ctx->fd, flags, &running);
  check_multi_info(l);
}

static void on_timeout(uv_timer_t *timer) {
  xfer_loop_t *l = timer->data;
  int running = 0;
  curl_multi_socket_action(l->multi, CURL_SOCKET_TIMEOUT, 0, &running);
  check_multi_info(l);
}

static int on_socket(CURL *easy, curl_socket_t s, int action, void *userp, void *socketp) {
  (void)easy;
  xfer_loop_t *l = userp;
  sock_ctx_t *ctx = socketp;
  if (action == CURL_POLL_REMOVE) {
    if (ctx != NULL) {
      curl_multi_assign(l->multi, s, NULL);
      sock_ctx_release(l, ctx);
    }
    return 0;
  }
  if (ctx == NULL) {
    ctx = calloc(1, sizeof(*ctx));
    if (ctx == NULL) return -1;
    ctx->fd = s;
    ctx->loop = l;
    if (uv_poll_init_socket(l->uv, &ctx->poll, s) != 0) {
      free(ctx);
      return -1;
    }
    ctx->poll.data = l;
    l->handles_open++;
    if (by_fd_set(l, s, ctx) != 0) {
      uv_close((uv_handle_t *)&ctx->poll, on_handle_closed);
      return -1;
    }
    curl_multi_assign(l->multi, s, ctx);
  }
  int events = 0;
  if (action == CURL_POLL_IN || action == CURL_POLL_INOUT) events |= UV_READABLE;
  if (action == CURL_POLL_OUT || action == CURL_POLL_INOUT) events |= UV_WRITABLE;
  uv_poll_start(&ctx->poll, events, on_poll);
  return 0;
}

static int on_timer(CURLM *multi, long timeout_ms, void *userp) {
  (void)multi;
  xfer_loop_t *l = userp;
  if (timeout_ms < 0) {
    uv_timer_stop(&l->timer);
  } else {
    /* A 0 ms timer still runs from the loop, never from inside this callback. */
    uv_timer_start(&l->timer, on_timeout, (uint64_t)timeout_ms, 0);
  }
  return 0;
}

/* libcurl is about to close a socket: make sure no poll handle still watches it. */
static int on_close_socket(void *clientp, curl_socket_t fd) {
  xfer_loop_t *l = clientp;
  sock_ctx_t *ctx = by_fd_get(l, fd);
  if (ctx != NULL) {
    curl_multi_assign(l->multi, fd, NULL);
    sock_ctx_release(l, ctx);
  }
  return close(fd);
}

static void check_multi_info(xfer_loop_t *l) {
  CURLMsg *msg;
  int pending;
  while ((msg = curl_multi_info_read(l->multi, &pending)) != NULL) {
    if (msg->msg != CURLMSG_DONE) continue;
    CURL *easy = msg->easy_handle;
    CURLcode result = msg->data.result;
    xfer_t *job = NULL;
    curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&job);
    curl_multi_remove_handle(l->multi, easy);
    if (job != NULL) {
      job->active = 0;
      job_unlink(l, job);
      if (job->done) job->done(job, result);
    }
  }
}

xfer_loop_t *xfer_loop_new(uv_loop_t *uv) {
  xfer_loop_t *l = calloc(1, sizeof(*l));
  if (l == NULL) return NULL;
  l->uv = uv;
  l->multi = curl_multi_init();
  if (l->multi == NULL) goto fail;
  if (uv_timer_init(uv, &l->timer) != 0) goto fail;
  l->timer.data = l;
  l->handles_open = 1;
  curl_multi_setopt(l->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
  curl_multi_setopt(l->multi, CURLMOPT_SOCKETDATA, l);
  curl_multi_setopt(l->multi, CURLMOPT_TIMERFUNCTION, on_timer);
  curl_multi_setopt(l->multi, CURLMOPT_TIMERDATA, l);
  /* Keep a few idle connections to the engine for reuse. After a burst of concurrent
   * requests the rest are closed as they finish, so a long-lived client does not sit on
   * dozens of idle descriptors. */
  curl_multi_setopt(l->multi, CURLMOPT_MAXCONNECTS, 8L);
  return l;
fail:
  if (l->multi) curl_multi_cleanup(l->multi);
  free(l);
  return NULL;
}

int xfer_start(xfer_loop_t *l, xfer_t *job) {
  if (l->closing) return -1;
  curl_easy_setopt(job->easy, CURLOPT_PRIVATE, job);
  curl_easy_setopt(job->easy, CURLOPT_CLOSESOCKETFUNCTION, on_close_socket);
  curl_easy_setopt(job->easy, CURLOPT_CLOSESOCKETDATA, l);
  if (curl_multi_add_handle(l->multi, job->easy) != CURLM_OK) return -1;
  job->active = 1;
  job->prev = NULL;
  job->next = l->jobs;
  if (l->jobs) l->jobs->prev = job;
  l->jobs = job;
  return 0;
}

void xfer_stop(xfer_loop_t *l, xfer_t *job) {
  if (!job->active) return; /* never touches `l` then: it may be gone */
  job->active = 0;
  job_unlink(l, job);
  curl_multi_remove_handle(l->multi, job->easy);
}

void xfer_loop_close(xfer_loop_t *l, void (*closed)(void *), void *arg) {
  l->closing = 1;
  while (l->jobs) xfer_stop(l, l->jobs);
  l->closed = closed;
  l->closed_arg = arg;
  /* Calls on_socket(CURL_POLL_REMOVE) for every socket still watched. */
  curl_multi_cleanup(l->multi);
  l->multi = NULL;
  uv_timer_stop(&l->timer);
  uv_close((uv_handle_t *)&l->timer, on_handle_closed);
}
