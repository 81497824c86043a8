/*
 * fork.c - sandbox.fork() and the removal of a fork's image (see fork.h).
 *
 * Owns: a fork operation owns its request in flight, the parent's inspection, the names
 * of what it makes, the fork's sandbox until it is handed to JavaScript, and the errors
 * of a rollback. The owned-image record attached to a fork's sandbox owns its string
 * (and says whether the image still needs its id label checked before removal).
 *
 * Steps (each one engine request):
 *   the fork's container must not exist -> inspect the parent (configuration, limits,
 *   base image) -> create the fork's volume -> create the copy helper (not started) ->
 *   pause the parent (when it runs: a point-in-time copy of both its filesystem and its
 *   workspace; the client's own activity signals are held meanwhile, since the engine
 *   unpauses a container it signals) -> commit the parent (pause=false: it is paused) ->
 *   start the helper -> wait for it (`cp -a` of the whole workspace, ownership and modes
 *   kept) -> [its log tail, when cp failed] -> SIGUSR1 to the parent when it has an idle
 *   limit (delivered as it thaws: the fork counts as activity, however long the copy
 *   took) -> unpause (refused as "not paused" when that signal already did) -> remove the
 *   helper -> create
 *   the fork (codec/forkspec.c) -> [its first process is the limits' init: the engine's
 *   architecture when not known, and the package's init placed in the fork, over the
 *   copy the parent's filesystem held (codec/lifetime_cmd.h)] -> start it -> read its
 *   published ports.
 * Rollback (a failure, or the caller's abort): unpause the parent if it is still paused,
 * remove the fork's container, the helper, the volume and the image; their errors are
 * kept beside the first one (an AggregateError, as createSandbox's). A container removal
 * the engine refuses because the container is changing state at that moment (the copy
 * helper exiting as it is removed: Podman answers 500 "container state improper") is
 * asked again, up to RB_REMOVE_TRIES times, RB_RETRY_MS apart.
 *
 * The fork owns its image (label anvia.sandbox.fork.image): destroy() removes it after
 * the container (after a resume, only once the image's own id label proves it). A fork of a fork builds on its parent's image, which the engine then
 * refuses to remove (409, "dependent child images"): it is left for the engine to remove
 * with its last child (deleting an image also deletes its untagged, unused parents).
 */
#include "lifecycle/fork.h"

#include <stdlib.h>
#include <string.h>

#include "base/rand.h"
#include "codec/forkspec.h"
#include "codec/frames.h"
#include "codec/lifetime_cmd.h"
#include "codec/runspec.h"
#include "codec/sandbox_list.h"
#include "engine/agent_place.h"
#include "engine/timer.h"
#include "lifecycle/lifetime.h"
#include "lifecycle/steps.h"
#include "napi/convert.h"
#include "napi/op.h"
#include "napi/checks.h"
#include "napi/values.h"
#include "runtime/table.h"

typedef enum {
  F_CHECK = 1,
  F_INSPECT,
  F_VOLUME,
  F_HELPER_CREATE,
  F_PAUSE,
  F_COMMIT,
  F_HELPER_START,
  F_HELPER_WAIT,
  F_HELPER_LOGS,
  F_SIGNAL,
  F_UNPAUSE,
  F_HELPER_REMOVE,
  F_CREATE,
  F_INIT_ARCH,
  F_INIT_PLACE,
  F_START,
  F_PORTS,
  F_FINISHED,
  R_SIGNAL,
  R_UNPAUSE,
  R_CONTAINER,
  R_HELPER,
  R_VOLUME,
  R_IMAGE,
  R_FINISHED,
} fork_step_t;

#define MAX_RB_ERRORS 4
#define RB_REMOVE_TRIES 5
#define RB_RETRY_MS 200
#define MAX_LOG_BYTES (64 * 1024)
#define MAX_LOG_TEXT 2048

typedef struct fork_op {
  op_t op; /* op.sb: the parent */
  engine_t *eng;
  char *fork_id, *fork_name, *volume, *helper_name, *image;
  json_t *ins;
  lifetime_t lifetime;
  int *ports;
  size_t nports;
  int parent_running, paused, unpaused, held;
  int volume_attempted, helper_attempted, helper_removed, container_attempted;
  long long copy_status;
  fork_step_t step;
  steps_t st; /* the request in flight, the failure and the rollback's (lifecycle/steps.h) */
  sandbox_t *fork;
  sbx_timer_t *rb_timer; /* before asking again for a refused removal */
  int rb_tries;          /* of the current removal */
} fork_op_t;

