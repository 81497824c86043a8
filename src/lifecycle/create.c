/*
 * create.c - createSandbox: the original's checks, then the container, its workspace and
 * its initial content, with a rollback of whatever was made when any step fails or the
 * caller aborts.
 *
 * Steps (each one engine request):
 *   container must not exist -> image must exist (its user and labels read) -> named
 *   volume must exist (docker-volume) -> the containerRuntime asked for must be
 *   registered in the daemon (GET /info, only when one is asked for) -> create the
 *   ephemeral volume -> create the container (every anvia.sandbox.* label the package's,
 *   those the image carries written over) -> start it -> look up the
 *   sandbox user's uid/gid (non-root users) -> give the user the workspace root (read-only
 *   rootfs: through a never-started helper container) -> one archive upload with every
 *   initial directory and file -> read the engine-chosen host ports.
 * Archive operations on a running container skip the mount and unmount the engine does
 * for a stopped one (measured: about 110 ms instead of 290 ms), hence start first, as the
 * original's `docker run` did before writing its files.
 * Rollback removes the container (and helper) by name and the volume we created, even when
 * the request that created them was cancelled before its answer came back.
 */
#include "lifecycle/create.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/rand.h"
#include "codec/lifetime_cmd.h"
#include "codec/paths.h"
#include "codec/runspec.h"
#include "codec/runtimes.h"
#include "codec/sandbox_list.h"
#include "codec/upload.h"
#include "codec/userspec.h"
#include "engine/agent_place.h"
#include "lifecycle/client.h"
#include "lifecycle/lifetime.h"
#include "lifecycle/steps.h"
#include "napi/convert.h"
#include "napi/op.h"
#include "napi/checks.h"
#include "lifecycle/create_opts.h"
#include "napi/values.h"
#include "runtime/table.h"
#include "sandbox/owner.h"
#include "sandbox/sandbox.h"

typedef enum {
  C_CHECK_CONTAINER = 1,
  C_CHECK_IMAGE,
  C_CHECK_VOLUME,
  C_CHECK_RUNTIME,
  C_INIT_ARCH,
  C_CREATE_VOLUME,
  C_CREATE_CONTAINER,
  C_INIT_PLACE,
  C_START,
  C_OWNER,
  C_HELPER_CREATE,
  C_HELPER_UPLOAD,
  C_HELPER_REMOVE,
  C_UPLOAD,
  C_INSPECT_PORTS,
  C_RB_CONTAINER,
  C_RB_HELPER,
  C_RB_VOLUME,
  C_FINISHED,
} create_step_t;

#define MAX_ROLLBACK_ERRORS 3 /* of the undoing's failures, kept for the rejection */
#define MAX_SECCOMP_BYTES (4 * 1024 * 1024)

typedef struct create_op {
  op_t op;
  engine_t *eng;
  int transport;
  create_opts_t o;
  sandbox_t *sb;
  char *container_name;
  char *volume_name;
  char *helper_name;
  char *image_user;
  json_t *image_labels; /* the image's Config.Labels (an object), or NULL */
  lifetime_t lifetime; /* idle and lifetime limits (lifecycle/lifetime.h) */
  int with_init; /* the limits' init is process 1: placed between the create and the start */
  char *seccomp_tmp;   /* Podman: the profile's private file until the create is answered */
  create_step_t step;
  steps_t st; /* the request in flight, the failure and the rollback's (lifecycle/steps.h) */
  owner_task_t *owner;
  int volume_attempted, container_attempted, helper_attempted, helper_removed;
  int active; /* activity_begin was called for op->sb: activity_end when the create settles */
} create_op_t;

static void step_next(create_op_t *op);
static void rollback_next(create_op_t *op);
static void on_resp(http_req_t *req, void *ud);

/* ---- helpers ---- */

static int send_req(create_op_t *op, http_req_t *req) { return steps_send(&op->st, req, on_resp, op); }

static http_req_t *req_for(create_op_t *op, const char *method, const char *fmt, const char *name) {
  return steps_req(&op->st, method, fmt, name);
}

