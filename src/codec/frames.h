/*
 * frames.h - the engine's multiplexed exec stream, demultiplexed incrementally.
 *
 * Owns: nothing beyond the 8-byte header being assembled.
 * Each frame is an 8-byte header (stream byte, three bytes the engine leaves zero,
 * 4-byte big-endian payload length) then the payload. Payloads are passed on as they
 * arrive, in pieces, so a frame announcing 4 GiB costs no allocation: memory stays
 * bounded by the read buffer whatever the length says.
 */
#ifndef SBX_FRAMES_H
#define SBX_FRAMES_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

enum { FRAME_STDIN = 0, FRAME_STDOUT = 1, FRAME_STDERR = 2, FRAME_SYSTEMERR = 3 };

typedef struct frame_demux {
  uint8_t hdr[8];
  size_t hdr_len;
  uint64_t remaining; /* payload bytes left in the current frame */
  int stream;
  /* A systemerr frame (type 3) carries the engine's error text: collected here, bounded. */
  char syserr[1024];
  size_t syserr_len;
} frame_demux_t;

/* Called for every payload piece of a stdout (1) or stderr (2) frame; stdin (0) frames
 * are reported as stdout, as Docker's own stdcopy does. Zero-length frames produce no
 * call. Return 0 to go on, nonzero (-1) to stop: the piece just passed counts as consumed,
 * so feeding the rest of the data later resumes exactly where the stream was. */
typedef int (*frame_cb)(void *ud, int stream, const uint8_t *data, size_t len);

void frame_demux_init(frame_demux_t *d);
/*
 * Feeds bytes. Returns 0, 1 when the callback asked to stop (the rest of `data` was not
 * consumed; *consumed says how much was), or -1 with err set: a frame type other than
 * 0, 1, 2 ("Docker engine sent an unknown stream type: N"), or a system error frame
 * ("Docker engine reported an error: <text>"), both docker_command_failed.
 */
int frame_demux_feed(frame_demux_t *d, const uint8_t *data, size_t len, size_t *consumed, frame_cb cb,
                     void *ud, err_t *err);
/* At end of stream: -1 with err set when a header or payload was cut short.
 * After feed returned -1 the demuxer is not fed again (an unknown type stays an error). */
int frame_demux_finish(const frame_demux_t *d, err_t *err);

#endif