static void step_next(fork_op_t *op);
static void rollback_next(fork_op_t *op);
static void on_resp(http_req_t *req, void *ud);

/* ---- the owned image ---- */

static const int IMAGE_KEY = 0;

typedef struct owned_image {
  int checked; /* made by this process's fork: no proof asked */
  char image[];
} owned_image_t;

int fork_image_track(sandbox_t *sb, const char *image, int checked, err_t *err) {
  if (image == NULL || image[0] == 0 || sandbox_attached(sb, &IMAGE_KEY) != NULL) return 0;
  size_t len = strlen(image);
  owned_image_t *rec = malloc(sizeof(*rec) + len + 1);
  if (rec == NULL) return err_oom(err);
  rec->checked = checked;
  memcpy(rec->image, image, len + 1);
  if (sandbox_attach(sb, &IMAGE_KEY, rec, free) != 0) {
    free(rec);
    return err_oom(err);
  }
  return 0;
}

/* ---- requests ---- */

static int send_req(fork_op_t *op, http_req_t *req) { return steps_send(&op->st, req, on_resp, op); }

static http_req_t *req_for(fork_op_t *op, const char *method, const char *fmt, const char *name) {
  return steps_req(&op->st, method, fmt, name);
}

static http_req_t *with_json(http_req_t *req, json_t *body) {
  if (body == NULL || req == NULL) {
    json_decref(body);
    http_req_free(req);
    return NULL;
  }
  if (http_req_set_json(req, body) != 0) {
    http_req_free(req);
    return NULL;
  }
  return req;
}

/* The unpause found the container running: the signal sent just before thawed it (Docker
 * unpauses a container it signals). Docker 20.10 says so with a 500: "... is not paused",
 * or, while its own resume is still under way, "cannot resume a running process". */
static int unpaused_anyway(const http_req_t *req) {
  if (http_req_ok(req) || http_req_answer(req) == 409) return 1;
  if (http_req_answer(req) != 500) return 0;
  char *message = http_req_engine_message(req);
  int yes = message != NULL &&
            (strstr(message, "is not paused") != NULL || strstr(message, "cannot resume a running process") != NULL);
  free(message);
  return yes;
}

/* ---- rollback ---- */

static void begin_rollback(fork_op_t *op) {
  op->st.rolling_back = 1;
  op->step = R_SIGNAL - 1;
  rollback_next(op);
}

static void fail(fork_op_t *op, err_t *err) {
  if (err != NULL) err_move(&op->st.err, err);
  begin_rollback(op);
}

static void release_parent(fork_op_t *op) {
  if (!op->held) return;
  op->held = 0;
  activity_release(op->op.sb);
}

static napi_value build_rejection(op_t *o) {
  return steps_rejection(&((fork_op_t *)o)->st, o, "Sandbox fork and rollback failed");
}

static void rollback_next(fork_op_t *op) {
  for (;;) {
    op->step++;
    http_req_t *req = NULL;
    int still_paused = op->paused && !op->unpaused;
    switch (op->step) {
      case R_SIGNAL:
        if (!still_paused || op->lifetime.idle_ms == 0) continue;
        req = req_for(op, "POST", "/containers/%s/kill?signal=SIGUSR1", op->op.sb->container_name);
        break;
      case R_UNPAUSE:
        if (!still_paused) {
          release_parent(op);
          continue;
        }
        req = req_for(op, "POST", "/containers/%s/unpause", op->op.sb->container_name);
        break;
      case R_CONTAINER:
        if (!op->container_attempted) continue;
        req = req_for(op, "DELETE", "/containers/%s?force=1", op->fork_name);
        break;
      case R_HELPER:
        if (!op->helper_attempted || op->helper_removed) continue;
        req = req_for(op, "DELETE", "/containers/%s?force=1", op->helper_name);
        break;
      case R_VOLUME:
        if (!op->volume_attempted) continue;
        req = req_for(op, "DELETE", "/volumes/%s", op->volume);
        break;
      case R_IMAGE:
        if (op->image == NULL) continue;
        req = req_for(op, "DELETE", "/images/%s", op->image);
        break;
      default:
        op->step = R_FINISHED;
        release_parent(op);
        op_reject_build(&op->op, build_rejection);
        op_release(&op->op);
        return;
    }
    if (send_req(op, req) == 0) return;
  }
}