/* The create's own activity ends (on success or at the rollback's start). */
static void end_activity(create_op_t *op) {
  if (op->active) activity_end(op->sb);
  op->active = 0;
}

static void begin_rollback(create_op_t *op) {
  end_activity(op);
  op->st.rolling_back = 1;
  op->step = C_RB_CONTAINER - 1;
  rollback_next(op);
}

static void fail(create_op_t *op, err_t *err) {
  if (err != NULL) err_move(&op->st.err, err);
  begin_rollback(op);
}

static napi_value build_rejection(op_t *o) {
  return steps_rejection(&((create_op_t *)o)->st, o, "Sandbox creation and rollback failed");
}

static void finish_failed(create_op_t *op) {
  op->step = C_FINISHED;
  op_reject_build(&op->op, build_rejection);
  op_release(&op->op);
}

/* ---- rollback ---- */

static void rollback_next(create_op_t *op) {
  for (;;) {
    op->step++;
    http_req_t *req = NULL;
    if (op->step == C_RB_CONTAINER && op->container_attempted) {
      req = req_for(op, "DELETE", "/containers/%s?force=1", op->container_name);
    } else if (op->step == C_RB_HELPER && op->helper_attempted && !op->helper_removed) {
      req = req_for(op, "DELETE", "/containers/%s?force=1", op->helper_name);
    } else if (op->step == C_RB_VOLUME && op->volume_attempted) {
      req = req_for(op, "DELETE", "/volumes/%s", op->volume_name);
    } else if (op->step >= C_FINISHED) {
      finish_failed(op);
      return;
    } else {
      continue;
    }
    if (send_req(op, req) == 0) return;
  }
}

static void on_rollback_resp(create_op_t *op, http_req_t *req) {
  /* A 404: what the step removes is gone already. */
  if (!http_req_ok(req) && !http_req_not_found(req))
    steps_keep_rb_failure(&op->st, req,
                          op->step == C_RB_VOLUME ? "Unable to remove Docker sandbox volume." : "Unable to remove Docker sandbox.");
  rollback_next(op);
}

/* ---- forward steps ---- */

static void upload_to(create_op_t *op, const char *container, const char *path, buf_t *tarball) {
  char *c = url_escape(container);
  char *p = url_escape(path);
  http_req_t *req = NULL;
  if (c && p) req = http_req_new(op->eng, "PUT", "/containers/%s/archive?path=%s&noOverwriteDirNonDir=true", c, p);
  free(c);
  free(p);
  if (req && http_req_take_body(req, tarball, "application/x-tar") != 0) {
    http_req_free(req);
    req = NULL;
  }
  buf_free(tarball);
  if (send_req(op, req) != 0) begin_rollback(op);
}

/* The workspace root entry goes to the parent of the workdir: "<base>/". */
static int split_workdir(const char *workdir, char **parent, char **base) {
  char *norm = posix_normalize(workdir);
  if (norm == NULL) return -1;
  size_t n = strlen(norm);
  while (n > 1 && norm[n - 1] == '/') norm[--n] = 0;
  *parent = NULL;
  *base = NULL;
  if (strcmp(norm, "/") == 0) {
    free(norm);
    return 1; /* no parent: the root itself */
  }
  char *slash = strrchr(norm, '/');
  *base = strdup(slash + 1);
  *parent = slash == norm ? strdup("/") : strndup(norm, (size_t)(slash - norm));
  free(norm);
  if (*base == NULL || *parent == NULL) {
    free(*base);
    free(*parent);
    return -1;
  }
  return 0;
}

