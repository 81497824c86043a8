/*
 * agent_exec.c - exec and execStream through the agent (see agent_op.h): the command runs
 * as a child of the agent in its own process group; its output streams back under flow
 * control (an execStream consumer that falls behind stops the credit, so the command
 * blocks, as on the engine path); the agent enforces the timeout and ends the whole tree.
 *
 * The result is the engine path's: the first maxOutputBytes of each stream with the
 * truncation flags, the exit code (128 + signal for a signal death, as Docker reports it),
 * "timed_out". A command that cannot start is what the engine makes of it: on Docker (runc)
 * exit 126 and runc's message on stdout, on Podman exit 125-127 and its wrapping of the
 * same message on stderr (exit 1 and a message on stderr for a file that is no program).
 *
 * Owns: the spec (until the agent request is made, or the engine fallback takes it), the
 * result being collected, and the credit held back while paused.
 */
#include "runtime/agent_exec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "napi/convert.h"
#include "napi/values.h"
#include "runtime/agent_op.h"
#include "runtime/exec_op.h"
#include "runtime/sh/kill_group_sh.h"

#define EXEC_WINDOW (256u * 1024u)

typedef struct agent_exec_op {
  agent_op_t base;
  exec_spec_t spec;
  exec_result_t *result;
  uint32_t pgid; /* the command's process group, once STARTED */
} agent_exec_op_t;

static void on_event(agent_req_t *req, const agent_event_t *ev, void *ud);

static void on_group_killed(void *ud, exec_result_t *r, err_t *err) {
  (void)ud;
  (void)err;
  exec_result_free(r);
}

static void kill_orphan_group(sandbox_t *sb, uint32_t pgid) {
  char group[16];
  snprintf(group, sizeof(group), "%u", (unsigned)pgid);
  const char *argv[] = {"sh", "-c", KILL_GROUP_SH, "anvia-kill-group", group};
  exec_spec_t spec;
  memset(&spec, 0, sizeof(spec));
  spec.workdir = strdup("/");
  spec.timeout_ms = 10000;
  spec.max_output = 1024;
  err_t err = ERR_INIT;
  if (spec.workdir != NULL && exec_spec_set_argv(&spec, argv, 5) == 0) {
    exec_callbacks_t cbs = {.on_done = on_group_killed};
    exec_task_start(sb->eng, sb->container_name, &spec, &cbs, NULL, &err);
  }
  exec_spec_free(&spec);
  err_clear(&err);
}

static void emit_output(agent_exec_op_t *op, int stream, const uint8_t *data, size_t len) {
  op_t *o = &op->base.op;
  if (!op_has_events(o) || len == 0) return;
  jsenv_t *js = o->js;
  jsenv_scope_t s;
  if (jsenv_enter(js, &s) != 0) return;
  napi_value argv[2] = {nu_string(js->env, stream == 2 ? "stderr" : "stdout"), nu_uint8array(js->env, data, len)};
  op_emit(o, 2, argv);
  jsenv_leave(js, &s);
}

static double elapsed_ms(agent_exec_op_t *op) { return (double)(uv_hrtime() - op->base.started_ns) / 1e6; }

/* What the engine path shows when the command cannot start, one row per case of
 * PROTOCOL.md "Engine parity". Docker 20.10 with runc: the message on stdout, exit 126.
 * The runtime's own words are the same on Podman; only its wrapping differs (see
 * podman_failure). Each "%s" is filled in order from the row's arguments. */
#define OCI "OCI runtime exec failed: exec failed: unable to start container process: "
static const char NOT_ON_PATH[] = "exec: \"%s\": executable file not found in $PATH";
static const char NO_FILE[] = "exec: \"%s\": stat %s: no such file or directory";
static const char NO_PERMISSION[] = "exec: \"%s\": permission denied";
static const char OTHER_EXEC[] = "exec: \"%s\": %s";
static const char CWD_FAILED[] = "chdir to cwd (\"%s\") set in config.json failed: %s";
static const char DOCKER_FORM[] = OCI "%s: unknown\r\n";
static const char DOCKER_CWD_NOT_DIR[] = OCI
    "%s: unknown: Are you trying to mount a directory onto a file (or vice-versa)? Check if the specified host "
    "path exists and is the expected type\r\n";
static const char FORMAT_ERROR[] = "exec %s: exec format error\n"; /* exit 1, on stderr, on both engines */
#undef OCI

/* An errno as runc (Go) spells it: the C text with a lower-case first letter
 * ("no such file or directory"), which matches Go's table for the errors a spawn meets. */
static const char *go_strerror(int err, char *buf, size_t size) {
  snprintf(buf, size, "%s", strerror(err));
  if (buf[0] >= 'A' && buf[0] <= 'Z') buf[0] = (char)(buf[0] - 'A' + 'a');
  return buf;
}

