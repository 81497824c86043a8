/*
 * pull.c - pullImage (see pull.h).
 *
 * Owns: a pull operation owns its request, its reference to the engine and the progress
 * parser reading the reply.
 */
#include "lifecycle/pull.h"

#include <stdlib.h>
#include <string.h>

#include "codec/progress.h"
#include "engine/engine.h"
#include "lifecycle/client.h"
#include "napi/args.h"
#include "napi/convert.h"
#include "napi/op.h"
#include "napi/values.h"

typedef struct pull_op {
  op_t op;
  engine_t *eng;
  char *ref;
  http_req_t *req;
  progress_parser_t progress;
} pull_op_t;

static int on_pull_data(http_req_t *req, const uint8_t *data, size_t len, void *ud) {
  (void)req;
  pull_op_t *op = ud;
  progress_parser_feed(&op->progress, data, len);
  return 0;
}

static void on_pull_done(http_req_t *req, void *ud) {
  pull_op_t *op = ud;
  err_t err = ERR_INIT;
  op->req = NULL;
  if (!http_req_ok(req)) {
    http_req_error(req, &err);
  } else {
    progress_parser_finish(&op->progress);
    if (op->progress.error) {
      err_sandbox(&err, CODE_DOCKER_COMMAND_FAILED, "Docker image pull failed: %s: %s", op->ref,
                  op->progress.error);
    } else if (op->progress.overlong) {
      err_sandbox(&err, CODE_DOCKER_COMMAND_FAILED,
                  "Docker image pull failed: %s: the engine sent a progress line over %d bytes.", op->ref,
                  MAX_PROGRESS_LINE);
    }
  }
  http_req_free(req);
  op_settle(&op->op, &err);
}

static void pull_start(op_t *o) {
  pull_op_t *op = (pull_op_t *)o;
  char *repo = NULL, *tag = NULL;
  err_t err = ERR_INIT;
  if (image_ref_split(op->ref, &repo, &tag) != 0) goto oom;
  char *erepo = url_escape(repo), *etag = url_escape(tag);
  free(repo);
  free(tag);
  if (erepo == NULL || etag == NULL) {
    free(erepo);
    free(etag);
    goto oom;
  }
  op->req = http_req_new(op->eng, "POST", "/images/create?fromImage=%s&tag=%s", erepo, etag);
  free(erepo);
  free(etag);
  if (op->req == NULL) goto oom;
  http_req_set_limit(op->req, 64 * 1024);
  op->req->on_data = on_pull_data;
  if (http_req_start(op->req, on_pull_done, op, &err) != 0) {
    http_req_free(op->req);
    op->req = NULL;
    op_settle(o, &err);
  }
  return;
oom:
  err_oom(&err);
  op_settle(o, &err);
}

static void pull_stop(op_t *o) {
  pull_op_t *op = (pull_op_t *)o;
  http_req_free(op->req);
  op->req = NULL;
}

static void pull_destroy(op_t *o) {
  pull_op_t *op = (pull_op_t *)o;
  http_req_free(op->req);
  progress_parser_free(&op->progress);
  engine_unref(op->eng);
  free(op->ref);
}

static const op_vtable_t pull_vt = {.name = "pullImage",
    .start = pull_start, .stop = pull_stop, .destroy = pull_destroy};

/* native.preparePull(client, options) -> token. */
static napi_value js_prepare_pull(napi_env env, napi_callback_info info) {
  napi_value options;
  client_t *c = client_call(env, info, &options);
  if (c == NULL) return NULL;
  err_t err = ERR_INIT;
  napi_value image = nu_get(env, options, "image");
  if (!nu_is_record(env, options)) err_type(&err, "options must be an object.");
  else if (!nu_is_nonempty_string(env, image)) err_type(&err, "image must be a non-empty string.");
  if (err_is_set(&err)) return convert_throw_err(jsenv_get(env), &err);
  pull_op_t *op = op_prepare(env, &pull_vt, sizeof(*op), NULL);
  if (op == NULL) return NULL;
  op->eng = c->eng;
  engine_ref(c->eng);
  progress_parser_init(&op->progress);
  op->ref = nu_strdup(env, image);
  if (op->ref == NULL) err_oom(&err);
  /* `docker pull <image>`: a NUL in the image was Node's TypeError for args[1]. */
  argv_nul_t nul = {0};
  args_argv_nul_note(env, &nul, 1, image);
  napi_value late = nul.found && !err_is_set(&err) ? args_argv_nul_error(env, &nul, &err) : NULL;
  if (late != NULL) op_fail_at_start(&op->op, late, &err);
  return op_prepared(&op->op, &err);
}

void pull_register(napi_env env, napi_value exports) {
  napi_property_descriptor fns[] = {
      {"preparePull", NULL, js_prepare_pull, NULL, NULL, NULL, napi_default, NULL},
  };
  napi_define_properties(env, exports, sizeof(fns) / sizeof(fns[0]), fns);
}