static void do_helper_upload(create_op_t *op) {
  char *parent = NULL, *base = NULL;
  if (split_workdir(op->o.workdir, &parent, &base) != 0) {
    op->step = C_HELPER_REMOVE; /* a workdir of "/" cannot be re-owned: skip */
    step_next(op);
    return;
  }
  upload_plan_t plan;
  upload_plan_init(&plan, op->sb->uid, op->sb->gid);
  buf_t tarball;
  buf_init(&tarball, 0);
  err_t err = ERR_INIT;
  if (upload_add_dir(&plan, base, 0) != 0) err_oom(&err);
  else upload_build(&plan, &tarball, &err);
  upload_plan_free(&plan);
  free(base);
  if (err_is_set(&err)) {
    free(parent);
    buf_free(&tarball);
    fail(op, &err);
    return;
  }
  upload_to(op, op->helper_name, parent, &tarball);
  free(parent);
}

static void do_upload(create_op_t *op) {
  sandbox_t *s = op->sb;
  int own_root = !user_is_root(s->user) && !op->o.readonly_rootfs;
  char *parent = NULL, *base = NULL;
  if (own_root && split_workdir(op->o.workdir, &parent, &base) != 0) own_root = 0;
  if (!own_root && op->o.ndirs == 0 && op->o.nfiles == 0) {
    op->step = C_UPLOAD; /* nothing to send */
    step_next(op);
    return;
  }
  upload_plan_t plan;
  upload_plan_init(&plan, s->uid, s->gid);
  err_t err = ERR_INIT;
  buf_t prefixed;
  buf_init(&prefixed, 0);
  int rc = 0;
  if (own_root) rc = upload_add_dir(&plan, base, 0);
  for (size_t i = 0; rc == 0 && i < op->o.ndirs; i++) {
    buf_reset(&prefixed);
    rc = own_root ? buf_printf(&prefixed, "%s/%s", base, op->o.dirs[i]) : buf_append_str(&prefixed, op->o.dirs[i]);
    if (rc == 0) rc = buf_terminate(&prefixed);
    if (rc == 0) rc = upload_add_dir(&plan, (char *)prefixed.data, 1);
  }
  for (size_t i = 0; rc == 0 && i < op->o.nfiles; i++) {
    buf_reset(&prefixed);
    rc = own_root ? buf_printf(&prefixed, "%s/%s", base, op->o.files[i].path)
                  : buf_append_str(&prefixed, op->o.files[i].path);
    if (rc == 0) rc = buf_terminate(&prefixed);
    if (rc == 0)
      rc = upload_add_file(&plan, (char *)prefixed.data, op->o.files[i].data, op->o.files[i].len, 1);
  }
  buf_free(&prefixed);
  buf_t tarball;
  buf_init(&tarball, 0);
  if (rc != 0) err_oom(&err);
  else upload_build(&plan, &tarball, &err);
  upload_plan_free(&plan);
  free(base);
  if (err_is_set(&err)) {
    free(parent);
    buf_free(&tarball);
    fail(op, &err);
    return;
  }
  upload_to(op, op->container_name, own_root ? parent : op->o.workdir, &tarball);
  free(parent);
}

static void on_owner(void *ud, err_t *err) {
  create_op_t *op = ud;
  op->owner = NULL;
  if (err != NULL) {
    fail(op, err);
    return;
  }
  step_next(op);
}

static int make_sandbox(create_op_t *op, err_t *err) {
  sandbox_t *s = sandbox_new(op->eng, (transport_t)op->transport);
  if (s == NULL) return err_oom(err);
  op->sb = s;
  s->id = strdup(op->o.id);
  s->container_name = strdup(op->container_name);
  s->workdir = strdup(op->o.workdir);
  s->volume_name = strdup(op->volume_name);
  s->ws_ephemeral = op->o.ws_ephemeral;
  s->owns_volume = op->o.ws_ephemeral;
  s->env = op->o.env; /* moved */
  memset(&op->o.env, 0, sizeof(op->o.env));
  s->runtime = op->o.runtime;
  s->readonly_rootfs = op->o.readonly_rootfs;
  s->user = strdup(op->o.user ? op->o.user : op->image_user ? op->image_user : "");
  s->container_runtime = strdup(op->o.container_runtime ? op->o.container_runtime : DEFAULT_CONTAINER_RUNTIME);
  if (!s->id || !s->container_name || !s->workdir || !s->volume_name || !s->user || !s->container_runtime)
    return err_oom(err);
  return 0;
}

