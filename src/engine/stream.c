/*
 * stream.c - streamed engine requests (see stream.h).
 *
 * Owns: each stream_req_t's easy handle, header list, bounded error body and path stat.
 *
 * The connection is set up by the same function as engine.c's requests
 * (engine_easy_common: URL form, endpoint, TLS files, time-outs, buffer size), on the same
 * multi handle, so the connection pool is shared, and a failure reads the same
 * (engine_curl_error, engine_status_error). What differs:
 *  - an upload is sent with Transfer-Encoding: chunked from a read callback that may
 *    answer "pause" (CURL_READFUNC_PAUSE) when the producer has nothing yet;
 *  - a download's bytes go to on_data, which may answer "pause" (CURL_WRITEFUNC_PAUSE:
 *    libcurl keeps those bytes and stops reading the socket, so the engine's writes block);
 *  - stream_req_resume un-pauses both (curl_easy_pause(CURLPAUSE_CONT), which makes libcurl
 *    ask the loop for a run at once, through the multi handle's timer callback).
 */
#include "engine/stream.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/trace.h"
#include "codec/httphead.h"

#define ERROR_BODY_LIMIT (64 * 1024)

enum { SR_NEW = 0, SR_WAITING, SR_RUNNING, SR_DONE };

struct stream_req {
  xfer_t job; /* first: the multi handle's private pointer is &job */
  engine_waiter_t waiter;
  engine_t *eng;
  char *method;
  char *path;
  struct curl_slist *headers;
  int upload;
  stream_req_cbs_t cbs;
  void *ud;
  buf_t resp; /* a failed reply's body */
  int resp_too_large;
  long status;
  char *path_stat;
  CURLcode curl_result;
  err_t pre_err;
  int state;
  int paused;
  char errbuf[CURL_ERROR_SIZE];
};

stream_req_t *stream_req_new(engine_t *e, const char *method, const char *path_fmt, ...) {
  stream_req_t *r = calloc(1, sizeof(*r));
  if (r == NULL) return NULL;
  r->eng = e;
  engine_ref(e);
  buf_init(&r->resp, ERROR_BODY_LIMIT);
  err_init(&r->pre_err);
  r->method = strdup(method);
  va_list ap;
  va_start(ap, path_fmt);
  r->path = str_vformat(path_fmt, ap);
  va_end(ap);
  r->job.easy = curl_easy_init();
  if (r->method == NULL || r->path == NULL || r->job.easy == NULL) {
    stream_req_free(r);
    return NULL;
  }
  return r;
}

static int add_header(stream_req_t *r, const char *h) {
  struct curl_slist *l = curl_slist_append(r->headers, h);
  if (l == NULL) return -1;
  r->headers = l;
  return 0;
}

int stream_req_set_body(stream_req_t *r, const char *content_type) {
  char header[128];
  snprintf(header, sizeof(header), "Content-Type: %s", content_type);
  r->upload = 1;
  if (add_header(r, header) != 0 || add_header(r, "Transfer-Encoding: chunked") != 0) return -1;
  return 0;
}

/* ---- libcurl callbacks: no libcurl call, no JavaScript ---- */

static size_t on_header(char *data, size_t size, size_t nmemb, void *ud) {
  stream_req_t *r = ud;
  size_t len = size * nmemb;
  char *v = http_header_line_value((const uint8_t *)data, len, "X-Docker-Container-Path-Stat");
  if (v != NULL) {
    free(r->path_stat);
    r->path_stat = v;
  }
  return len;
}

static size_t on_write(char *data, size_t size, size_t nmemb, void *ud) {
  stream_req_t *r = ud;
  size_t len = size * nmemb;
  long status = 0;
  curl_easy_getinfo(r->job.easy, CURLINFO_RESPONSE_CODE, &status);
  if (status >= 200 && status < 300 && r->cbs.on_data != NULL) {
    int rc = r->cbs.on_data(r->ud, (const uint8_t *)data, len);
    if (rc > 0) {
      r->paused = 1;
      return CURL_WRITEFUNC_PAUSE;
    }
    return rc < 0 ? 0 : len;
  }
  if (buf_append(&r->resp, data, len) != 0) {
    r->resp_too_large = 1;
    return 0;
  }
  return len;
}

static size_t on_read(char *buf, size_t size, size_t nitems, void *ud) {
  stream_req_t *r = ud;
  size_t n = r->cbs.on_body(r->ud, (uint8_t *)buf, size * nitems);
  if (n == STREAM_BODY_PAUSE) {
    r->paused = 1;
    return CURL_READFUNC_PAUSE;
  }
  if (n == STREAM_BODY_ABORT) return CURL_READFUNC_ABORT;
  return n;
}

/* ---- lifecycle ---- */