/* Podman 4.3 (runc): the runtime's message goes through libpod's getOCIRuntimeError,
 * which sorts it by its words into one of three errors, each with its exit code, and the
 * compat API writes "Error: <runtime>: <message>: <error>" on stderr. The runtime's name is
 * "runc", the runtime Podman runs on Debian. */
static int podman_failure(const char *detail, char *msg, size_t size) {
  const char *suffix = "OCI runtime error";
  int code = 125;
  if (strstr(detail, "permission denied") || strstr(detail, "operation not permitted")) {
    suffix = "OCI permission denied";
    code = 126;
  } else if (strstr(detail, "executable file not found in") || strstr(detail, "no such file or directory")) {
    suffix = "OCI runtime attempted to invoke a command that was not found";
    code = 127;
  }
  snprintf(msg, size, "Error: runc: exec failed: unable to start container process: %s: %s\n", detail, suffix);
  return code;
}

static void spawn_failure(agent_exec_op_t *op, const aw_error_t *e) {
  char msg[1400];
  char detail[1100];
  char path[512];
  char why[128];
  const char *cmd = op->spec.argc > 0 ? op->spec.argv[0] : "";
  const char *cwd = op->spec.workdir ? op->spec.workdir : "";
  int err = e->err ? e->err : EIO;
  int stream = 1, code = 126;
  int podman = engine_info(op->base.op.sb->eng).kind == ENGINE_PODMAN;
  if (e->stage == AW_STAGE_CWD) {
    snprintf(detail, sizeof(detail), CWD_FAILED, cwd, go_strerror(err, why, sizeof(why)));
  } else if (err == ENOEXEC) {
    /* The shell-less exec of a file that is not a program: the path PATH found, if any. */
    size_t n = 0;
    if ((e->value & AW_SPAWN_RESOLVED) && e->detail.len > 0 && e->detail.len < sizeof(path)) {
      memcpy(path, e->detail.p, e->detail.len);
      n = e->detail.len;
    }
    path[n] = '\0';
    if (n == 0 || memchr(path, '\0', n) != NULL) snprintf(path, sizeof(path), "%s", cmd);
    snprintf(msg, sizeof(msg), FORMAT_ERROR, path);
    stream = 2;
    code = 1;
  } else if (err == ENOENT && (e->value & AW_SPAWN_SEARCHED)) {
    snprintf(detail, sizeof(detail), NOT_ON_PATH, cmd);
  } else if (err == ENOENT) {
    snprintf(detail, sizeof(detail), NO_FILE, cmd, cmd);
  } else if (err == EACCES) {
    snprintf(detail, sizeof(detail), NO_PERMISSION, cmd);
  } else {
    snprintf(detail, sizeof(detail), OTHER_EXEC, cmd, go_strerror(err, why, sizeof(why)));
  }
  if (code != 1 && podman) {
    code = podman_failure(detail, msg, sizeof(msg));
    stream = 2;
  } else if (code != 1) {
    int cwd_not_dir = e->stage == AW_STAGE_CWD && err == ENOTDIR;
    snprintf(msg, sizeof(msg), cwd_not_dir ? DOCKER_CWD_NOT_DIR : DOCKER_FORM, detail);
  }
  head_collector_accept(stream == 2 ? &op->result->err : &op->result->out, (const uint8_t *)msg, strlen(msg));
  emit_output(op, stream, (const uint8_t *)msg, strlen(msg));
  op->result->exit_code = code;
}

static void finish(agent_exec_op_t *op, err_t *err) {
  op->base.req = NULL;
  if (op->result) op->result->duration_ms = elapsed_ms(op);
  op_settle(&op->base.op, err);
}

/* The consumer's callback (op_emit) may cancel the op: agent_op_send holds it meanwhile. */
static void on_event(agent_req_t *req, const agent_event_t *ev, void *ud) {
  (void)req;
  agent_exec_op_t *op = ud;
  err_t err = ERR_INIT;
  switch (ev->type) {
    case AE_DATA: {
      int stream = ev->stream == AW_S_ERR ? 2 : 1;
      head_collector_accept(stream == 2 ? &op->result->err : &op->result->out, ev->data, ev->len);
      emit_output(op, stream, ev->data, ev->len);
      /* The bytes are taken: credit for as many more, unless the consumer paused. */
      if (op->base.req == NULL) return; /* cancelled from the consumer's callback */
      agent_credit_taken(&op->base.credit, op->base.req, ev->stream, (uint32_t)ev->len, 0);
      return;
    }
    case AE_STARTED:
      op->pgid = ev->started.pgid;
      return;
    case AE_EXITED:
      op->pgid = 0; /* reaped: the group may be reused */
      return;
    case AE_RESULT:
      op->result->timed_out = (ev->exit.flags & AW_EXITF_TIMED_OUT) != 0;
      op->result->exit_code = ev->exit.code;
      finish(op, NULL);
      return;
    case AE_ERROR:
      if (ev->error.kind == AW_E_SPAWN && ev->error.stage != AW_STAGE_FORK && ev->error.stage != AW_STAGE_SETUP) {
        spawn_failure(op, &ev->error);
        finish(op, NULL);
        return;
      }
      agent_error_to_err(&ev->error, "run the command", op->spec.argc ? op->spec.argv[0] : "", &err);
      finish(op, &err);
      return;
    case AE_FAILED:
      /* The agent died under the command: end its group from outside (the agent cannot). */
      if (op->pgid > 1) kill_orphan_group(op->base.op.sb, op->pgid);
      agent_failure_to_err(ev->fail, &err);
      finish(op, &err);
      return;
  }
}

