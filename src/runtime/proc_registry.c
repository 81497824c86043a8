/*
 * proc_registry.c - the managed processes of one sandbox: records, their output and the
 * marker handshake's reading side, whatever carries them (see proc_registry.h).
 */
#include "runtime/proc_registry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "base/rand.h"
#include "napi/values.h"

#define MAX_MARKER_SCAN 4096

/* The current time as the original's new Date().toISOString(). */
static void proc_iso_now(char out[64]) {
  struct timeval tv;
  gettimeofday(&tv, NULL);
  struct tm tm;
  gmtime_r(&tv.tv_sec, &tm);
  snprintf(out, 64, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
           tm.tm_min, tm.tm_sec, (int)(tv.tv_usec / 1000));
}

int proc_error(err_t *err, const char *fmt, const char *arg) { return err_sandbox(err, CODE_PROCESS, fmt, arg); }

/* ---- the registry ---- */

static void registry_free(void *state) {
  proc_registry_t *pm = state;
  while (pm->records) proc_rec_remove(pm->records);
  free(pm);
}

/* The key the registry is attached to its sandbox under. */
static const char registry_key = 0;

proc_registry_t *proc_registry_of(sandbox_t *sb) {
  return sandbox_attached_new(sb, &registry_key, sizeof(proc_registry_t), registry_free);
}

/* ---- records ---- */

proc_rec_t *proc_rec_new(size_t max_output) {
  proc_rec_t *r = calloc(1, sizeof(*r));
  if (r == NULL) return NULL;
  if (uuid_v4(r->id) != 0) {
    free(r);
    return NULL;
  }
  r->refs = 1;
  r->status = P_RUNNING;
  proc_iso_now(r->started_at);
  tail_init(&r->out, max_output);
  tail_init(&r->err, max_output);
  buf_init(&r->scan, 0);
  r->marker_start_len =
      (size_t)snprintf(r->marker_start, sizeof(r->marker_start), "\036%s:%s:", PROC_MARKER_PREFIX, r->id);
  return r;
}

void proc_rec_ref(proc_rec_t *r) { r->refs++; }

void proc_rec_unref(proc_rec_t *r) {
  if (r == NULL || --r->refs > 0) return;
  free(r->command);
  for (size_t i = 0; i < r->nargs; i++) free(r->args[i]);
  free(r->args);
  free(r->cwd);
  tail_free(&r->out);
  tail_free(&r->err);
  buf_free(&r->scan);
  free(r);
}

void proc_rec_register(proc_registry_t *pm, proc_rec_t *r) {
  r->pm = pm;
  r->next = NULL;
  proc_rec_t **tail = &pm->records;
  while (*tail) tail = &(*tail)->next;
  *tail = r;
  r->in_registry = 1;
  pm->count++;
  proc_rec_ref(r);
}

void proc_rec_remove(proc_rec_t *r) {
  proc_registry_t *pm = r->pm;
  if (!r->in_registry) return;
  for (proc_rec_t **p = &pm->records; *p; p = &(*p)->next) {
    if (*p == r) {
      *p = r->next;
      break;
    }
  }
  r->in_registry = 0;
  r->next = NULL;
  pm->count--;
  proc_rec_unref(r);
}

proc_rec_t *proc_rec_find(proc_registry_t *pm, const char *id) {
  for (proc_rec_t *r = pm->records; r; r = r->next)
    if (strcmp(r->id, id) == 0) return r;
  return NULL;
}

void proc_rec_watch(proc_rec_t *r, proc_watch_t *w) {
  w->next = r->watchers;
  r->watchers = w;
}

void proc_rec_unwatch(proc_rec_t *r, proc_watch_t *w) {
  for (proc_watch_t **p = &r->watchers; *p; p = &(*p)->next) {
    if (*p == w) {
      *p = w->next;
      break;
    }
  }
  w->next = NULL;
}

/* Tells every watcher something changed; each unwatches itself when it is done. */
static void proc_rec_notify(proc_rec_t *r) {
  proc_rec_ref(r);
  proc_watch_t *list = r->watchers;
  while (list) {
    proc_watch_t *next = list->next;
    list->fn(list);
    list = next;
  }
  proc_rec_unref(r);
}

void proc_rec_cut(proc_rec_t *r) {
  void *link = r->link;
  if (link == NULL) return;
  r->link = NULL;
  r->carrier->cut(r, link);
  proc_rec_unref(r); /* the link's reference */
}

void proc_rec_close_killed(proc_rec_t *r) {
  proc_rec_cut(r);
  if (r->closed) return;
  r->closed = 1;
  r->status = P_STOPPED;
  r->has_exit_code = 1;
  r->exit_code = 137;
  proc_iso_now(r->ended_at);
}

/* ---- output and the marker ---- */