/* The seccomp profile named by the options, read from the host and compacted, as the
 * CLI sends it. 0, or -1 with err set (the CLI's messages). */
static int load_seccomp(create_opts_t *o, err_t *err) {
  int fd = open(o->seccomp_path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, "opening seccomp profile (%s) failed: %s", o->seccomp_path,
                       strerror(errno));
  buf_t b;
  buf_init(&b, MAX_SECCOMP_BYTES);
  char chunk[8192];
  for (;;) {
    ssize_t n = read(fd, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 || buf_append(&b, chunk, n > 0 ? (size_t)n : 0) != 0) {
      err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, "reading seccomp profile (%s) failed: %s", o->seccomp_path,
                  n < 0 ? strerror(errno) : "file too large");
      close(fd);
      buf_free(&b);
      return -1;
    }
    if (n == 0) break;
  }
  close(fd);
  o->seccomp_json = seccomp_compact(b.data, b.len, o->seccomp_path, err);
  buf_free(&b);
  return o->seccomp_json ? 0 : -1;
}

/*
 * The profile in the form the engine takes (engine_info says which engine). Docker takes
 * the JSON inline, as the CLI sends it. Podman's Docker-compatible API reads the value
 * after "seccomp=" as a path on its own host (containers/podman#27710: inline JSON fails
 * the create with "opening seccomp profile failed"), and reads the file at create: for a
 * local Podman (a unix socket on this host) the compacted profile is written to a private
 * file, its path is sent, and the file is removed once the create is answered. A remote
 * Podman cannot read a file of this host: refused, naming the limitation, before the
 * create. 0, or -1 with err set.
 */
static int seccomp_for_engine(create_op_t *op, err_t *err) {
  engine_info_t ei = engine_info(op->eng);
  if (op->o.seccomp_json == NULL || ei.kind != ENGINE_PODMAN) return 0;
  if (!ei.local)
    return err_sandbox(err, CODE_DOCKER_COMMAND_FAILED,
                       "Podman at %s reads a seccomp profile as a path on its own host and cannot take one inline "
                       "(containers/podman#27710); seccompProfile %s is a file of this host. Use a Podman socket on "
                       "this host (unix://), or Docker.",
                       engine_display(op->eng), op->o.seccomp_path);
  const char *dir = getenv("TMPDIR");
  buf_t path;
  buf_init(&path, 0);
  if (buf_printf(&path, "%s/anvia-seccomp-XXXXXX.json", dir && dir[0] == '/' ? dir : "/tmp") != 0 ||
      buf_terminate(&path) != 0) {
    buf_free(&path);
    return err_oom(err);
  }
  int fd = mkostemps((char *)path.data, 5, O_CLOEXEC);
  size_t len = strlen(op->o.seccomp_json), off = 0;
  int werr = fd < 0 ? errno : 0;
  /* Readable by the engine, which may run as another user (rootful Podman reads it as
   * root anyway). The profile is no secret: it is also in the container's inspection. */
  if (fd >= 0 && fchmod(fd, 0644) != 0) werr = errno;
  while (fd >= 0 && werr == 0 && off < len) {
    ssize_t n = write(fd, op->o.seccomp_json + off, len - off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) werr = errno;
    else off += (size_t)n;
  }
  if (fd >= 0 && close(fd) != 0 && werr == 0) werr = errno;
  if (werr != 0) {
    if (fd >= 0) unlink((char *)path.data);
    err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, "writing seccomp profile (%s) for Podman to %s failed: %s",
                op->o.seccomp_path, (char *)path.data, strerror(werr));
    buf_free(&path);
    return -1;
  }
  op->seccomp_tmp = buf_steal(&path, NULL);
  op->o.seccomp_ref = op->seccomp_tmp;
  return 0;
}