static void on_rb_retry(void *ud) {
  fork_op_t *op = ud;
  op->rb_timer = NULL;
  op->step--; /* the same removal again */
  rollback_next(op);
}

/* 1 when the removal just refused is asked again later (see the top of the file). */
static int retry_removal(fork_op_t *op, const http_req_t *req) {
  if (op->step != R_CONTAINER && op->step != R_HELPER) return 0;
  if (http_req_status(req) != 409 && http_req_status(req) != 500) return 0;
  if (++op->rb_tries >= RB_REMOVE_TRIES) return 0;
  op->rb_timer = sbx_timer_start(engine_io(op->eng), RB_RETRY_MS, on_rb_retry, op);
  return op->rb_timer != NULL;
}

static void on_rollback_resp(fork_op_t *op, http_req_t *req) {
  int ok = http_req_ok(req), not_found = http_req_not_found(req);
  if (!ok && !not_found && retry_removal(op, req)) return;
  op->rb_tries = 0;
  if (op->step == R_UNPAUSE) {
    op->unpaused = 1; /* tried: a 409 means the signal already thawed it */
    release_parent(op);
    if (!unpaused_anyway(req)) steps_keep_rb_failure(&op->st, req, NULL);
  } else if (op->step != R_SIGNAL && !ok && !not_found) {
    steps_keep_rb_failure(&op->st, req,
                          op->step == R_VOLUME  ? "Unable to remove Docker sandbox volume."
                          : op->step == R_IMAGE ? "Unable to remove the Docker image of a sandbox fork."
                                                : "Unable to remove Docker sandbox.");
  }
  rollback_next(op);
}

/* ---- forward ---- */

static http_req_t *volume_req(fork_op_t *op) {
  json_t *body = json_pack("{s:s, s:{s:s}}", "Name", op->volume, "Labels", LABEL_ID, op->fork_id);
  return with_json(http_req_new(op->eng, "POST", "/volumes/create"), body);
}

static http_req_t *commit_req(fork_op_t *op) {
  char *esc = url_escape(op->op.sb->container_name);
  http_req_t *r = esc ? http_req_new(op->eng, "POST", "/commit?container=%s&pause=false", esc) : NULL;
  free(esc);
  return with_json(r, forkspec_commit_config(op->fork_id));
}

static http_req_t *create_req(fork_op_t *op, const char *name, json_t *body) {
  return with_json(req_for(op, "POST", "/containers/create?name=%s", name), body);
}

/* The fork's sandbox model: the parent's, with its own names and volume. */
static int make_fork(fork_op_t *op, err_t *err) {
  sandbox_t *p = op->op.sb;
  sandbox_t *s = sandbox_new(op->eng, p->transport);
  if (s == NULL) return err_oom(err);
  op->fork = s;
  s->id = strdup(op->fork_id);
  s->container_name = strdup(op->fork_name);
  s->workdir = strdup(p->workdir);
  s->volume_name = strdup(op->volume);
  s->ws_ephemeral = 1;
  s->owns_volume = 1;
  s->runtime = p->runtime;
  s->readonly_rootfs = p->readonly_rootfs;
  s->find_lacks_printf = p->find_lacks_printf;
  s->owner_known = p->owner_known;
  s->uid = p->uid;
  s->gid = p->gid;
  s->user = strdup(p->user ? p->user : "");
  s->container_runtime = strdup(runspec_container_runtime(op->ins));
  if (!s->id || !s->container_name || !s->workdir || !s->volume_name || !s->user || !s->container_runtime)
    return err_oom(err);
  if (p->env.count > 0) {
    s->env.items = calloc(p->env.count, sizeof(kv_t));
    if (s->env.items == NULL) return err_oom(err);
    for (size_t i = 0; i < p->env.count; i++) {
      s->env.items[i].key = strdup(p->env.items[i].key);
      s->env.items[i].value = strdup(p->env.items[i].value);
      s->env.count = i + 1;
      if (!s->env.items[i].key || !s->env.items[i].value) return err_oom(err);
    }
  }
  if (lifetime_track(op->op.js, s, &op->lifetime, err) != 0) return -1;
  return fork_image_track(s, op->image, 1, err);
}

