/*
 * frames.c - incremental demultiplexer of the engine's exec stream (see frames.h).
 *
 * Owns: nothing allocated. The state is the 8-byte header being assembled, the bytes
 * left in the current payload and the bounded text of a systemerr frame; payload bytes
 * go to the callback straight from the caller's buffer, so the memory used does not
 * depend on any length the engine announces.
 */
#include "codec/frames.h"

#include <string.h>

#define HDR_LEN 8

void frame_demux_init(frame_demux_t *d) { memset(d, 0, sizeof(*d)); }

static int stream_known(int stream) { return stream >= FRAME_STDIN && stream <= FRAME_SYSTEMERR; }

/* The engine's error text of a systemerr frame, without its trailing newline. */
static int systemerr_error(const frame_demux_t *d, err_t *err) {
  size_t n = d->syserr_len;
  while (n > 0 && (d->syserr[n - 1] == '\n' || d->syserr[n - 1] == '\r' || d->syserr[n - 1] == ' ')) n--;
  return err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, "Docker engine reported an error: %.*s", (int)n, d->syserr);
}

int frame_demux_feed(frame_demux_t *d, const uint8_t *data, size_t len, size_t *consumed, frame_cb cb,
                     void *ud, err_t *err) {
  size_t i = 0;
  int rc = 0;
  /* A stream that failed on an unknown type stays failed: its framing is lost. */
  if (d->hdr_len == HDR_LEN && !stream_known(d->stream)) goto unknown;
  while (i < len || (d->hdr_len == HDR_LEN && d->remaining == 0)) {
    if (d->hdr_len < HDR_LEN) {
      size_t take = HDR_LEN - d->hdr_len;
      if (take > len - i) take = len - i;
      memcpy(d->hdr + d->hdr_len, data + i, take);
      d->hdr_len += take;
      i += take;
      if (d->hdr_len < HDR_LEN) break;
      d->stream = d->hdr[0];
      d->remaining = ((uint64_t)d->hdr[4] << 24) | ((uint64_t)d->hdr[5] << 16) | ((uint64_t)d->hdr[6] << 8) |
                     (uint64_t)d->hdr[7];
      d->syserr_len = 0;
      if (!stream_known(d->stream)) goto unknown;
      continue; /* a zero-length frame ends right here, on the next turn */
    }
    if (d->remaining == 0) {
      /* End of the current frame. */
      if (d->stream == FRAME_SYSTEMERR) {
        rc = systemerr_error(d, err);
        d->hdr_len = 0; /* the frame is over: what follows is a new frame */
        d->syserr_len = 0;
        goto out;
      }
      d->hdr_len = 0;
      continue;
    }
    size_t n = len - i;
    if ((uint64_t)n > d->remaining) n = (size_t)d->remaining;
    const uint8_t *piece = data + i;
    i += n;
    d->remaining -= n;
    if (d->stream == FRAME_SYSTEMERR) {
      size_t room = sizeof(d->syserr) - 1 - d->syserr_len;
      size_t keep = n < room ? n : room;
      memcpy(d->syserr + d->syserr_len, piece, keep);
      d->syserr_len += keep;
      d->syserr[d->syserr_len] = 0;
      continue;
    }
    if (d->remaining == 0) d->hdr_len = 0; /* the frame is over before the callback runs */
    int stream = d->stream == FRAME_STDIN ? FRAME_STDOUT : d->stream;
    if (cb != NULL && cb(ud, stream, piece, n) != 0) {
      rc = 1;
      goto out;
    }
  }
out:
  if (consumed) *consumed = i;
  return rc;
unknown:
  if (consumed) *consumed = i;
  return err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, "Docker engine sent an unknown stream type: %d", d->stream);
}

int frame_demux_finish(const frame_demux_t *d, err_t *err) {
  if (d->hdr_len == 0) return 0;
  if (d->hdr_len < HDR_LEN)
    return err_sandbox(err, CODE_DOCKER_COMMAND_FAILED,
                       "Docker engine ended the exec stream inside a frame header (%zu of 8 bytes).", d->hdr_len);
  if (!stream_known(d->stream))
    return err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, "Docker engine sent an unknown stream type: %d", d->stream);
  if (d->remaining > 0)
    return err_sandbox(err, CODE_DOCKER_COMMAND_FAILED,
                       "Docker engine ended the exec stream inside a frame (%llu payload bytes missing).",
                       (unsigned long long)d->remaining);
  /* A complete frame whose end was not yet noticed (only a systemerr frame can be here). */
  if (d->stream == FRAME_SYSTEMERR) return systemerr_error(d, err);
  return 0;
}