/* The private profile file is no longer needed once Podman has answered the create. */
static void seccomp_tmp_remove(create_op_t *op) {
  if (op->seccomp_tmp == NULL) return;
  unlink(op->seccomp_tmp);
  free(op->seccomp_tmp);
  op->seccomp_tmp = NULL;
  op->o.seccomp_ref = NULL;
}

/* POST /volumes/create for the ephemeral workspace. NULL when out of memory. */
static http_req_t *volume_create_req(create_op_t *op) {
  json_t *body = json_pack("{s:s, s:{s:s}}", "Name", op->volume_name, "Labels", LABEL_ID, op->o.id);
  http_req_t *req = body ? http_req_new(op->eng, "POST", "/volumes/create") : NULL;
  if (req == NULL) {
    json_decref(body);
    return NULL;
  }
  if (http_req_set_json(req, body) != 0) { /* the body's reference is taken either way */
    http_req_free(req);
    return NULL;
  }
  return req;
}

/* POST /containers/create with `body` (its reference taken), named `name`. NULL when out
 * of memory. */
static http_req_t *container_create_req(create_op_t *op, const char *name, json_t *body) {
  http_req_t *req = body ? req_for(op, "POST", "/containers/create?name=%s", name) : NULL;
  if (req == NULL) {
    json_decref(body);
    return NULL;
  }
  if (http_req_set_json(req, body) != 0) {
    http_req_free(req);
    return NULL;
  }
  return req;
}

/*
 * The never-started helper container that gives the sandbox user the workspace root
 * when the rootfs is read-only (the upload goes through it). NULL when out of memory.
 */
static http_req_t *helper_create_req(create_op_t *op) {
  buf_t name;
  buf_init(&name, 0);
  if (buf_printf(&name, "%s-owner", op->container_name) != 0) {
    buf_free(&name);
    return NULL;
  }
  op->helper_name = buf_steal(&name, NULL);
  if (op->helper_name == NULL) return NULL;
  json_t *body = json_pack("{s:s, s:[s], s:{s:s}, s:{s:s, s:[{s:s, s:s, s:s}]}}", "Image", op->o.image, "Cmd", "true",
                           "Labels", LABEL_ID, op->o.id, "HostConfig", "NetworkMode", "none", "Mounts", "Type",
                           "volume", "Source", op->volume_name, "Target", op->o.workdir);
  return container_create_req(op, op->helper_name, body);
}

/* The init, when the package has a binary for the engine's architecture (otherwise the
 * limits are kept by the shell loop: codec/lifetime_cmd.h). */
static void choose_init(create_op_t *op) {
  err_t none = ERR_INIT;
  op->with_init = agent_place_image(op->eng, &none) != NULL;
  err_clear(&none);
}

/* The sandbox exists now: make its model, then learn its user's uid/gid. 1 when known at
 * once (go on), 0 when the lookup answers later (on_owner goes on), -1 with err set. */
static int begin_owner(create_op_t *op, err_t *err) {
  if (make_sandbox(op, err) != 0 || lifetime_track(op->op.js, op->sb, &op->lifetime, err) != 0) return -1;
  activity_begin(op->sb); /* the container runs: the rest of the create is activity */
  op->active = 1;
  return owner_ensure(op->sb, on_owner, op, &op->owner, err);
}

