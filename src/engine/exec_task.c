/*
 * exec_task.c - exec tasks (see exec_task.h).
 *
 * One task: POST /containers/{name}/exec -> upgraded POST /exec/{id}/start (hijack.c)
 * -> GET /exec/{id}/json for the exit code. A timeout or a cancel closes the stream and
 * runs EXEC_KILL_SH in a second exec to end every process of the command.
 */
#include "engine/exec_task.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/hijack.h"
#include "base/rand.h"
#include "engine/timer.h"
#include "engine/sh/exec_kill_sh.h"
#include "engine/sh/input_drain_sh.h"

#define INSPECT_RETRIES 200
/* A 404 from the exec's inspection after the stream ended: Podman deletes an exec session
 * exit_command_delay seconds after its command exited (conmon's exit command). Its
 * exec_died events carry the exit code (not the exec id, in Podman 4): read them for the
 * container over the exec's lifetime, and take the code when every candidate agrees. */
#define EVENTS_SLACK_S 2
#define EVENTS_MAX_BYTES (1024 * 1024)
#define KILLER_TIMEOUT_MS 10000

enum { T_CREATE = 1, T_STREAM, T_INSPECT, T_KILLING, T_DONE };

struct exec_task {
  exec_task_t *prev, *next; /* the I/O context's list of live tasks (io->exec_tasks) */
  io_t *io;
  engine_t *eng;   /* a reference */
  char *container; /* the container's name */
  exec_spec_t spec;
  exec_callbacks_t cbs;
  void *ud;
  char marker[37];
  char *exec_id;
  http_req_t *req;
  hijack_t *hj;
  sbx_timer_t *timeout;
  sbx_timer_t *retry;
  exec_task_t *killer;
  exec_result_t *result;
  uint64_t started_ns;
  int state;
  int cancelled; /* nobody is waiting: free once the command is ended */
  int paused;
  int unref; /* exec_task_set_ref(t, 0) */
  int inspect_tries;
  int stream_ended;
  int stream_reset;    /* the stream ended with a reset (hijack_was_reset) */
  int64_t created_s;   /* wall clock at the exec's creation, for the events fallback */
  err_t inspect_err;   /* Podman: the inspection's failure, while the events are read */
};

void exec_spec_free(exec_spec_t *s) {
  for (size_t i = 0; i < s->argc; i++) free(s->argv[i]);
  free(s->argv);
  for (size_t i = 0; i < s->envc; i++) free(s->env[i]);
  free(s->env);
  free(s->workdir);
  free(s->user);
  free(s->input);
  memset(s, 0, sizeof(*s));
}

int exec_spec_add_env(exec_spec_t *s, const char *key, const char *value) {
  char **env = realloc(s->env, (s->envc + 1) * sizeof(char *));
  if (env == NULL) return -1;
  s->env = env;
  buf_t b;
  buf_init(&b, 0);
  if (buf_printf(&b, "%s=%s", key, value) != 0) {
    buf_free(&b);
    return -1;
  }
  s->env[s->envc] = buf_steal(&b, NULL);
  if (s->env[s->envc] == NULL) return -1;
  s->envc++;
  return 0;
}

int exec_spec_set_argv(exec_spec_t *s, const char *const *argv, size_t argc) {
  s->argv = calloc(argc ? argc : 1, sizeof(char *));
  if (s->argv == NULL) return -1;
  for (size_t i = 0; i < argc; i++) {
    s->argv[i] = strdup(argv[i]);
    if (s->argv[i] == NULL) return -1;
    s->argc = i + 1;
  }
  return 0;
}

static void task_free(exec_task_t *t) {
  io_t *io = t->io;
  if (t->prev) t->prev->next = t->next;
  else if (io->exec_tasks == t) io->exec_tasks = t->next;
  if (t->next) t->next->prev = t->prev;
  http_req_free(t->req);
  hijack_close(t->hj);
  sbx_timer_cancel(t->timeout);
  sbx_timer_cancel(t->retry);
  if (t->killer) exec_task_cancel(t->killer);
  exec_result_free(t->result);
  err_clear(&t->inspect_err);
  exec_spec_free(&t->spec);
  free(t->exec_id);
  free(t->container);
  engine_unref(t->eng);
  free(t);
}

static double elapsed_ms(exec_task_t *t) { return (double)(uv_hrtime() - t->started_ns) / 1e6; }

