/*
 * execreply.c - the exec start reply (see execreply.h).
 */
#include "codec/execreply.h"

#include <stdlib.h>
#include <string.h>

#include "codec/httphead.h"

void exec_reply_init(exec_reply_t *r) {
  memset(r, 0, sizeof(*r));
  r->state = XR_HEAD;
  r->content_length = -1;
  buf_init(&r->head, EXEC_REPLY_MAX_HEAD);
  buf_init(&r->error_body, EXEC_REPLY_MAX_ERROR_BODY);
  frame_demux_init(&r->demux);
}

void exec_reply_set_raw(exec_reply_t *r) { r->raw = 1; }

void exec_reply_free(exec_reply_t *r) {
  buf_free(&r->head);
  buf_free(&r->error_body);
}

/* The engine's refusal, from the error body kept so far. */
static void refusal(exec_reply_t *r, err_t *err) {
  const uint8_t *body = r->error_body.data ? r->error_body.data : (const uint8_t *)"";
  size_t len = r->error_body.len;
  buf_t decoded;
  buf_init(&decoded, EXEC_REPLY_MAX_ERROR_BODY);
  if (r->chunked) {
    http_dechunk(body, len, EXEC_REPLY_MAX_ERROR_BODY, &decoded);
    body = decoded.data ? decoded.data : (const uint8_t *)"";
    len = decoded.len;
  }
  char *msg = http_error_message(body, len);
  buf_free(&decoded);
  err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, "Docker engine refused to start the exec (%ld): %s", r->status,
              msg ? msg : "");
  err_set_details(err, json_pack("{s:I, s:s, s:s, s:s}", "statusCode", (json_int_t)r->status, "message", msg ? msg : "",
                                 "method", "POST", "path", "/exec/start"));
  free(msg);
  r->state = XR_DONE;
}

/* Keeps error body bytes, never more than its Content-Length (or the bound). */
static void keep_error_body(exec_reply_t *r, const uint8_t *data, size_t len) {
  size_t room = EXEC_REPLY_MAX_ERROR_BODY - r->error_body.len;
  if (!r->chunked && r->content_length >= 0) {
    size_t want = (size_t)r->content_length > r->error_body.len ? (size_t)r->content_length - r->error_body.len : 0;
    if (want < room) room = want;
  }
  buf_append(&r->error_body, data, len < room ? len : room);
}

/* Complete when its length is reached, its last chunk has come, or the bound is hit. */
static int error_body_complete(exec_reply_t *r) {
  if (r->error_body.len >= EXEC_REPLY_MAX_ERROR_BODY) return 1;
  if (r->chunked) {
    buf_t scratch;
    buf_init(&scratch, EXEC_REPLY_MAX_ERROR_BODY);
    int rc = http_dechunk(r->error_body.data, r->error_body.len, EXEC_REPLY_MAX_ERROR_BODY, &scratch);
    buf_free(&scratch);
    return rc != 0;
  }
  return r->content_length >= 0 && r->error_body.len >= (size_t)r->content_length;
}

typedef struct demux_ctx {
  const exec_reply_callbacks_t *cbs;
  void *ud;
  int stopped;
} demux_ctx_t;

static int on_frame(void *ud, int stream, const uint8_t *data, size_t len) {
  demux_ctx_t *c = ud;
  if (c->cbs->on_output(c->ud, stream, data, len) != 0) c->stopped = 1;
  return c->stopped;
}

static int feed_stream(exec_reply_t *r, const uint8_t *data, size_t len, const exec_reply_callbacks_t *cbs, void *ud,
                       err_t *err) {
  if (r->raw) return len == 0 || cbs->on_output(ud, FRAME_STDOUT, data, len) == 0 ? 0 : 2;
  demux_ctx_t c = {cbs, ud, 0};
  size_t consumed = 0;
  if (frame_demux_feed(&r->demux, data, len, &consumed, on_frame, &c, err) < 0) {
    r->state = XR_DONE;
    return 1;
  }
  return c.stopped ? 2 : 0;
}

static int feed_error_body(exec_reply_t *r, const uint8_t *data, size_t len, err_t *err) {
  keep_error_body(r, data, len);
  if (!error_body_complete(r)) return 0;
  refusal(r, err);
  return 1;
}

/* The head is complete in r->head (head_len bytes); `rest` follows it. */
static int head_done(exec_reply_t *r, size_t head_len, const uint8_t *rest, size_t rest_len,
                     const exec_reply_callbacks_t *cbs, void *ud, err_t *err) {
  const uint8_t *head = r->head.data;
  r->status = http_head_status(head, head_len);
  if (r->status < 0) {
    err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, "Docker engine sent a malformed response to exec start.");
    r->state = XR_DONE;
    return 1;
  }
  int json_reply = http_head_header_is(head, head_len, "Content-Type", "application/json");
  r->chunked = http_head_header_is(head, head_len, "Transfer-Encoding", "chunked");
  if (r->status == 101 || (r->status == 200 && !json_reply)) {
    /* 101, or 200 from older engines that still hijack: the stream starts here. */
    r->state = XR_STREAM;
    buf_free(&r->head);
    if (cbs->on_stream) cbs->on_stream(ud);
    return rest_len > 0 ? feed_stream(r, rest, rest_len, cbs, ud, err) : 0;
  }
  r->content_length = http_head_content_length(head, head_len);
  r->state = XR_ERROR_BODY;
  buf_free(&r->head);
  return feed_error_body(r, rest, rest_len, err);
}

int exec_reply_feed(exec_reply_t *r, const uint8_t *data, size_t len, const exec_reply_callbacks_t *cbs, void *ud,
                    err_t *err) {
  switch (r->state) {
    case XR_HEAD: {
      /* Only the head goes into the head buffer (bounded); what follows it in the same
       * read is handed on. The blank line may straddle reads: look again from a little
       * before the new bytes. */
      size_t before = r->head.len;
      size_t room = EXEC_REPLY_MAX_HEAD - before;
      size_t take = len < room ? len : room;
      if (buf_append(&r->head, data, take) != 0) {
        err_oom(err);
        r->state = XR_DONE;
        return 1;
      }
      size_t head_len = http_head_end(r->head.data, r->head.len);
      if (head_len == 0) {
        if (r->head.len < EXEC_REPLY_MAX_HEAD) return 0;
        err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, "Docker engine sent an oversized response head.");
        r->state = XR_DONE;
        return 1;
      }
      /* Bytes of this read after the head: those of the buffer past head_len (all from
       * this read), then what did not fit in the buffer. */
      size_t used = head_len - before;
      return head_done(r, head_len, data + used, len - used, cbs, ud, err);
    }
    case XR_STREAM:
      return feed_stream(r, data, len, cbs, ud, err);
    case XR_ERROR_BODY:
      return feed_error_body(r, data, len, err);
    default:
      return 1;
  }
}

void exec_reply_eof(exec_reply_t *r, err_t *err) {
  switch (r->state) {
    case XR_STREAM:
      if (!r->raw) frame_demux_finish(&r->demux, err);
      break;
    case XR_ERROR_BODY:
      refusal(r, err);
      break;
    case XR_HEAD:
      err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, "Docker engine closed the connection before answering exec start.");
      break;
    default:
      break;
  }
  r->state = XR_DONE;
}