static void on_job_done(xfer_t *job, CURLcode result) {
  stream_req_t *r = (stream_req_t *)job;
  r->curl_result = result;
  curl_easy_getinfo(r->job.easy, CURLINFO_RESPONSE_CODE, &r->status);
  r->state = SR_DONE;
  if (result != CURLE_OK && engine_curl_lost(result)) engine_reset(r->eng);
  if (trace_enabled()) {
    double total = 0;
    curl_easy_getinfo(r->job.easy, CURLINFO_TOTAL_TIME, &total);
    trace_event("%s %s (streamed) -> %ld (%.2f ms)", r->method, r->path, r->status, total * 1000);
  }
  r->cbs.on_done(r->ud, r);
}

static void fail_before_start(stream_req_t *r, const err_t *err) {
  if (err) {
    err_copy(&r->pre_err, err);
  } else {
    err_oom(&r->pre_err);
  }
  r->state = SR_DONE;
  r->cbs.on_done(r->ud, r);
}

static int launch(stream_req_t *r) {
  engine_t *e = r->eng;
  CURL *c = r->job.easy;
  if (engine_easy_common(e, c, r->path, 1, NULL, r->errbuf, on_header, on_write, r) != 0) return -1;
  if (r->upload) {
    curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(c, CURLOPT_UPLOAD_BUFFERSIZE, 512L * 1024L);
    curl_easy_setopt(c, CURLOPT_READFUNCTION, on_read);
    curl_easy_setopt(c, CURLOPT_READDATA, r);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, r->method);
  } else if (strcmp(r->method, "GET") == 0) {
    curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
  } else {
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, r->method);
  }
  if (add_header(r, "Expect:") != 0) return -1;
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, r->headers);
  r->job.done = on_job_done;
  r->state = SR_RUNNING;
  if (xfer_start(engine_io(e)->xfers, &r->job) != 0) {
    r->state = SR_NEW;
    return -1;
  }
  return 0;
}

static void on_engine_ready(engine_waiter_t *w, const err_t *err) {
  stream_req_t *r = (stream_req_t *)((char *)w - offsetof(stream_req_t, waiter));
  if (err != NULL) {
    fail_before_start(r, err);
    return;
  }
  if (launch(r) != 0) fail_before_start(r, NULL);
}

int stream_req_start(stream_req_t *r, const stream_req_cbs_t *cbs, void *ud, err_t *err) {
  r->cbs = *cbs;
  r->ud = ud;
  r->waiter.fn = on_engine_ready;
  r->state = SR_WAITING;
  int rc = engine_when_ready(r->eng, &r->waiter, err);
  if (rc < 0) {
    r->state = SR_NEW;
    return -1;
  }
  if (rc == 1 && launch(r) != 0) {
    r->state = SR_NEW;
    return err_oom(err);
  }
  return 0;
}

void stream_req_resume(stream_req_t *r) {
  if (r == NULL || r->state != SR_RUNNING || !r->paused) return;
  r->paused = 0;
  curl_easy_pause(r->job.easy, CURLPAUSE_CONT);
}

void stream_req_free(stream_req_t *r) {
  if (r == NULL) return;
  if (r->state == SR_WAITING) engine_cancel_wait(r->eng, &r->waiter);
  if (r->state == SR_RUNNING) xfer_stop(engine_io(r->eng)->xfers, &r->job);
  if (r->job.easy) curl_easy_cleanup(r->job.easy);
  curl_slist_free_all(r->headers);
  buf_free(&r->resp);
  free(r->method);
  free(r->path);
  free(r->path_stat);
  err_clear(&r->pre_err);
  engine_unref(r->eng);
  free(r);
}

int stream_req_ok(const stream_req_t *r) {
  return r->state == SR_DONE && !err_is_set(&r->pre_err) && r->curl_result == CURLE_OK && r->status >= 200 &&
         r->status < 300;
}

int stream_req_not_found(const stream_req_t *r) {
  return r->state == SR_DONE && !err_is_set(&r->pre_err) && r->status == 404;
}

const char *stream_req_path_stat(const stream_req_t *r) { return r->path_stat; }

/* The engine's error text of a failed reply ("message" of its JSON). Caller frees. */
static char *stream_req_engine_message(const stream_req_t *r) { return http_error_message(r->resp.data, r->resp.len); }

int stream_req_error(const stream_req_t *r, err_t *err) {
  if (err_is_set(&r->pre_err)) return err_copy(err, &r->pre_err);
  engine_t *e = r->eng;
  /* A reply that came with its status is the engine's answer, even if the upload was cut. */
  if (r->status >= 300 && !r->resp_too_large && (r->curl_result == CURLE_OK || r->resp.len > 0)) {
    char *msg = stream_req_engine_message(r);
    engine_status_error(r->method, r->path, r->status, msg, err);
    free(msg);
    return -1;
  }
  if (r->curl_result != CURLE_OK)
    return engine_curl_error(e, r->method, r->path, r->curl_result, r->status, r->errbuf, r->resp_too_large,
                             ERROR_BODY_LIMIT, err);
  return 0;
}
