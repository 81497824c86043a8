/*
 * term_req.c - a terminal call read from its options once, before any I/O (see
 * term_req.h), whichever transport carries it out: the agent's (agent_term.c) or the
 * engine's (engine_term.c). The checks and their messages are the ones both paths give.
 *
 * Owns: nothing beyond the request being filled (term_req_t owns its spec and input).
 */
#include "runtime/term_req.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rand.h"
#include "napi/args.h"
#include "napi/checks.h"
#include "napi/values.h"
#include "runtime/exec_op.h"
#include "runtime/sh/term_shell_sh.h"

static const char *const ACTIONS[] = {"start", "attach", "write", "output", "wait", "resize", "signal", "list"};

void term_req_free(term_req_t *r) {
  exec_spec_free(&r->spec);
  free(r->input);
  r->input = NULL;
  r->input_len = 0;
}

static const struct {
  const char *name;
  int sig;
} SIGNALS[] = {
    {"SIGHUP", SIGHUP},   {"SIGINT", SIGINT},   {"SIGQUIT", SIGQUIT}, {"SIGKILL", SIGKILL}, {"SIGUSR1", SIGUSR1},
    {"SIGUSR2", SIGUSR2}, {"SIGTERM", SIGTERM}, {"SIGCONT", SIGCONT}, {"SIGSTOP", SIGSTOP}, {"SIGTSTP", SIGTSTP},
    {"SIGWINCH", SIGWINCH},
};

static const char *term_req_signal_name(int sig) {
  for (size_t i = 0; i < sizeof(SIGNALS) / sizeof(SIGNALS[0]); i++)
    if (SIGNALS[i].sig == sig) return SIGNALS[i].name;
  static char other[16];
  snprintf(other, sizeof(other), "SIG%d", sig); /* the JavaScript thread only */
  return other;
}

/* signal: a name of SIGNALS or a number 1..64; undefined: SIGKILL. */
static int parse_signal(napi_env env, napi_value v, int *out, err_t *err) {
  *out = SIGKILL;
  if (nu_is_undefined(env, v)) return 0;
  int64_t n = 0;
  if (nu_typeof(env, v) == napi_number && nu_safe_integer(env, v, &n) && n >= 1 && n <= 64) {
    *out = (int)n;
    return 0;
  }
  if (nu_typeof(env, v) == napi_string) {
    char name[16];
    size_t len = 0;
    napi_get_value_string_utf8(env, v, name, sizeof(name), &len);
    for (size_t i = 0; i < sizeof(SIGNALS) / sizeof(SIGNALS[0]); i++)
      if (strcmp(SIGNALS[i].name, name) == 0) {
        *out = SIGNALS[i].sig;
        return 0;
      }
  }
  return err_type(err, "signal must be a signal name (SIGINT, SIGTERM, SIGKILL, ...) or a number from 1 to 64.");
}

/* A dimension: undefined is `def`; else an integer 1..4096. */
static int parse_dim(napi_env env, napi_value v, const char *name, uint16_t def, uint16_t *out, err_t *err) {
  *out = def;
  if (nu_is_undefined(env, v)) return 0;
  int64_t n = 0;
  if (nu_typeof(env, v) != napi_number || !nu_safe_integer(env, v, &n) || n < 1 || n > AW_MAX_TERM_DIM)
    return err_type(err, "%s must be an integer from 1 to %u.", name, AW_MAX_TERM_DIM);
  *out = (uint16_t)n;
  return 0;
}

/* id: a string the agent would take as a terminal's id. */
static int parse_id(napi_env env, napi_value options, char out[AW_MAX_TERM_ID + 1], err_t *err) {
  napi_value v = nu_get(env, options, "id");
  size_t len = 0;
  if (nu_typeof(env, v) != napi_string || napi_get_value_string_utf8(env, v, out, AW_MAX_TERM_ID + 1, &len) != napi_ok)
    return err_type(err, "id must be a terminal id string.");
  size_t full = 0;
  napi_get_value_string_utf8(env, v, NULL, 0, &full);
  if (full != len || !aw_term_id_ok((const uint8_t *)out, len))
    return err_type(err, "id must be a terminal id: 1 to %u characters of A-Z, a-z, 0-9, '.', '_', '-', not starting with '.'.",
                    AW_MAX_TERM_ID);
  return 0;
}

/* start: the program (command, args, cwd, env as exec's, without input or timeout; no
 * command is the default shell), the size and the scrollback. */