/* The helper's log tail (cp's complaint) as the error. */
static int collect_log(void *ud, int stream, const uint8_t *data, size_t len) {
  (void)stream;
  buf_t *b = ud;
  size_t room = b->len < MAX_LOG_TEXT ? MAX_LOG_TEXT - b->len : 0;
  buf_append(b, data, len < room ? len : room);
  return 0;
}

static void copy_failed(fork_op_t *op, http_req_t *logs, err_t *err) {
  buf_t text;
  buf_init(&text, 0);
  if (logs != NULL && http_req_ok(logs)) {
    frame_demux_t d;
    frame_demux_init(&d);
    size_t used = 0;
    err_t ignored = ERR_INIT;
    frame_demux_feed(&d, logs->resp.data, logs->resp.len, &used, collect_log, &text, &ignored);
    err_clear(&ignored);
  }
  while (text.len > 0 && (text.data[text.len - 1] == '\n' || text.data[text.len - 1] == '\r')) text.len--;
  buf_terminate(&text);
  err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, "Unable to copy the sandbox workspace (cp exited with %lld)%s%s",
              op->copy_status, text.len ? ": " : ".", text.len ? (char *)text.data : "");
  buf_free(&text);
}

/* The fork copies its parent's command: is it the limits' init? */
static int fork_runs_init(fork_op_t *op) {
  return lifetime_cmd_is_init(json_object_get(json_object_get(op->ins, "Config"), "Cmd"));
}

static void step_next(fork_op_t *op) {
  err_t err = ERR_INIT;
  sandbox_t *p = op->op.sb;
  for (;;) {
    op->step++;
    http_req_t *req = NULL;
    switch (op->step) {
      case F_CHECK:
        req = req_for(op, "GET", "/containers/%s/json", op->fork_name);
        break;
      case F_INSPECT:
        req = req_for(op, "GET", "/containers/%s/json", p->container_name);
        break;
      case F_VOLUME:
        req = volume_req(op);
        op->volume_attempted = 1;
        break;
      case F_HELPER_CREATE:
        req = create_req(op, op->helper_name,
                         forkspec_copy_helper(forkspec_base_image(op->ins), p->volume_name, op->volume, op->fork_id));
        op->helper_attempted = 1;
        break;
      case F_PAUSE:
        if (!op->parent_running) continue;
        activity_hold(p);
        op->held = 1;
        req = req_for(op, "POST", "/containers/%s/pause", p->container_name);
        break;
      case F_COMMIT:
        req = commit_req(op);
        break;
      case F_HELPER_START:
        req = req_for(op, "POST", "/containers/%s/start", op->helper_name);
        break;
      case F_HELPER_WAIT:
        req = req_for(op, "POST", "/containers/%s/wait", op->helper_name);
        break;
      case F_HELPER_LOGS:
        if (op->copy_status == 0) continue;
        req = req_for(op, "GET", "/containers/%s/logs?stdout=1&stderr=1&tail=20", op->helper_name);
        if (req) http_req_set_limit(req, MAX_LOG_BYTES);
        break;
      case F_SIGNAL:
        if (!op->paused || op->lifetime.idle_ms == 0) continue;
        req = req_for(op, "POST", "/containers/%s/kill?signal=SIGUSR1", p->container_name);
        break;
      case F_UNPAUSE:
        if (!op->paused) continue;
        req = req_for(op, "POST", "/containers/%s/unpause", p->container_name);
        break;
      case F_HELPER_REMOVE:
        req = req_for(op, "DELETE", "/containers/%s?force=1", op->helper_name);
        break;
      case F_CREATE: {
        fork_names_t names = {op->fork_id, p->id, op->image, forkspec_base_image(op->ins), op->volume, p->workdir};
        json_t *body = forkspec_container(op->ins, &names, &err);
        if (body == NULL) {
          fail(op, &err);
          return;
        }
        req = create_req(op, op->fork_name, body);
        op->container_attempted = 1;
        break;
      }
      case F_INIT_ARCH:
        if (!fork_runs_init(op) || engine_arch(op->eng) != NULL) continue;
        req = agent_version_req(op->eng);
        break;
      case F_INIT_PLACE:
        if (!fork_runs_init(op)) continue;
        req = agent_init_upload_req(op->eng, op->fork_name, &err);
        if (req == NULL) {
          fail(op, &err);
          return;
        }
        break;
      case F_START:
        req = req_for(op, "POST", "/containers/%s/start", op->fork_name);
        break;
      case F_PORTS:
        if (op->nports == 0) continue;
        req = req_for(op, "GET", "/containers/%s/json", op->fork_name);
        break;
      default:
        op->step = F_FINISHED;
        op_settle(&op->op, NULL);
        return;
    }
    if (send_req(op, req) != 0) begin_rollback(op);
    return;
  }
}