static void step_next(create_op_t *op) {
  err_t err = ERR_INIT;
  for (;;) {
    op->step++;
    http_req_t *req = NULL;
    switch (op->step) {
      case C_CHECK_CONTAINER:
        req = req_for(op, "GET", "/containers/%s/json", op->container_name);
        break;
      case C_CHECK_IMAGE:
        req = req_for(op, "GET", "/images/%s/json", op->o.image);
        break;
      case C_CHECK_VOLUME:
        if (op->o.ws_ephemeral) continue;
        req = req_for(op, "GET", "/volumes/%s", op->volume_name);
        break;
      case C_CHECK_RUNTIME:
        if (op->o.container_runtime == NULL) continue;
        req = http_req_new(op->eng, "GET", "/info");
        if (req) http_req_set_limit(req, RUNTIMES_MAX_INFO_BYTES);
        break;
      case C_INIT_ARCH:
        /* The limits' init needs a file placed before the start: a writable rootfs, and
         * the binary for the engine's architecture (learnt once per engine). */
        if (!lifetime_any(&op->lifetime) || op->o.readonly_rootfs) continue;
        if (engine_arch(op->eng) != NULL) {
          choose_init(op);
          continue;
        }
        req = agent_version_req(op->eng);
        break;
      case C_CREATE_VOLUME:
        if (!op->o.ws_ephemeral) continue;
        req = volume_create_req(op);
        op->volume_attempted = 1;
        break;
      case C_CREATE_CONTAINER: {
        json_t *body = NULL;
        if ((op->o.seccomp_path == NULL || op->o.seccomp_json != NULL || load_seccomp(&op->o, &err) == 0) &&
            seccomp_for_engine(op, &err) == 0)
          body = runspec_build(&op->o, op->volume_name, &err);
        /* Every anvia.sandbox.* label is the package's: one the image carries and the
         * create does not set is written empty (the engine would merge the image's). */
        if (body != NULL && (lifetime_apply(body, &op->lifetime, op->with_init) != 0 ||
                             labels_mask_reserved(json_object_get(body, "Labels"), op->image_labels) != 0)) {
          json_decref(body);
          body = NULL;
          err_oom(&err);
        }
        if (body == NULL) {
          fail(op, &err);
          return;
        }
        req = container_create_req(op, op->container_name, body);
        op->container_attempted = 1;
        break;
      }
      case C_INIT_PLACE:
        if (!op->with_init) continue;
        req = agent_init_upload_req(op->eng, op->container_name, &err);
        if (req == NULL) {
          fail(op, &err);
          return;
        }
        break;
      case C_START:
        req = req_for(op, "POST", "/containers/%s/start", op->container_name);
        break;
      case C_OWNER: {
        int rc = begin_owner(op, &err);
        if (rc < 0) fail(op, &err);
        if (rc <= 0) return; /* failed, or on_owner continues */
        continue;
      }
      case C_HELPER_CREATE:
        if (!op->o.readonly_rootfs || user_is_root(op->sb->user)) {
          op->step = C_HELPER_REMOVE;
          continue;
        }
        req = helper_create_req(op);
        op->helper_attempted = op->helper_name != NULL; /* a name is what rollback removes */
        break;
      case C_HELPER_UPLOAD:
        do_helper_upload(op);
        return;
      case C_HELPER_REMOVE:
        if (!op->helper_attempted) continue;
        req = req_for(op, "DELETE", "/containers/%s?force=1", op->helper_name);
        break;
      case C_UPLOAD:
        do_upload(op);
        return;
      case C_INSPECT_PORTS:
        if (op->o.nports == 0) continue;
        req = req_for(op, "GET", "/containers/%s/json", op->container_name);
        break;
      default:
        end_activity(op);
        op->step = C_FINISHED;
        op_settle(&op->op, NULL);
        return;
    }
    if (send_req(op, req) != 0) begin_rollback(op);
    return;
  }
}

/* The daemon's answer to GET /info: the containerRuntime asked for must be one of its
 * `Runtimes`. Upstream's three messages. */