static int parse_start(napi_env env, napi_value options, sandbox_t *sb, term_req_t *op, err_t *err) {
  napi_value command = nu_get(env, options, "command");
  napi_value spec_opts;
  napi_create_object(env, &spec_opts);
  if (nu_is_undefined(env, command)) {
    if (!nu_is_undefined(env, nu_get(env, options, "args"))) return err_type(err, "args needs a command.");
    napi_value args;
    napi_create_array_with_length(env, 3, &args);
    napi_set_element(env, args, 0, nu_string(env, "-c"));
    napi_set_element(env, args, 1, nu_string(env, TERM_SHELL_SH));
    napi_set_element(env, args, 2, nu_string(env, "anvia-terminal"));
    napi_set_named_property(env, spec_opts, "command", nu_string(env, "/bin/sh"));
    napi_set_named_property(env, spec_opts, "args", args);
  } else {
    napi_set_named_property(env, spec_opts, "command", command);
    napi_set_named_property(env, spec_opts, "args", nu_get(env, options, "args"));
  }
  napi_set_named_property(env, spec_opts, "cwd", nu_get(env, options, "cwd"));
  napi_set_named_property(env, spec_opts, "env", nu_get(env, options, "env"));
  napi_value late = NULL;
  if (exec_spec_from_js(env, spec_opts, sb, &op->spec, &late, err) != 0) return -1;
  if (late != NULL) { /* a NUL: the agent refuses what the engine's CLI refused */
    exec_spec_free(&op->spec);
    return err_type(err, "command, args and env must not contain NUL characters.");
  }
  if (parse_dim(env, nu_get(env, options, "cols"), "cols", TERM_DEFAULT_COLS, &op->cols, err) ||
      parse_dim(env, nu_get(env, options, "rows"), "rows", TERM_DEFAULT_ROWS, &op->rows, err))
    return -1;
  napi_value sb_v = nu_get(env, options, "scrollbackBytes");
  int64_t n = TERM_DEFAULT_SCROLLBACK;
  if (!nu_is_undefined(env, sb_v) &&
      (nu_typeof(env, sb_v) != napi_number || !nu_safe_integer(env, sb_v, &n) || n < AW_MIN_SCROLLBACK ||
       n > AW_MAX_SCROLLBACK))
    return err_type(err, "scrollbackBytes must be an integer from %u to %u.", AW_MIN_SCROLLBACK, AW_MAX_SCROLLBACK);
  op->scrollback = (uint32_t)n;
  char uuid[37];
  if (uuid_v4(uuid) != 0) return err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, "No randomness for a terminal id.");
  snprintf(op->id, sizeof(op->id), "%s", uuid);
  return 0;
}

int term_req_action(napi_env env, napi_value v, term_action_t *out, err_t *err) {
  char name[16] = "";
  size_t len = 0;
  if (nu_typeof(env, v) == napi_string) napi_get_value_string_utf8(env, v, name, sizeof(name), &len);
  for (size_t i = 0; i < sizeof(ACTIONS) / sizeof(ACTIONS[0]); i++)
    if (strcmp(ACTIONS[i], name) == 0) {
      *out = (term_action_t)i;
      return 0;
    }
  return err_type(err, "Unknown terminal action.");
}

int term_req_parse(napi_env env, napi_value options, sandbox_t *sb, term_req_t *op, err_t *err) {
  if (!nu_is_record(env, options)) return err_type(err, "options must be an object.");
  switch (op->action) {
    case TA_START: return parse_start(env, options, sb, op, err);
    case TA_LIST: return 0;
    default: break;
  }
  if (parse_id(env, options, op->id, err)) return -1;
  switch (op->action) {
    case TA_WRITE: {
      napi_value data = nu_get(env, options, "data");
      uint8_t *p = NULL;
      size_t len = 0;
      if (nu_typeof(env, data) == napi_string) {
        char *s = nu_strdup_len(env, data, &len);
        if (s == NULL) return err_oom(err);
        op->input = (uint8_t *)s;
      } else if (nu_uint8array_view(env, data, &p, &len)) {
        op->input = malloc(len ? len : 1);
        if (op->input == NULL) return err_oom(err);
        if (len) memcpy(op->input, p, len);
      } else {
        return err_type(err, "data must be a string or Uint8Array.");
      }
      op->input_len = len;
      return 0;
    }
    case TA_OUTPUT: {
      napi_value v = nu_get(env, options, "since");
      int64_t n = 0;
      if (!nu_is_undefined(env, v) && (nu_typeof(env, v) != napi_number || !nu_safe_integer(env, v, &n) || n < 0))
        return err_type(err, "since must be a non-negative safe integer.");
      op->since = (uint64_t)n;
      return 0;
    }
    case TA_RESIZE:
      if (nu_is_undefined(env, nu_get(env, options, "cols")) || nu_is_undefined(env, nu_get(env, options, "rows")))
        return err_type(err, "resize needs cols and rows.");
      return parse_dim(env, nu_get(env, options, "cols"), "cols", 0, &op->cols, err) ||
                     parse_dim(env, nu_get(env, options, "rows"), "rows", 0, &op->rows, err)
                 ? -1
                 : 0;
    case TA_SIGNAL: return parse_signal(env, nu_get(env, options, "signal"), &op->signal, err);
    default: return 0;
  }
}

napi_value term_req_value(napi_env env, const term_req_t *r, const term_answer_t *a) {
  napi_value v;
  switch (r->action) {
    case TA_START:
    case TA_ATTACH:
      napi_create_object(env, &v);
      napi_set_named_property(env, v, "id", nu_string(env, r->id));
      napi_set_named_property(env, v, "pid", nu_number(env, a->pid));
      return v;
    case TA_WAIT:
      napi_create_object(env, &v);
      napi_set_named_property(env, v, "exitCode", nu_number(env, a->exit_code));
      napi_set_named_property(env, v, "signal", a->signal ? nu_string(env, term_req_signal_name(a->signal)) : nu_null(env));
      return v;
    case TA_RESIZE:
      napi_create_object(env, &v);
      napi_set_named_property(env, v, "cols", nu_number(env, a->cols));
      napi_set_named_property(env, v, "rows", nu_number(env, a->rows));
      return v;
    case TA_SIGNAL:
      napi_create_object(env, &v);
      napi_set_named_property(env, v, "delivered", nu_bool(env, a->delivered));
      return v;
    case TA_LIST:
      napi_create_array_with_length(env, a->nids, &v);
      for (size_t i = 0; i < a->nids; i++) {
        napi_value item;
        napi_create_object(env, &item);
        napi_set_named_property(env, item, "id", nu_string(env, a->ids[i]));
        napi_set_element(env, v, (uint32_t)i, item);
      }
      return v;
    default:
      return nu_undefined(env);
  }
}