/* Reports the outcome once and frees the task. */
static void complete(exec_task_t *t, err_t *err) {
  t->state = T_DONE;
  if (t->cancelled) {
    task_free(t);
    return;
  }
  exec_result_t *result = NULL;
  if (err == NULL) {
    result = t->result;
    t->result = NULL;
    result->duration_ms = elapsed_ms(t);
  }
  exec_callbacks_t cbs = t->cbs;
  void *ud = t->ud;
  /* Free first: the callback may start new work on the same sandbox. */
  http_req_free(t->req);
  t->req = NULL;
  task_free(t);
  cbs.on_done(ud, result, err);
}

static void start_killer(exec_task_t *t);

/* Reports the error now; when the command may still be running, ends its tree afterwards. */
static void fail(exec_task_t *t, err_t *err) {
  if (!t->spec.kill_tree || t->state < T_STREAM || t->cancelled) {
    complete(t, err);
    return;
  }
  t->cancelled = 1; /* nobody waits for the killer: the task frees itself when it is done */
  exec_callbacks_t cbs = t->cbs;
  void *ud = t->ud;
  sbx_timer_cancel(t->timeout);
  t->timeout = NULL;
  start_killer(t);
  cbs.on_done(ud, NULL, err);
}

/* ---- ending the process tree ---- */

static void on_killer_done(void *ud, exec_result_t *result, err_t *err) {
  exec_task_t *t = ud;
  t->killer = NULL;
  exec_result_free(result);
  (void)err; /* best effort: the stream is already closed either way */
  complete(t, NULL);
}

static void start_killer(exec_task_t *t) {
  if (t->io->closing) {
    complete(t, NULL); /* the environment is going away: no new work */
    return;
  }
  t->state = T_KILLING;
  exec_spec_t k;
  memset(&k, 0, sizeof(k));
  const char *argv[] = {"sh", "-c", EXEC_KILL_SH, "anvia-kill", t->marker};
  err_t err = ERR_INIT;
  k.workdir = strdup("/");
  k.timeout_ms = KILLER_TIMEOUT_MS;
  k.max_output = 4096;
  if (k.workdir == NULL || exec_spec_set_argv(&k, argv, 5) != 0) {
    exec_spec_free(&k);
    complete(t, NULL);
    return;
  }
  exec_callbacks_t cbs = {.on_done = on_killer_done};
  t->killer = exec_task_start(t->eng, t->container, &k, &cbs, t, &err);
  exec_spec_free(&k);
  err_clear(&err);
  if (t->killer == NULL) complete(t, NULL);
}

static void stop_stream(exec_task_t *t) {
  hijack_close(t->hj);
  t->hj = NULL;
  http_req_free(t->req);
  t->req = NULL;
  sbx_timer_cancel(t->retry);
  t->retry = NULL;
}

static void on_timeout(void *ud) {
  exec_task_t *t = ud;
  t->timeout = NULL;
  if (t->state == T_DONE || t->state == T_KILLING) return;
  t->result->timed_out = 1;
  int started = t->state >= T_STREAM;
  stop_stream(t);
  if (started && t->spec.kill_tree) start_killer(t);
  else complete(t, NULL);
}

/* ---- exit code ---- */

static void inspect(exec_task_t *t);

static void on_retry(void *ud) {
  exec_task_t *t = ud;
  t->retry = NULL;
  inspect(t);
}

static void events_fallback(exec_task_t *t);

static void on_inspected(http_req_t *req, void *ud) {
  exec_task_t *t = ud;
  t->req = NULL;
  err_t err = ERR_INIT;
  if (!http_req_ok(req) && http_req_status(req) >= 400 && engine_info(t->eng).kind == ENGINE_PODMAN) {
    /* The session may be gone already (see EVENTS_SLACK_S): Podman answers 404, or 500
     * "retrieving exec session ...", depending on where it notices. */
    http_req_error(req, &t->inspect_err);
    http_req_free(req);
    events_fallback(t);
    return;
  }
  if (!http_req_ok(req)) {
    http_req_error(req, &err);
    http_req_free(req);
    fail(t, &err);
    err_clear(&err);
    return;
  }
  json_t *j = http_req_json(req, &err);
  http_req_free(req);
  if (j == NULL) {
    fail(t, &err);
    err_clear(&err);
    return;
  }
  json_t *running = json_object_get(j, "Running");
  json_t *code = json_object_get(j, "ExitCode");
  if (json_is_true(running) || !json_is_integer(code)) {
    json_decref(j);
    /* The stream can end a moment before the engine records the exit. */
    if (++t->inspect_tries > INSPECT_RETRIES) {
      if (t->stream_reset)
        /* The reset came while the command still ran: the connection broke under it. */
        err_sandbox(&err, CODE_DOCKER_COMMAND_FAILED, "Docker engine connection failed during an exec: %s",
                    "connection reset by peer");
      else
        err_sandbox(&err, CODE_DOCKER_COMMAND_FAILED, "Docker engine did not report the exit code of exec %s.",
                    t->exec_id);
      fail(t, &err);
      err_clear(&err);
      return;
    }
    t->retry = sbx_timer_start(t->io, t->inspect_tries < 10 ? 1 : 10, on_retry, t);
    return;
  }
  t->result->exit_code = (int)json_integer_value(code);
  json_decref(j);
  complete(t, NULL);
}