int agent_exec_msg_init(agent_exec_msg_t *x, const exec_spec_t *s, uint32_t flags, uint32_t window) {
  memset(x, 0, sizeof(*x));
  x->argv = calloc(s->argc ? s->argc : 1, sizeof(aw_bytes_t));
  x->env = calloc(s->envc ? s->envc : 1, sizeof(aw_bytes_t));
  if (x->argv == NULL || x->env == NULL) {
    agent_exec_msg_free(x);
    return -1;
  }
  for (size_t i = 0; i < s->argc; i++) x->argv[i] = (aw_bytes_t){(const uint8_t *)s->argv[i], (uint32_t)strlen(s->argv[i])};
  for (size_t i = 0; i < s->envc; i++) x->env[i] = (aw_bytes_t){(const uint8_t *)s->env[i], (uint32_t)strlen(s->env[i])};
  aw_exec_enc_t *e = &x->msg.u.exec;
  x->msg.type = AW_T_EXEC;
  e->flags = flags;
  e->timeout_ms = s->timeout_ms > 0 && s->timeout_ms < AW_MAX_TIMEOUT_MS ? (uint32_t)s->timeout_ms : 0;
  e->window = window;
  e->cwd = (aw_bytes_t){(const uint8_t *)s->workdir, (uint32_t)strlen(s->workdir)};
  e->argv = x->argv;
  e->argv_count = (uint32_t)s->argc;
  e->env = x->env;
  e->env_count = (uint32_t)s->envc;
  return 0;
}

void agent_exec_msg_free(agent_exec_msg_t *x) {
  free(x->argv);
  free(x->env);
  x->argv = x->env = NULL;
}

static void run(agent_op_t *base, agent_conn_t *c) {
  agent_exec_op_t *op = (agent_exec_op_t *)base;
  err_t err = ERR_INIT;
  exec_spec_t *s = &op->spec;
  agent_exec_msg_t x;
  op->result = exec_result_new(s->max_output);
  if (op->result == NULL || agent_exec_msg_init(&x, s, s->has_input ? AW_EXEC_STDIN : 0, EXEC_WINDOW) != 0) {
    err_oom(&err);
    agent_op_fail(base, &err);
    return;
  }
  int sent = agent_op_send(base, c, &x.msg, on_event);
  agent_exec_msg_free(&x);
  if (sent != 0) return;
  if (s->has_input) {
    if (agent_req_write(base->req, s->input, s->input_len, 1) != 0) {
      agent_req_cancel(base->req);
      base->req = NULL;
      err_oom(&err);
      agent_op_fail(base, &err);
      return;
    }
    free(s->input);
    s->input = NULL;
  }
}

static op_t *fallback(agent_op_t *base, err_t *err) {
  agent_exec_op_t *op = (agent_exec_op_t *)base;
  op_t *o = exec_engine_op(base->op.js, base->op.sb, &op->spec);
  if (o == NULL) err_oom(err);
  return o;
}


static napi_value result(op_t *o) { return convert_exec_result(o->js->env, ((agent_exec_op_t *)o)->result); }

static void destroy(op_t *o) {
  agent_exec_op_t *op = (agent_exec_op_t *)o;
  agent_op_destroy(&op->base);
  exec_result_free(op->result);
  exec_spec_free(&op->spec);
}

static const agent_op_kind_t exec_kind = {
    .vt = {.name = "agentExec", .start = agent_op_start, .stop = agent_op_stop, .result = result, .destroy = destroy,
           .control = agent_op_control},
    .run = run,
    .fallback = fallback,
};

napi_value agent_exec_prepare(napi_env env, sandbox_t *sb, napi_value *argv) {
  agent_exec_op_t *op = agent_op_prepare(env, &exec_kind, sizeof(*op), sb);
  if (op == NULL) return NULL;
  err_t err = ERR_INIT;
  napi_value late = NULL;
  if (exec_spec_from_js(env, argv[1], sb, &op->spec, &late, &err) == 0 && late != NULL)
    op_fail_at_start(&op->base.op, late, &err);
  return op_prepared(&op->base.op, &err);
}
