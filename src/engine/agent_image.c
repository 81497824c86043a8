/*
 * agent_image.c - the agent binaries of an I/O context (see agent_image.h).
 */
#include "engine/agent_image.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/sha256.h"

static void images_free(io_t *io) {
  while (io->agent_images) {
    agent_image_t *img = io->agent_images;
    io->agent_images = img->next;
    free(img->data);
    free(img);
  }
  free(io->agent_dir);
  io->agent_dir = NULL;
}

int agent_images_set_dir(io_t *io, const char *dir) {
  char *copy = strdup(dir);
  if (copy == NULL || io_on_close(io, images_free) != 0) {
    free(copy);
    return -1;
  }
  free(io->agent_dir);
  io->agent_dir = copy;
  return 0;
}

static const char *arch_name(const char *engine_arch) {
  if (engine_arch == NULL) return NULL;
  if (strcmp(engine_arch, "amd64") == 0 || strcmp(engine_arch, "x86_64") == 0) return "x86_64";
  if (strcmp(engine_arch, "arm64") == 0 || strcmp(engine_arch, "aarch64") == 0) return "aarch64";
  return NULL;
}

/* The whole file, bounded. 0, or -1 with err set. */
static int read_file(const char *path, buf_t *out, err_t *err) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return err_sandbox(err, CODE_DOCKER_UNAVAILABLE, "The sandbox agent binary %s cannot be opened: %s", path, strerror(errno));
  buf_init(out, AGENT_MAX_IMAGE_BYTES);
  uint8_t chunk[65536];
  for (;;) {
    ssize_t n = read(fd, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 || buf_append(out, chunk, (size_t)(n > 0 ? n : 0)) != 0) {
      err_sandbox(err, CODE_DOCKER_UNAVAILABLE, "The sandbox agent binary %s cannot be read: %s", path,
                  n < 0 ? strerror(errno) : "too large");
      close(fd);
      buf_free(out);
      return -1;
    }
    if (n == 0) break;
  }
  close(fd);
  return 0;
}

const agent_image_t *agent_image_for(io_t *io, const char *engine_arch, err_t *err) {
  const char *arch = arch_name(engine_arch);
  if (arch == NULL) {
    err_sandbox(err, CODE_DOCKER_UNAVAILABLE, "No sandbox agent is built for the engine's architecture (%s).",
                engine_arch ? engine_arch : "unknown");
    return NULL;
  }
  for (agent_image_t *img = io->agent_images; img != NULL; img = img->next)
    if (strcmp(img->arch, arch) == 0) return img;
  if (io->agent_dir == NULL) {
    err_sandbox(err, CODE_DOCKER_UNAVAILABLE, "The sandbox agent's directory is not known.");
    return NULL;
  }
  char path[4096];
  if (snprintf(path, sizeof(path), "%s/%s/anvia-agent", io->agent_dir, arch) >= (int)sizeof(path)) {
    err_sandbox(err, CODE_DOCKER_UNAVAILABLE, "The sandbox agent's directory name is too long.");
    return NULL;
  }
  buf_t bytes;
  if (read_file(path, &bytes, err) != 0) return NULL;
  agent_image_t *img = calloc(1, sizeof(*img));
  if (img == NULL) {
    buf_free(&bytes);
    err_oom(err);
    return NULL;
  }
  snprintf(img->arch, sizeof(img->arch), "%s", arch);
  img->data = (uint8_t *)buf_steal(&bytes, &img->len);
  char hex[65];
  sha256_hex(img->data, img->len, hex);
  memcpy(img->hash, hex, 16);
  img->hash[16] = 0;
  snprintf(img->path, sizeof(img->path), "/.anvia/agent-%s", img->hash);
  img->next = io->agent_images;
  io->agent_images = img;
  return img;
}
