/*
 * agent_place.h - putting the agent's binary into a container through the engine's
 * archive endpoint, and learning which binary the engine needs (its architecture).
 * Used by the agent's connection (engine/agent_conn.c, a running container) and by the
 * lifecycle steps that place the limits' init before a container starts (create,
 * resume, fork: codec/lifetime_cmd.h).
 *
 * Owns: nothing; each function returns a request the caller starts and frees.
 */
#ifndef SBX_AGENT_PLACE_H
#define SBX_AGENT_PLACE_H

#include "base/err.h"
#include "engine/agent_image.h"
#include "engine/engine.h"

/* GET /version, once per engine: its answer names the architecture. NULL when out of memory. */
http_req_t *agent_version_req(engine_t *eng);
/* The answer to agent_version_req: the engine's architecture recorded (engine_set_arch).
 * 0, or -1 with err set (the engine's error, or invalid JSON). */
int agent_version_answer(engine_t *eng, http_req_t *req, err_t *err);
/* The binary for the engine's architecture (engine_arch must be known). NULL with err set
 * when the package has none for it. */
const agent_image_t *agent_place_image(engine_t *eng, err_t *err);
/* PUT /containers/<container>/archive?path=/&noOverwriteDirNonDir=true of an archive that
 * holds /.anvia (0755) and /.anvia/<name> (the binary, 0755), both root's. The engine
 * replaces a file or link already at that name; a /.anvia that is not a directory makes
 * it refuse. NULL with err set. */
http_req_t *agent_upload_req(engine_t *eng, const char *container, const agent_image_t *img, const char *name,
                             err_t *err);
/* agent_upload_req of the binary for the engine's architecture (agent_place_image) under
 * LIFETIME_INIT_NAME: the limits' init (codec/lifetime_cmd.h). NULL with err set. */
http_req_t *agent_init_upload_req(engine_t *eng, const char *container, err_t *err);

#endif
