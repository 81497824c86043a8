/*
 * build_task.h - an image build on the engine (anvia-sandbox create-image): the context's
 * files read from their directory into an archive, then POST /build as `docker build
 * --tag <tag>` sends it (dockerfile=Dockerfile, t=<tag>, version=1: the classic builder;
 * no registry credentials) with the archive streamed as the body, and the engine's build messages rendered as they
 * arrive (codec/buildmsg.h). An error inside the message stream fails the build even
 * though the reply was 200.
 *
 * The rendered output is handed out from the loop, never from inside libcurl: it waits
 * in a buffer (BUILD_OUT_HIGH and more pauses the reply until the reader took it), and
 * the end of the build is reported after the last of it.
 *
 * Owns: a build_task_t owns its streamed request, the archive it sends, its message
 * parser, the rendered output not yet handed out and its flush timer.
 */
#ifndef SBX_ENGINE_BUILD_H
#define SBX_ENGINE_BUILD_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/err.h"
#include "engine/engine.h"

/* Rendered output waiting above this pauses the engine's reply. */
#define BUILD_OUT_HIGH (1024 * 1024)

typedef struct build_task build_task_t;

typedef struct build_task_cbs {
  /* Rendered output, in order. The task may be freed from here. */
  void (*on_output)(void *ud, const uint8_t *data, size_t len);
  /* Once, after the last output: err NULL when the image was built (else the callee may
   * move it away); image_id is the engine's aux ID or NULL, valid during the call. The
   * task is not freed by this: free it (from here too). */
  void (*on_done)(void *ud, err_t *err, const char *image_id);
} build_task_cbs_t;

/*
 * Reads the files `names` (plain file names, at most BUILD_CONTEXT_MAX_FILES, each at
 * most BUILD_CONTEXT_MAX_FILE_BYTES) of directory `dir` and appends their archive to
 * `archive`. Neither the directory nor a file may be a symbolic link, and a file must be
 * a regular file. 0, or -1 with err set (invalid_path, file_too_large).
 */
int build_context_read(const char *dir, char *const *names, size_t n, buf_t *archive, err_t *err);

/* Starts a build of image `tag` sending `archive` (its bytes are taken; it is left
 * empty). NULL with err set when it could not start (nothing will be called). */
build_task_t *build_task_start(engine_t *e, const char *tag, buf_t *archive, const build_task_cbs_t *cbs, void *ud,
                               err_t *err);
/* Stops the build (no callback afterwards) and frees it; from a callback too. NULL is fine. */
void build_task_free(build_task_t *t);

#endif
