/*
 * stream.c - streamed engine requests (see stream.h).
 *
 * Owns: each stream_req_t's easy handle, header list, bounded error body and path stat.
 *
 * A stream_req_t is a req_core_t (engine.h) as engine.c's requests are: the same wait for
 * the engine, the same set-up of the connection (engine_easy_common: URL form, endpoint,
 * TLS files, time-outs, buffer size) on the same multi handle, so the connection pool is
 * shared, and a failure reads the same (engine_curl_error, engine_status_error). What
 * differs:
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

struct stream_req {
  req_core_t core; /* first: &core.job is the transfer */
  int upload;
  stream_req_cbs_t cbs;
  void *ud;
  buf_t resp; /* a failed reply's body */
  int resp_too_large;
  char *path_stat;
  int paused;
};

stream_req_t *stream_req_new(engine_t *e, const char *method, const char *path_fmt, ...) {
  stream_req_t *r = calloc(1, sizeof(*r));
  if (r == NULL) return NULL;
  buf_init(&r->resp, ERROR_BODY_LIMIT);
  va_list ap;
  va_start(ap, path_fmt);
  int rc = req_core_init(&r->core, e, method, path_fmt, ap);
  va_end(ap);
  if (rc != 0) {
    stream_req_free(r);
    return NULL;
  }
  return r;
}

int stream_req_set_body(stream_req_t *r, const char *content_type) {
  char header[128];
  snprintf(header, sizeof(header), "Content-Type: %s", content_type);
  r->upload = 1;
  if (req_core_add_header(&r->core, header) != 0) return -1;
  return req_core_add_header(&r->core, "Transfer-Encoding: chunked");
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
  curl_easy_getinfo(r->core.job.easy, CURLINFO_RESPONSE_CODE, &status);
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
  req_core_finished(&r->core, result);
  if (result != CURLE_OK && engine_curl_lost(result)) engine_reset(r->core.eng);
  if (trace_enabled()) {
    double total = 0;
    curl_easy_getinfo(r->core.job.easy, CURLINFO_TOTAL_TIME, &total);
    trace_event("%s %s (streamed) -> %ld (%.2f ms)", r->core.method, r->core.path, r->core.status, total * 1000);
  }
  r->cbs.on_done(r->ud, r);
}

static void fail_before_start(stream_req_t *r, const err_t *err) {
  req_core_fail_early(&r->core, err);
  r->cbs.on_done(r->ud, r);
}

static int launch(stream_req_t *r) {
  CURL *c = r->core.job.easy;
  if (r->upload) {
    curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(c, CURLOPT_UPLOAD_BUFFERSIZE, 512L * 1024L);
    curl_easy_setopt(c, CURLOPT_READFUNCTION, on_read);
    curl_easy_setopt(c, CURLOPT_READDATA, r);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, r->core.method);
  } else if (strcmp(r->core.method, "GET") == 0) {
    curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
  } else {
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, r->core.method);
  }
  return req_core_launch(&r->core, 1, NULL, on_header, on_write, r, on_job_done);
}

static void on_engine_ready(engine_waiter_t *w, const err_t *err) {
  stream_req_t *r = (stream_req_t *)((char *)w - offsetof(stream_req_t, core.waiter));
  if (err != NULL) {
    fail_before_start(r, err);
    return;
  }
  if (launch(r) != 0) fail_before_start(r, NULL);
}

int stream_req_start(stream_req_t *r, const stream_req_cbs_t *cbs, void *ud, err_t *err) {
  r->cbs = *cbs;
  r->ud = ud;
  int rc = req_core_wait(&r->core, on_engine_ready, err);
  if (rc < 0) return -1;
  if (rc == 1 && launch(r) != 0) {
    r->core.state = REQ_NEW;
    return err_oom(err);
  }
  return 0;
}

void stream_req_resume(stream_req_t *r) {
  if (r == NULL || r->core.state != REQ_RUNNING || !r->paused) return;
  r->paused = 0;
  curl_easy_pause(r->core.job.easy, CURLPAUSE_CONT);
}

void stream_req_free(stream_req_t *r) {
  if (r == NULL) return;
  req_core_stop(&r->core);
  req_core_clear(&r->core);
  buf_free(&r->resp);
  free(r->path_stat);
  free(r);
}

int stream_req_ok(const stream_req_t *r) {
  const req_core_t *q = &r->core;
  return q->state == REQ_DONE && !err_is_set(&q->pre_err) && q->curl_result == CURLE_OK && q->status >= 200 &&
         q->status < 300;
}

int stream_req_not_found(const stream_req_t *r) {
  return r->core.state == REQ_DONE && !err_is_set(&r->core.pre_err) && r->core.status == 404;
}

const char *stream_req_path_stat(const stream_req_t *r) { return r->path_stat; }

/* The engine's error text of a failed reply ("message" of its JSON). Caller frees. */
static char *stream_req_engine_message(const stream_req_t *r) { return http_error_message(r->resp.data, r->resp.len); }

int stream_req_error(const stream_req_t *r, err_t *err) {
  const req_core_t *q = &r->core;
  if (err_is_set(&q->pre_err)) return err_copy(err, &q->pre_err);
  /* A reply that came with its status is the engine's answer, even if the upload was cut. */
  if (q->status >= 300 && !r->resp_too_large && (q->curl_result == CURLE_OK || r->resp.len > 0)) {
    char *msg = stream_req_engine_message(r);
    engine_status_error(q->method, q->path, q->status, msg, err);
    free(msg);
    return -1;
  }
  if (q->curl_result != CURLE_OK)
    return engine_curl_error(q->eng, q->method, q->path, q->curl_result, q->status, q->errbuf, r->resp_too_large,
                             ERROR_BODY_LIMIT, err);
  return 0;
}
