/*
 * lifetime_cmd.c - the limits' two commands (the init's, the shell loop's) and their labels
 * (see lifetime_cmd.h). The init itself is src/agent/init.c.
 *
 * The loop, line by line: TERM and INT end it as the original's keep-alive did; USR1
 * only sets a flag (a trapped signal also interrupts `wait`, status > 128, and the time
 * of that moment becomes the last activity). `now` reads /proc/uptime ("12345.67 ...")
 * into milliseconds without a process. s is the start, p the last activity; the
 * deadline d is the earlier of s + max and p + idle; past it, process 1 exits and the
 * container stops. Otherwise one `sleep` of the time left (rounded up to whole seconds,
 * at most the tick k while an idle limit is set) is waited for, again after each
 * signal, so a stop comes between the limit and one second past it.
 */
#include "codec/lifetime_cmd.h"
#include "codec/sh/lifetime_sh.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* with_init: [LIFETIME_INIT_PATH, "init", "<idle>", "<max>"]; otherwise
 * ["sh", "-c", LIFETIME_SH, LIFETIME_ARGV0, "<idle>", "<max>"]. NULL when out of memory. */
static json_t *lifetime_cmd(const lifetime_t *l, int with_init) {
  char idle[32], max[32];
  snprintf(idle, sizeof(idle), "%lld", (long long)(l->idle_ms > 0 ? l->idle_ms : 0));
  snprintf(max, sizeof(max), "%lld", (long long)(l->max_ms > 0 ? l->max_ms : 0));
  if (with_init) return json_pack("[s, s, s, s]", LIFETIME_INIT_PATH, LIFETIME_INIT_MODE, idle, max);
  return json_pack("[s, s, s, s, s, s]", "sh", "-c", LIFETIME_SH, LIFETIME_ARGV0, idle, max);
}

int lifetime_cmd_is_init(json_t *cmd) {
  json_t *first = json_array_get(cmd, 0), *mode = json_array_get(cmd, 1);
  return json_array_size(cmd) == 4 && json_is_string(first) && strcmp(json_string_value(first), LIFETIME_INIT_PATH) == 0 &&
         json_is_string(mode) && strcmp(json_string_value(mode), LIFETIME_INIT_MODE) == 0;
}

static int set_number_label(json_t *labels, const char *name, int64_t v) {
  char num[32];
  snprintf(num, sizeof(num), "%lld", (long long)v);
  return json_object_set_new(labels, name, json_string(num));
}

int lifetime_apply(json_t *body, const lifetime_t *l, int with_init) {
  if (!lifetime_any(l)) return 0;
  json_t *labels = json_object_get(body, "Labels");
  json_t *cmd = lifetime_cmd(l, with_init);
  if (cmd == NULL || !json_is_object(labels) || json_object_set_new(body, "Cmd", cmd) != 0) return -1;
  if (l->idle_ms > 0 && set_number_label(labels, LABEL_IDLE_TIMEOUT, l->idle_ms) != 0) return -1;
  if (l->max_ms > 0 && set_number_label(labels, LABEL_MAX_LIFETIME, l->max_ms) != 0) return -1;
  return 0;
}

/* A decimal integer in range, nothing else (no sign, no spaces, no leading zero). */
static int limit_value(const char *s, int64_t *out) {
  if (s[0] < '1' || s[0] > '9' || strlen(s) > 16) return -1;
  int64_t v = 0;
  for (const char *p = s; *p; p++) {
    if (*p < '0' || *p > '9') return -1;
    v = v * 10 + (*p - '0');
  }
  if (v < LIFETIME_MIN_MS || v > LIFETIME_MAX_MS) return -1;
  *out = v;
  return 0;
}

int lifetime_from_labels(json_t *labels, lifetime_t *out, err_t *err) {
  out->idle_ms = 0;
  out->max_ms = 0;
  const char *names[2] = {LABEL_IDLE_TIMEOUT, LABEL_MAX_LIFETIME};
  int64_t *slots[2] = {&out->idle_ms, &out->max_ms};
  for (int i = 0; i < 2; i++) {
    json_t *v = json_object_get(labels, names[i]);
    /* Empty: written over an image's value (codec/sandbox_list.h labels_mask_reserved). */
    if (v == NULL || (json_is_string(v) && json_string_length(v) == 0)) continue;
    if (!json_is_string(v) || limit_value(json_string_value(v), slots[i]) != 0)
      return err_sandbox(err, CODE_INVALID_STATE, "Sandbox metadata is invalid: %s", names[i]);
  }
  return 0;
}