/* Reads the exec_died events of the container between the exec's creation and now. */
static void on_events(http_req_t *req, void *ud) {
  exec_task_t *t = ud;
  t->req = NULL;
  err_t err = ERR_INIT;
  long code = -1;
  int candidates = 0, agree = 1;
  if (http_req_ok(req)) {
    /* One JSON object per line. */
    const char *p = (const char *)req->resp.data, *end = p + req->resp.len;
    while (p != NULL && p < end) {
      const char *nl = memchr(p, '\n', (size_t)(end - p));
      size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
      json_t *ev = n ? json_loadb(p, n, 0, NULL) : NULL;
      json_t *attrs = json_object_get(json_object_get(ev, "Actor"), "Attributes");
      const char *action = json_string_value(json_object_get(ev, "Action"));
      const char *v = json_string_value(json_object_get(attrs, "containerExitCode"));
      if (action != NULL && strcmp(action, "exec_died") == 0 && v != NULL && v[0] && strlen(v) < 10 &&
          strspn(v, "0123456789") == strlen(v)) {
        long c = atol(v);
        if (candidates++ > 0 && c != code) agree = 0;
        code = c;
      }
      json_decref(ev);
      p = nl ? nl + 1 : NULL;
    }
  }
  http_req_free(req);
  if (candidates > 0 && agree) {
    t->result->exit_code = (int)code;
    complete(t, NULL);
    return;
  }
  /* Podman deletes an exec session exit_command_delay seconds after its command ended:
   * say so, with what the inspection answered (it may have failed for another reason). */
  err_sandbox(&err, CODE_DOCKER_COMMAND_FAILED,
              "%s did not report the exit code of exec %s: its inspection failed (%s), and its exec_died events do not "
              "say which code is this exec's (%d candidates). The command has ended; %s deletes an exec session "
              "exit_command_delay seconds after its command ends.",
              engine_info(t->eng).name, t->exec_id, t->inspect_err.message ? t->inspect_err.message : "no answer",
              candidates, engine_info(t->eng).name);
  json_t *d = t->inspect_err.details ? json_deep_copy(t->inspect_err.details) : json_object();
  if (d != NULL) {
    json_object_set_new(d, "execId", json_string(t->exec_id));
    json_object_set_new(d, "candidates", json_integer(candidates));
  }
  err_set_details(&err, d);
  fail(t, &err);
  err_clear(&err);
}

static void events_fallback(exec_task_t *t) {
  err_t err = ERR_INIT;
  int64_t now = (int64_t)time(NULL);
  char *name = url_escape(t->container);
  /* {"container":["<name>"],"event":["exec_died"]}, escaped as one query value. */
  buf_t f;
  buf_init(&f, 0);
  char *filters = NULL;
  if (name != NULL && buf_printf(&f, "{\"container\":[\"%s\"],\"event\":[\"exec_died\"]}", t->container) == 0 &&
      buf_terminate(&f) == 0)
    filters = url_escape((char *)f.data);
  buf_free(&f);
  /* `until` in the future: Podman answers once that time has come (at most ~1 s here). */
  t->req = filters ? http_req_new(t->eng, "GET", "/events?since=%lld&until=%lld&filters=%s",
                                  (long long)(t->created_s - EVENTS_SLACK_S), (long long)(now + 1), filters)
                   : NULL;
  free(name);
  free(filters);
  if (t->req == NULL) {
    err_oom(&err);
  } else {
    http_req_set_limit(t->req, EVENTS_MAX_BYTES);
    if (http_req_start(t->req, on_events, t, &err) == 0) return;
    http_req_free(t->req);
    t->req = NULL;
  }
  fail(t, &err);
  err_clear(&err);
}