static void check_runtime(create_op_t *op, http_req_t *req, err_t *err) {
  if (!http_req_ok(req)) {
    http_req_error(req, err);
    steps_wrap_failure(err, "Unable to inspect Docker runtimes.");
    return;
  }
  const buf_t *reply = &req->resp;
  switch (runtimes_lookup((const char *)reply->data, reply->len, op->o.container_runtime, op->o.container_runtime_len)) {
    case RUNTIME_REGISTERED: {
      /* Podman lists the runtimes of its containers.conf, but its Docker-compatible create
       * does not apply HostConfig.Runtime (seen on 4.3.1: the container runs under its
       * default runtime): refused rather than run under a weaker runtime than asked. */
      engine_info_t ei = engine_info(op->eng);
      if (ei.kind == ENGINE_PODMAN)
        err_sandbox(err, CODE_RUNTIME_NOT_FOUND,
                    "Podman at %s does not apply containerRuntime through its Docker-compatible API (the container "
                    "would run under Podman's default runtime, not %.*s). Set the runtime in Podman's containers.conf "
                    "([engine] runtime), or use Docker.",
                    engine_display(op->eng), (int)op->o.container_runtime_len, op->o.container_runtime);
      return;
    }
    case RUNTIME_NOMEM:
      err_oom(err);
      return;
    case RUNTIME_INVALID:
      err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, "Docker returned invalid runtime metadata.");
      return;
    case RUNTIME_MISSING: {
      buf_t quoted;
      buf_init(&quoted, 0);
      if (buf_append_js_string(&quoted, op->o.container_runtime, op->o.container_runtime_len) != 0 ||
          buf_terminate(&quoted) != 0) {
        buf_free(&quoted);
        err_oom(err);
        return;
      }
      err_sandbox(err, CODE_RUNTIME_NOT_FOUND,
                  "Docker runtime is not registered in the daemon: %s. Install the runtime (for gVisor: runsc "
                  "install) and restart the Docker daemon.",
                  (const char *)quoted.data);
      buf_free(&quoted);
      return;
    }
  }
}

