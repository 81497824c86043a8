/*
 * agent_place.c - the agent's binary placed through the archive endpoint, and the
 * engine's architecture (see agent_place.h).
 *
 * Owns: nothing beyond the requests it hands back (the caller's) and, while building one,
 * the archive (moved into the request's body).
 */
#include "engine/agent_place.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "codec/lifetime_cmd.h"
#include "codec/tar.h"

http_req_t *agent_version_req(engine_t *eng) { return http_req_new(eng, "GET", "/version"); }

int agent_version_answer(engine_t *eng, http_req_t *req, err_t *err) {
  if (!http_req_ok(req)) {
    http_req_error(req, err);
    return -1;
  }
  json_t *j = http_req_json(req, err);
  if (j == NULL) return -1;
  json_t *arch = json_object_get(j, "Arch");
  if (json_is_string(arch)) engine_set_arch(eng, json_string_value(arch));
  json_decref(j);
  return 0;
}

const agent_image_t *agent_place_image(engine_t *eng, err_t *err) {
  return agent_image_for(engine_io(eng), engine_arch(eng), err);
}

http_req_t *agent_upload_req(engine_t *eng, const char *container, const agent_image_t *img, const char *name,
                             err_t *err) {
  char rel[96];
  if (snprintf(rel, sizeof(rel), ".anvia/%s", name) >= (int)sizeof(rel)) {
    err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, "The agent's name is too long: %s", name);
    return NULL;
  }
  tar_entry_spec_t entries[2] = {
      {.path = ".anvia", .is_dir = 1, .mode = 0755},
      {.path = rel, .data = img->data, .len = img->len, .mode = 0755},
  };
  buf_t tarball;
  buf_init(&tarball, 0);
  char *esc = url_escape(container);
  http_req_t *req = NULL;
  if (esc == NULL || tar_build(entries, 2, &tarball, err) != 0) goto fail;
  req = http_req_new(eng, "PUT", "/containers/%s/archive?path=%%2F&noOverwriteDirNonDir=true", esc);
  if (req == NULL || http_req_take_body(req, &tarball, "application/x-tar") != 0) goto fail;
  free(esc);
  return req;
fail:
  http_req_free(req);
  buf_free(&tarball);
  free(esc);
  if (!err_is_set(err)) err_oom(err);
  return NULL;
}

http_req_t *agent_init_upload_req(engine_t *eng, const char *container, err_t *err) {
  const agent_image_t *img = agent_place_image(eng, err);
  return img != NULL ? agent_upload_req(eng, container, img, LIFETIME_INIT_NAME, err) : NULL;
}
