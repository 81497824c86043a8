/*
 * buildmsg.h - what an image build sends and reads (anvia-sandbox create-image):
 *
 *  - the build context: a few named files of one directory as a tar archive (through
 *    tar.h, libarchive), each a plain file name at the top of the archive, owned by 0:0
 *    as the docker CLI sends them;
 *  - the build's message stream, one JSON message a line (POST /build's reply), rendered
 *    for a reader as `docker build` (the classic builder) prints it: "stream" text as it
 *    is, "status" lines with their id, progress updates not shown; with the image id of
 *    the "aux" message and the first error (errorDetail, or error) kept. An error ends
 *    the stream: nothing after it is rendered, as the docker CLI stops reading there.
 *
 * The stream is the engine's, so it is untrusted: a line is at most BUILD_MAX_LINE bytes
 * (a longer one fails the build), the image id kept at most BUILD_MAX_IMAGE_ID bytes.
 * One message renders to at most its JSON text plus BUILD_RENDER_EXTRA bytes (its strings
 * are never longer decoded than encoded; the rest is a time prefix and separators).
 *
 * Owns: a build_stream_t owns its partial line and the texts it found (error, image id,
 * the reason it stopped). Rendered output goes to the caller's buffer.
 */
#ifndef SBX_BUILDMSG_H
#define SBX_BUILDMSG_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "base/buf.h"
#include "base/err.h"

#define BUILD_MAX_LINE (1024 * 1024)
#define BUILD_MAX_IMAGE_ID 256
#define BUILD_RENDER_EXTRA 64
/* The context: at most this many files, each at most this many bytes. */
#define BUILD_CONTEXT_MAX_FILES 16
#define BUILD_CONTEXT_MAX_FILE_BYTES (1024 * 1024)

typedef struct build_stream {
  buf_t line;
  char *error;     /* the first error the engine reported */
  int error_code;  /* its errorDetail.code (0 when none) */
  char *image_id;  /* aux.ID */
  char *broken;    /* why the stream itself was refused (malformed, overlong) */
  int stopped;     /* an error or a refusal: nothing more is read */
} build_stream_t;

void build_stream_init(build_stream_t *s);
void build_stream_free(build_stream_t *s);
/* Feeds reply bytes (pieces of any size), appending what to show to `out`. 0, or -1 when
 * memory ran out (or `out` is full). After the stream stopped, bytes are ignored. */
int build_stream_feed(build_stream_t *s, const uint8_t *data, size_t len, buf_t *out);
/* The reply ended: renders a last line that had no newline. 0, or -1 out of memory. */
int build_stream_finish(build_stream_t *s, buf_t *out);
/* -1 with err set (docker_command_failed) when the stream reported an error or was
 * refused; 0 when it did not. */
int build_stream_failure(const build_stream_t *s, err_t *err);

/* Go's units.HumanSize: 4 significant digits, powers of 1000 ("2.048kB", "512B"). */
void build_human_size(double size, char out[32]);
/* The docker CLI's line once the context is sent:
 * "Sending build context to Docker daemon  2.048kB\r\r\n". 0, or -1 out of memory. */
int build_context_line(uint64_t bytes, buf_t *out);

/* One file of the context. */
typedef struct build_file {
  const char *name; /* a plain file name: no "/", not "." or ".." */
  const uint8_t *data;
  size_t len;
  unsigned mode; /* permission bits */
  time_t mtime;
} build_file_t;

/* 1 when `name` can be a context file's name. */
int build_context_name_ok(const char *name);
/* Appends the context archive of `files` (in order) to `out`. 0, or -1 with err set
 * (invalid_path for a bad or repeated name, too many files or bytes). */
int build_context_archive(const build_file_t *files, size_t n, buf_t *out, err_t *err);

#endif