static void on_resp(http_req_t *req, void *ud) {
  create_op_t *op = ud;
  op->st.req = NULL;
  seccomp_tmp_remove(op); /* read by the engine at create, which has answered now */
  if (op->st.rolling_back) {
    on_rollback_resp(op, req);
    http_req_free(req);
    return;
  }
  if (op->st.rollback_when_answered) {
    /* The change the engine was making is done (or failed): now undo everything. */
    http_req_free(req);
    begin_rollback(op);
    return;
  }
  err_t err = ERR_INIT;
  int ok = http_req_ok(req);
  int not_found = http_req_not_found(req);
  switch (op->step) {
    case C_CHECK_CONTAINER:
      steps_must_be_absent(req, op->container_name, &err);
      break;
    case C_CHECK_IMAGE:
      if (not_found) {
        err_sandbox(&err, CODE_IMAGE_NOT_FOUND, "Docker image is not available locally: %s", op->o.image);
      } else if (!ok) {
        http_req_error(req, &err);
        steps_wrap_failure(&err, "Unable to inspect Docker image.");
      } else {
        json_t *img = http_req_json(req, &err);
        json_t *user = json_object_get(json_object_get(img, "Config"), "User");
        if (json_is_string(user)) op->image_user = strdup(json_string_value(user));
        json_t *labels = json_object_get(json_object_get(img, "Config"), "Labels");
        if (json_is_object(labels)) op->image_labels = json_incref(labels);
        json_decref(img);
      }
      break;
    case C_CHECK_VOLUME:
      if (not_found) {
        err_sandbox(&err, CODE_VOLUME_NOT_FOUND, "Docker volume does not exist: %s", op->volume_name);
      } else if (!ok) {
        http_req_error(req, &err);
        steps_wrap_failure(&err, "Unable to inspect Docker volume.");
      }
      break;
    case C_CHECK_RUNTIME:
      check_runtime(op, req, &err);
      break;
    case C_INIT_ARCH:
      if (agent_version_answer(op->eng, req, &err) == 0) choose_init(op);
      break;
    case C_INIT_PLACE:
      if (!ok) {
        http_req_error(req, &err);
        steps_wrap_failure(&err, "Unable to place the sandbox's limits in its container.");
      }
      break;
    case C_INSPECT_PORTS:
      steps_read_ports(req, op->o.ports, op->o.nports, op->sb, &err);
      break;
    case C_HELPER_REMOVE:
      if (ok || not_found) op->helper_removed = 1;
      else http_req_error(req, &err);
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
  step_next(op);
}

/* ---- op plumbing ---- */

static void create_start(op_t *o) {
  create_op_t *op = (create_op_t *)o;
  op->step = 0;
  step_next(op);
}

static void create_cancel(op_t *o) {
  create_op_t *op = (create_op_t *)o;
  if (o->teardown) {
    steps_drop_req(&op->st);
    owner_cancel(op->owner);
    op->owner = NULL;
    op_release(o);
    return;
  }
  int changing = op->step == C_CREATE_VOLUME || op->step == C_CREATE_CONTAINER || op->step == C_INIT_PLACE ||
                 op->step == C_HELPER_CREATE ||
                 op->step == C_HELPER_UPLOAD || op->step == C_HELPER_REMOVE || op->step == C_UPLOAD ||
                 op->step == C_START;
  /* A change in flight is short: its answer comes first, then the rollback (steps.h). */
  if (!steps_cancel(&op->st, changing)) return;
  owner_cancel(op->owner);
  op->owner = NULL;
  begin_rollback(op);
}

static napi_value create_result(op_t *o) {
  create_op_t *op = (create_op_t *)o;
  return convert_sandbox(o->js->env, op->sb);
}

static void create_destroy(op_t *o) {
  create_op_t *op = (create_op_t *)o;
  seccomp_tmp_remove(op);
  owner_cancel(op->owner);
  sandbox_unref(op->sb);
  engine_unref(op->eng);
  create_opts_free(&op->o);
  free(op->container_name);
  free(op->volume_name);
  free(op->helper_name);
  free(op->image_user);
  json_decref(op->image_labels);
  steps_free(&op->st);
}

static const op_vtable_t create_vt = {.name = "createSandbox",
    .start = create_start, .cancel = create_cancel, .result = create_result, .destroy = create_destroy};

/* native.prepareCreate(client, options) -> token; validation errors are thrown. */
static napi_value js_prepare_create(napi_env env, napi_callback_info info) {
  napi_value options;
  client_t *c = client_call(env, info, &options);
  if (c == NULL) return NULL;
  err_t err = ERR_INIT;
  create_op_t *op = op_prepare(env, &create_vt, sizeof(*op), NULL);
  if (op == NULL) return NULL;
  op->eng = c->eng;
  engine_ref(c->eng);
  steps_init(&op->st, op->eng, MAX_ROLLBACK_ERRORS);
  op->transport = c->transport;
  napi_value late = NULL;
  if (create_opts_read(env, options, &op->o, &late, &err) != 0 ||
      (late != NULL && op_fail_at_start(&op->op, late, &err) != 0) ||
      lifetime_read(env, options, &op->lifetime, &err) != 0)
    return op_prepared(&op->op, &err);
  /* A file that is also a directory (listed in `directories`, or the parent of another
   * entry) cannot be written: said clearly, before anything is made. */
  const char *conflict = NULL;
  int rc = spec_find_conflict(&op->o, &conflict);
  if (rc < 0) err_oom(&err);
  else if (rc > 0) err_sandbox(&err, CODE_DOCKER_COMMAND_FAILED, "Sandbox path names a directory, not a file: %s", conflict);
  if (rc != 0) return op_prepared(&op->op, &err);
  op->container_name = container_name_for(op->o.id);
  if (op->o.ws_ephemeral) {
    char uuid[37];
    buf_t v;
    buf_init(&v, 0);
    if (op->container_name && uuid_v4(uuid) == 0 && buf_printf(&v, "%s-workspace-%s", op->container_name, uuid) == 0)
      op->volume_name = buf_steal(&v, NULL);
    buf_free(&v);
  } else {
    op->volume_name = strdup(op->o.ws_volume);
  }
  if (op->container_name == NULL || op->volume_name == NULL) err_oom(&err);
  return op_prepared(&op->op, &err);
}

void create_register(napi_env env, napi_value exports) {
  napi_property_descriptor fns[] = {
      {"prepareCreate", NULL, js_prepare_create, NULL, NULL, NULL, napi_default, NULL},
  };
  napi_define_properties(env, exports, sizeof(fns) / sizeof(fns[0]), fns);
}
