/*
 * agent_image.h - the in-sandbox agent's binary as the host ships it: one static
 * executable per architecture, read from the directory the package says
 * (<dir>/<arch>/anvia-agent), and named by its content hash, so an agent left in a
 * resumed sandbox by another version of the package is never the one a client talks to.
 *
 * Owns: the loaded images of one I/O context (io_t.agent_images), freed when it closes.
 */
#ifndef SBX_AGENT_IMAGE_H
#define SBX_AGENT_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "engine/io.h"

#define AGENT_MAX_IMAGE_BYTES (16u * 1024u * 1024u)

typedef struct agent_image {
  char arch[16];     /* "x86_64", "aarch64" */
  uint8_t *data;
  size_t len;
  char hash[17];     /* the first 16 hex digits of the SHA-256 of the bytes */
  char path[64];     /* where it goes in a container: /.anvia/agent-<hash> */
  struct agent_image *next;
} agent_image_t;

/* Where the images are (set by the JavaScript side at init; the package's or a checkout's
 * build directory). The string is copied. 0, or -1 when out of memory. */
int agent_images_set_dir(io_t *io, const char *dir);
/* The image for an engine's architecture ("amd64", "x86_64", "arm64", "aarch64"), loaded
 * once per I/O context. NULL with err set when there is none (no directory, no binary for
 * that architecture, unreadable). */
const agent_image_t *agent_image_for(io_t *io, const char *engine_arch, err_t *err);

#endif