/* What the parent's inspection tells: limits, whether it runs, its ports, its base. */
static int read_inspection(fork_op_t *op, http_req_t *req, err_t *err) {
  op->ins = http_req_json(req, err);
  if (op->ins == NULL) return -1;
  json_t *state = json_object_get(op->ins, "State");
  if (!json_is_object(state) || !json_is_object(json_object_get(op->ins, "Config")))
    return err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, "Docker returned invalid container metadata.");
  json_t *labels = json_object_get(json_object_get(op->ins, "Config"), "Labels");
  if (lifetime_from_labels(labels, &op->lifetime, err) != 0) return -1;
  if (forkspec_base_image(op->ins) == NULL) return err_sandbox(err, CODE_INVALID_STATE, "Sandbox metadata is invalid: %s", "Image");
  op->parent_running = json_is_true(json_object_get(state, "Running")) && !json_is_true(json_object_get(state, "Paused"));
  if (configured_ports(op->ins, &op->ports, &op->nports) != 0) return err_oom(err);
  return 0;
}

static void on_resp(http_req_t *req, void *ud) {
  fork_op_t *op = ud;
  op->st.req = NULL;
  if (op->st.rolling_back) {
    on_rollback_resp(op, req);
    http_req_free(req);
    return;
  }
  /* A create the engine refused made nothing: the name may be someone else's. */
  if (http_req_answer(req) >= 400) {
    if (op->step == F_HELPER_CREATE) op->helper_attempted = 0;
    if (op->step == F_CREATE) op->container_attempted = 0;
  }
  if (op->st.rollback_when_answered) {
    if (op->step == F_PAUSE && http_req_ok(req)) op->paused = 1;
    if (op->step == F_COMMIT && http_req_ok(req)) {
      /* The image the rollback must remove, if the reply names one. */
      err_t ignored = ERR_INIT;
      op->image = http_req_reply_id(req, "", &ignored);
      err_clear(&ignored);
    }
    if (op->step == F_UNPAUSE) op->unpaused = 1;
    if (op->step == F_HELPER_REMOVE && (http_req_ok(req) || http_req_not_found(req))) op->helper_removed = 1;
    http_req_free(req);
    begin_rollback(op);
    return;
  }
  err_t err = ERR_INIT;
  int ok = http_req_ok(req), not_found = http_req_not_found(req);
  switch (op->step) {
    case F_CHECK:
      steps_must_be_absent(req, op->fork_name, &err);
      break;
    case F_INSPECT:
      if (not_found) err_sandbox(&err, CODE_SANDBOX_NOT_FOUND, "Sandbox does not exist: %s", op->op.sb->container_name);
      else if (!ok) http_req_error(req, &err);
      else read_inspection(op, req, &err);
      break;
    case F_PAUSE:
      if (ok) op->paused = 1;
      else http_req_error(req, &err);
      break;
    case F_COMMIT:
      op->image = http_req_reply_id(req, "Docker returned no image for the fork.", &err);
      break;
    case F_HELPER_WAIT:
      if (!ok) {
        http_req_error(req, &err);
      } else {
        json_t *j = http_req_json(req, &err);
        json_t *code = json_object_get(j, "StatusCode");
        op->copy_status = json_is_integer(code) ? (long long)json_integer_value(code) : -1;
        json_decref(j);
      }
      break;
    case F_HELPER_LOGS:
      copy_failed(op, req, &err);
      break;
    case F_SIGNAL:
      break; /* best effort: the unpause follows */
    case F_INIT_ARCH:
      agent_version_answer(op->eng, req, &err);
      break;
    case F_UNPAUSE:
      if (unpaused_anyway(req)) {
        op->unpaused = 1;
        release_parent(op);
      } else {
        http_req_error(req, &err);
      }
      break;
    case F_HELPER_REMOVE:
      if (ok || not_found) op->helper_removed = 1;
      else http_req_error(req, &err);
      break;
    case F_PORTS:
      if (!ok) http_req_error(req, &err);
      else if (make_fork(op, &err) == 0) steps_read_ports(req, op->ports, op->nports, op->fork, &err);
      break;
    default:
      if (!ok) http_req_error(req, &err);
      break;
  }
  http_req_free(req);
  if (err_is_set(&err)) {
    fail(op, &err);
    return;
  }
  /* Once started without ports to read, the fork is made here. */
  if (op->step == F_START && op->nports == 0 && make_fork(op, &err) != 0) {
    fail(op, &err);
    return;
  }
  step_next(op);
}