static void inspect(exec_task_t *t) {
  err_t err = ERR_INIT;
  char *id = url_escape(t->exec_id);
  t->req = id ? http_req_new(t->eng, "GET", "/exec/%s/json", id) : NULL;
  free(id);
  if (t->req == NULL) {
    err_oom(&err);
  } else if (http_req_start(t->req, on_inspected, t, &err) == 0) {
    return;
  } else {
    http_req_free(t->req);
    t->req = NULL;
  }
  fail(t, &err);
  err_clear(&err);
}

/* ---- the stream ---- */

static void on_stream_data(void *ud, int stream, const uint8_t *data, size_t len) {
  exec_task_t *t = ud;
  head_collector_t *c = stream == 2 ? &t->result->err : &t->result->out;
  head_collector_accept(c, data, len);
  if (t->cbs.on_output) t->cbs.on_output(t->ud, stream, data, len);
}

static void on_stream_end(void *ud, err_t *err) {
  exec_task_t *t = ud;
  hijack_t *hj = t->hj;
  t->hj = NULL;
  t->stream_reset = err == NULL && hijack_was_reset(hj);
  hijack_close(hj);
  if (err != NULL) {
    /* The connection broke under a command that may still run: fail() ends it. */
    err_t copy = ERR_INIT;
    err_move(&copy, err);
    fail(t, &copy);
    err_clear(&copy);
    return;
  }
  t->state = T_INSPECT;
  inspect(t);
}

static const hijack_callbacks_t stream_cbs = {.on_data = on_stream_data, .on_end = on_stream_end};

static void on_created(http_req_t *req, void *ud) {
  exec_task_t *t = ud;
  t->req = NULL;
  err_t err = ERR_INIT;
  t->exec_id = http_req_reply_id(req, "Docker engine returned no exec id.", &err);
  http_req_free(req);
  if (!err_is_set(&err)) {
    t->state = T_STREAM;
    t->hj = hijack_start(t->eng, t->exec_id, t->spec.tty, &stream_cbs, t, &err);
    if (t->hj != NULL) {
      if (t->paused) hijack_pause(t->hj);
      if (t->unref) hijack_set_ref(t->hj, 0);
      if (t->spec.has_input) {
        if (hijack_write(t->hj, t->spec.input, t->spec.input_len) != 0) err_oom(&err);
        else hijack_end_stdin(t->hj);
        free(t->spec.input);
        t->spec.input = NULL;
      }
      if (!err_is_set(&err)) {
        if (t->cbs.on_started) t->cbs.on_started(t->ud);
        return;
      }
    }
  }
  fail(t, &err);
  err_clear(&err);
}

static void exec_tasks_teardown(io_t *io);

/* argv becomes: sh -c INPUT_DRAIN_SH anvia-input argv... (see INPUT_DRAIN_SH). */
static int wrap_input_drain(exec_spec_t *s) {
  static const char *const head[] = {"sh", "-c", INPUT_DRAIN_SH, "anvia-input"};
  size_t nh = sizeof(head) / sizeof(head[0]);
  char **argv = calloc(s->argc + nh, sizeof(char *));
  if (argv == NULL) return -1;
  for (size_t i = 0; i < nh; i++) {
    if ((argv[i] = strdup(head[i])) == NULL) {
      for (size_t j = 0; j < i; j++) free(argv[j]);
      free(argv);
      return -1;
    }
  }
  memcpy(argv + nh, s->argv, s->argc * sizeof(char *));
  free(s->argv);
  s->argv = argv;
  s->argc += nh;
  return 0;
}