/* Parses "<pid>:<group>" (positive safe integers, the group above 1); 0 when it is not
 * that. The marker comes from the sandbox and the group is what stopProcess signals:
 * group 1 would make `kill -TERM -1` signal every process it may, 0 its own group. */
static int parse_ids(const uint8_t *body, size_t n, long long *group) {
  char ids[64];
  long long pid = 0;
  char extra;
  if (n >= sizeof(ids)) return 0;
  memcpy(ids, body, n);
  ids[n] = 0;
  return sscanf(ids, "%lld:%lld%c", &pid, group, &extra) == 2 && pid > 0 && *group > 1 &&
         pid <= 9007199254740991LL && *group <= 9007199254740991LL;
}

/* Looks for "\x1eANVIA_PROCESS:<id>:<pid>:<group>\x1e" in the held-back stdout; what is
 * certainly not part of it goes to the tail. */
static void scan_marker(proc_rec_t *r) {
  uint8_t *data = r->scan.data;
  size_t len = r->scan.len;
  uint8_t *start = len >= r->marker_start_len ? memmem(data, len, r->marker_start, r->marker_start_len) : NULL;
  if (start == NULL) {
    /* Keep only what could still be the beginning of the marker. */
    size_t keep = r->marker_start_len - 1;
    if (len > keep) {
      tail_accept(&r->out, data, len - keep);
      buf_consume(&r->scan, len - keep);
    }
    return;
  }
  size_t at = (size_t)(start - data);
  uint8_t *body = start + r->marker_start_len;
  uint8_t *end = memchr(body, 0x1e, len - at - r->marker_start_len);
  if (end == NULL) {
    if (at > 0) {
      tail_accept(&r->out, data, at);
      buf_consume(&r->scan, at);
    }
    if (r->scan.len > MAX_MARKER_SCAN) r->marker_bad = 1;
    return;
  }
  long long group = 0;
  int ok = parse_ids(body, (size_t)(end - body), &group);
  if (at > 0) tail_accept(&r->out, data, at);
  size_t after = (size_t)(end + 1 - data);
  if (after < len) tail_accept(&r->out, data + after, len - after);
  buf_free(&r->scan);
  if (!ok) {
    r->marker_bad = 1;
    return;
  }
  r->pgid = group;
  r->marker_seen = 1;
}

void proc_rec_output(proc_rec_t *r, int stream, const uint8_t *data, size_t len) {
  if (stream == 2) {
    tail_accept(&r->err, data, len);
    return;
  }
  if (r->marker_seen || r->marker_bad) {
    tail_accept(&r->out, data, len);
    return;
  }
  if (buf_append(&r->scan, data, len) != 0) {
    r->marker_bad = 1;
    return;
  }
  scan_marker(r);
  if (r->marker_seen || r->marker_bad) proc_rec_notify(r); /* the start lets it run, or not */
}

void proc_rec_ended(proc_rec_t *r, int exit_code) {
  r->link = NULL;
  if (r->scan.len > 0) {
    tail_accept(&r->out, r->scan.data, r->scan.len);
    buf_free(&r->scan);
  }
  r->status = r->stop_requested ? P_STOPPED : P_EXITED;
  r->has_exit_code = 1;
  r->exit_code = exit_code;
  proc_iso_now(r->ended_at);
  r->closed = 1;
  proc_rec_notify(r);
  proc_rec_unref(r); /* the link's reference */
}

void proc_rec_orphaned(proc_rec_t *r) {
  r->link = NULL;
  proc_rec_notify(r);
  proc_rec_unref(r); /* the link's reference */
}

/* ---- info objects ---- */

napi_value proc_info_to_js(napi_env env, proc_rec_t *r) {
  napi_value o, args;
  napi_create_object(env, &o);
  napi_set_named_property(env, o, "id", nu_string(env, r->id));
  napi_set_named_property(env, o, "command", nu_string(env, r->command));
  napi_create_array_with_length(env, r->nargs, &args);
  for (size_t i = 0; i < r->nargs; i++) napi_set_element(env, args, (uint32_t)i, nu_string(env, r->args[i]));
  napi_set_named_property(env, o, "args", args);
  napi_set_named_property(env, o, "status",
                          nu_string(env, r->status == P_RUNNING ? "running" : r->status == P_EXITED ? "exited" : "stopped"));
  napi_set_named_property(env, o, "startedAt", nu_string(env, r->started_at));
  if (r->cwd) napi_set_named_property(env, o, "cwd", nu_string(env, r->cwd));
  if (r->has_exit_code) napi_set_named_property(env, o, "exitCode", nu_number(env, r->exit_code));
  if (r->ended_at[0]) napi_set_named_property(env, o, "endedAt", nu_string(env, r->ended_at));
  return o;
}