/* ---- op plumbing ---- */

static void fork_start(op_t *o) {
  fork_op_t *op = (fork_op_t *)o;
  op->step = 0;
  step_next(op);
}

static void fork_cancel(op_t *o) {
  fork_op_t *op = (fork_op_t *)o;
  if (o->teardown) {
    steps_drop_req(&op->st);
    sbx_timer_cancel(op->rb_timer);
    op->rb_timer = NULL;
    op_release(o);
    return;
  }
  /* Waiting for the copy: stop waiting, the rollback removes the helper (and ends cp). */
  int changing = op->step != F_CHECK && op->step != F_INSPECT && op->step != F_HELPER_WAIT &&
                 op->step != F_HELPER_LOGS && op->step != F_PORTS;
  if (steps_cancel(&op->st, changing)) begin_rollback(op);
}

static napi_value fork_result(op_t *o) { return convert_sandbox(o->js->env, ((fork_op_t *)o)->fork); }

static void fork_destroy(op_t *o) {
  fork_op_t *op = (fork_op_t *)o;
  sbx_timer_cancel(op->rb_timer);
  release_parent(op);
  sandbox_unref(op->fork);
  engine_unref(op->eng);
  json_decref(op->ins);
  free(op->fork_id);
  free(op->fork_name);
  free(op->volume);
  free(op->helper_name);
  free(op->image);
  free(op->ports);
  steps_free(&op->st);
}

static const op_vtable_t fork_vt = {.name = "fork",
    .start = fork_start, .cancel = fork_cancel, .result = fork_result, .destroy = fork_destroy};

static char *joined(const char *a, const char *b, const char *c) {
  buf_t out;
  buf_init(&out, 0);
  if (buf_printf(&out, "%s%s%s", a, b, c ? c : "") != 0) {
    buf_free(&out);
    return NULL;
  }
  return buf_steal(&out, NULL);
}

/* native.prepareFork(sandbox, options) */
static napi_value js_prepare_fork(napi_env env, napi_callback_info info) {
  jsenv_t *js = jsenv_get(env);
  napi_value options;
  sandbox_t *sb = convert_sandbox_call(env, info, &options);
  if (sb == NULL) return NULL;
  err_t err = ERR_INIT;
  napi_value id = nu_undefined(env);
  if (!nu_is_undefined(env, options)) {
    if (!nu_is_record(env, options)) {
      err_type(&err, "options must be an object.");
      return convert_throw_err(js, &err);
    }
    id = nu_get(env, options, "id");
  }
  if (!nu_is_undefined(env, id) && check_sandbox_id(env, id, &err) != 0) return convert_throw_err(js, &err);
  fork_op_t *op = op_prepare(env, &fork_vt, sizeof(*op), sb);
  if (op == NULL) return NULL;
  op->eng = sb->eng;
  steps_init(&op->st, op->eng, MAX_RB_ERRORS);
  engine_ref(sb->eng);
  char uuid[37];
  if (nu_is_undefined(env, id)) op->fork_id = uuid_v4(uuid) == 0 ? strdup(uuid) : NULL;
  else op->fork_id = nu_strdup(env, id);
  if (op->fork_id != NULL) op->fork_name = container_name_for(op->fork_id);
  if (op->fork_name != NULL && uuid_v4(uuid) == 0) op->volume = joined(op->fork_name, "-workspace-", uuid);
  /* Not under anvia-sandbox-: no sandbox's container can have the helper's name. */
  if (op->fork_name != NULL && uuid_v4(uuid) == 0) op->helper_name = joined("anvia-fork-copy-", uuid, NULL);
  if (!op->fork_id || !op->fork_name || !op->volume || !op->helper_name) err_oom(&err);
  return op_prepared(&op->op, &err);
}