exec_task_t *exec_task_start(engine_t *eng, const char *container, exec_spec_t *spec, const exec_callbacks_t *cbs,
                             void *ud, err_t *err) {
  io_t *io = engine_io(eng);
  if (io->closing) {
    err_sandbox(err, CODE_INVALID_STATE, "The addon is shutting down.");
    return NULL;
  }
  exec_task_t *t = calloc(1, sizeof(*t));
  if (t == NULL || io_on_close(io, exec_tasks_teardown) != 0) {
    free(t);
    err_oom(err);
    return NULL;
  }
  t->io = io;
  t->eng = eng;
  engine_ref(eng);
  t->next = io->exec_tasks;
  if (t->next) t->next->prev = t;
  io->exec_tasks = t;
  t->spec = *spec;
  memset(spec, 0, sizeof(*spec));
  t->cbs = *cbs;
  t->ud = ud;
  t->started_ns = uv_hrtime();
  t->container = strdup(container);
  t->result = exec_result_new(t->spec.max_output);
  if (t->container == NULL || t->result == NULL || uuid_v4(t->marker) != 0) goto oom;
  if (t->spec.kill_tree && exec_spec_add_env(&t->spec, EXEC_MARKER_ENV, t->marker) != 0) goto oom;
  /* An empty input is an end of file from the start: the command's stdin is /dev/null, as
   * without input, rather than a stream the engine must close for us. Docker 20.10 can lose
   * that close when it comes while the exec is still being created (the CloseIO race of
   * containerd clients): the command then waits on its input until its timeout. */
  if (t->spec.has_input && t->spec.input_len == 0 && !t->spec.attach_stdin) {
    t->spec.has_input = 0;
    free(t->spec.input);
    t->spec.input = NULL;
  }
  if (t->spec.has_input && engine_info(eng).kind == ENGINE_PODMAN && wrap_input_drain(&t->spec) != 0) goto oom;
  t->created_s = (int64_t)time(NULL);

  json_t *cmd = json_array(), *env = json_array();
  for (size_t i = 0; i < t->spec.argc; i++) json_array_append_new(cmd, json_string(t->spec.argv[i]));
  for (size_t i = 0; i < t->spec.envc; i++) json_array_append_new(env, json_string(t->spec.env[i]));
  json_t *body = json_pack("{s:b, s:b, s:b, s:b, s:o, s:o, s:s}", "AttachStdin", t->spec.attach_stdin || t->spec.has_input,
                           "AttachStdout", 1, "AttachStderr", 1, "Tty", t->spec.tty ? 1 : 0, "Cmd", cmd, "Env", env, "WorkingDir",
                           t->spec.workdir);
  if (body != NULL && t->spec.user != NULL) json_object_set_new(body, "User", json_string(t->spec.user));
  char *name = url_escape(container);
  t->req = name ? http_req_new(eng, "POST", "/containers/%s/exec", name) : NULL;
  free(name);
  if (t->req == NULL || body == NULL || http_req_set_json(t->req, body) != 0) {
    if (t->req == NULL) json_decref(body);
    goto oom;
  }
  t->state = T_CREATE;
  if (http_req_start(t->req, on_created, t, err) != 0) {
    task_free(t);
    return NULL;
  }
  if (t->spec.timeout_ms > 0) {
    t->timeout = sbx_timer_start(io, (uint64_t)t->spec.timeout_ms, on_timeout, t);
    if (t->timeout == NULL) {
      task_free(t);
      err_oom(err);
      return NULL;
    }
  }
  return t;
oom:
  task_free(t);
  err_oom(err);
  return NULL;
}

void exec_task_cancel(exec_task_t *t) {
  if (t == NULL) return;
  if (t->cancelled) return;
  t->cancelled = 1;
  sbx_timer_cancel(t->timeout);
  t->timeout = NULL;
  if (t->state == T_KILLING) return; /* the killer is already running: it frees us */
  int started = t->state >= T_STREAM && t->state != T_DONE;
  stop_stream(t);
  if (started && t->spec.kill_tree) start_killer(t);
  else task_free(t);
}

/* The I/O context is closing (the environment ends): every task ends; owners still
 * waiting get an error, background work (kills of cancelled commands) is dropped. */
static void exec_tasks_teardown(io_t *io) {
  while (io->exec_tasks != NULL) {
    exec_task_t *t = io->exec_tasks;
    if (t->cancelled) {
      task_free(t);
      continue;
    }
    err_t err = ERR_INIT;
    err_sandbox(&err, CODE_INVALID_STATE, "The addon is shutting down.");
    t->spec.kill_tree = 0; /* no second exec now */
    complete(t, &err);
    err_clear(&err);
  }
}

void exec_task_pause(exec_task_t *t) {
  t->paused = 1;
  if (t->hj) hijack_pause(t->hj);
}

void exec_task_resume(exec_task_t *t) {
  t->paused = 0;
  if (t->hj) hijack_resume(t->hj);
}

int exec_task_write(exec_task_t *t, const uint8_t *data, size_t len) {
  if (t->hj == NULL) return -1;
  return hijack_write(t->hj, data, len);
}

void exec_task_end_stdin(exec_task_t *t) {
  if (t->hj) hijack_end_stdin(t->hj);
}

size_t exec_task_queued(const exec_task_t *t) { return t == NULL ? 0 : hijack_queued(t->hj); }

const char *exec_task_exec_id(const exec_task_t *t) { return t == NULL ? NULL : t->exec_id; }

const char *exec_task_marker(const exec_task_t *t) { return t == NULL || !t->spec.kill_tree ? "" : t->marker; }

void exec_task_set_ref(exec_task_t *t, int ref) {
  t->unref = !ref;
  if (t->hj) hijack_set_ref(t->hj, ref);
}