/* ---- removing an owned image ----
 * A record read from labels (a resumed fork) is removed only when the image's own id
 * label says it is this sandbox's (GET /images/{id}/json first), as a prune removes a
 * volume: labels alone never choose what is deleted. One this process's fork made is
 * removed at once. */

typedef struct image_op {
  op_t op;
  http_req_t *req;
  int checking; /* the inspection is in flight */
} image_op_t;

static void image_send(image_op_t *op, const char *method, const char *fmt);

static void on_image_removed(http_req_t *req, void *ud) {
  image_op_t *op = ud;
  op->req = NULL;
  err_t err = ERR_INIT;
  if (op->checking) {
    op->checking = 0;
    int ours = http_req_ok(req) && image_is_sandboxes(req->resp.data, req->resp.len, op->op.sb->id);
    /* 404: gone already. Anything else: leave it (never removed unless proven). */
    if (!http_req_ok(req) && !http_req_not_found(req)) {
      http_req_error(req, &err);
      steps_wrap_failure(&err, "Unable to remove the Docker image of a sandbox fork.");
    }
    http_req_free(req);
    if (ours && !err_is_set(&err)) {
      image_send(op, "DELETE", "/images/%s");
      return;
    }
    op_settle(&op->op, &err);
    return;
  }
  /* 404: gone already; 409: another fork builds on it (it goes with the last one). */
  if (!http_req_ok(req) && !http_req_not_found(req) && http_req_answer(req) != 409) {
    http_req_error(req, &err);
    steps_wrap_failure(&err, "Unable to remove the Docker image of a sandbox fork.");
  }
  http_req_free(req);
  op_settle(&op->op, &err);
}

static void image_send(image_op_t *op, const char *method, const char *fmt) {
  err_t err = ERR_INIT;
  const owned_image_t *rec = sandbox_attached(op->op.sb, &IMAGE_KEY);
  char *esc = rec ? url_escape(rec->image) : NULL;
  op->req = esc ? http_req_new(op->op.sb->eng, method, fmt, esc) : NULL;
  free(esc);
  if (op->req == NULL) {
    err_oom(&err);
    op_settle(&op->op, &err);
    return;
  }
  if (http_req_start(op->req, on_image_removed, op, &err) != 0) {
    http_req_free(op->req);
    op->req = NULL;
    op_settle(&op->op, &err);
  }
}

static void image_start(op_t *o) {
  image_op_t *op = (image_op_t *)o;
  const owned_image_t *rec = sandbox_attached(o->sb, &IMAGE_KEY);
  op->checking = rec != NULL && !rec->checked;
  if (op->checking) image_send(op, "GET", "/images/%s/json");
  else image_send(op, "DELETE", "/images/%s");
}

static void image_stop(op_t *o) {
  image_op_t *op = (image_op_t *)o;
  http_req_free(op->req);
  op->req = NULL;
}

static void image_destroy(op_t *o) { http_req_free(((image_op_t *)o)->req); }

static const op_vtable_t image_vt = {.name = "removeOwnedImage",
    .start = image_start, .stop = image_stop, .destroy = image_destroy};

/* native.prepareRemoveOwnedImage(sandbox) -> token, or undefined when it owns none. */
static napi_value js_prepare_remove_image(napi_env env, napi_callback_info info) {
  sandbox_t *sb = convert_sandbox_call(env, info, NULL);
  if (sb == NULL) return NULL;
  if (sandbox_attached(sb, &IMAGE_KEY) == NULL) return nu_undefined(env);
  image_op_t *op = op_prepare(env, &image_vt, sizeof(*op), sb);
  if (op == NULL) return NULL;
  return op_prepared(&op->op, NULL);
}

void fork_register(napi_env env, napi_value exports) {
  napi_property_descriptor fns[] = {
      {"prepareFork", NULL, js_prepare_fork, NULL, NULL, NULL, napi_default, NULL},
      {"prepareRemoveOwnedImage", NULL, js_prepare_remove_image, NULL, NULL, NULL, napi_default, NULL},
  };
  napi_define_properties(env, exports, sizeof(fns) / sizeof(fns[0]), fns);
}
