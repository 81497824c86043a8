/*
 * lifetime.c - the `lifetime` option, the activity tracker and the lifetime watch (see
 * lifetime.h).
 *
 * Owns: each tracker_t (attached to its sandbox) owns its timer (a libuv timer of its
 * own, unreferenced so that it never keeps Node alive, counted in the I/O context so the
 * environment's teardown waits for it to close) and its one request in flight; with a
 * lifetime limit, also the watch's timer (engine/timer.h, unreferenced), its one request
 * and the StartedAt string of the run it watches. The trackers of an environment are
 * listed per thread (one environment per thread in Node), so the teardown hook can end
 * them before the I/O context closes.
 */
#include "lifecycle/lifetime.h"

#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "engine/timer.h"
#include "napi/convert.h"
#include "napi/jsenv.h"
#include "napi/values.h"

typedef struct tracker tracker_t;

typedef struct tick {
  uv_timer_t handle;
  io_t *io;
  tracker_t *owner; /* NULL once the owner let go of it (closing) */
} tick_t;

struct tracker {
  sandbox_t *sb; /* the sandbox it is attached to (no reference: it lives inside it) */
  jsenv_t *js;
  uint64_t period; /* idle / 4: the most often the container is signalled */
  int inflight;    /* operations in progress */
  int holds;
  int owed;           /* a signal sent after the last operation ended is still needed */
  uint64_t last_sent; /* when the last signal was sent (ms, monotonic); 0: never */
  tick_t *tick;
  http_req_t *req;
  /* the lifetime watch (max_ms > 0): learn the run's StartedAt, wait max_ms +
   * LIFETIME_HOST_GRACE_MS, inspect again, stop the same run if it still runs */
  int64_t max_ms;
  int watch_stage;
  sbx_timer_t *watch_timer;
  http_req_t *watch_req;
  char *started_at;
  int dead; /* torn down with its environment: only the memory is left */
  tracker_t *prev, *next;
};

enum { W_NONE = 0, W_LEARN, W_WAIT, W_CHECK, W_STOP, W_DONE };

static const int TRACKER_KEY = 0;
static _Thread_local tracker_t *live_trackers;

static uint64_t now_ms(void) { return uv_hrtime() / 1000000u; }

/* ---- the option ---- */

int lifetime_read(napi_env env, napi_value options, lifetime_t *out, err_t *err) {
  out->idle_ms = 0;
  out->max_ms = 0;
  napi_value v = nu_get(env, options, "lifetime");
  if (nu_is_undefined(env, v)) return 0;
  if (!nu_is_record(env, v)) return err_type(err, "lifetime must be an object.");
  static const char *const names[2] = {"idleTimeoutMs", "maxLifetimeMs"};
  int64_t *slots[2] = {&out->idle_ms, &out->max_ms};
  for (int i = 0; i < 2; i++) {
    napi_value x = nu_get(env, v, names[i]);
    if (nu_is_undefined(env, x)) continue;
    int64_t n = 0;
    if (!nu_safe_integer(env, x, &n) || n < LIFETIME_MIN_MS || n > LIFETIME_MAX_MS)
      return err_range(err, "lifetime.%s must be an integer from %d to %lld.", names[i], LIFETIME_MIN_MS,
                       (long long)LIFETIME_MAX_MS);
    *slots[i] = n;
  }
  return 0;
}

/* ---- the timer ---- */

static void poke(tracker_t *t);

static void on_tick_closed(uv_handle_t *h) {
  tick_t *k = h->data;
  io_t *io = k->io;
  free(k);
  io_handle_closed(io);
}

static void on_tick(uv_timer_t *h) {
  tick_t *k = h->data;
  if (k->owner != NULL) poke(k->owner);
}

static void tick_arm(tracker_t *t, uint64_t ms) {
  if (t->tick == NULL) {
    io_t *io = t->js->io;
    if (io->closing) return;
    tick_t *k = calloc(1, sizeof(*k));
    if (k == NULL) return;
    if (uv_timer_init(io->uv, &k->handle) != 0) {
      free(k);
      return;
    }
    io_handle_opened(io);
    k->io = io;
    k->owner = t;
    k->handle.data = k;
    uv_unref((uv_handle_t *)&k->handle);
    t->tick = k;
  }
  uv_update_time(t->js->io->uv);
  uv_timer_start(&t->tick->handle, on_tick, ms, 0);
}

static void tick_stop(tracker_t *t) {
  if (t->tick != NULL) uv_timer_stop(&t->tick->handle);
}

static void tick_close(tracker_t *t) {
  tick_t *k = t->tick;
  t->tick = NULL;
  if (k == NULL) return;
  k->owner = NULL;
  uv_timer_stop(&k->handle);
  uv_close((uv_handle_t *)&k->handle, on_tick_closed);
}

/* ---- signals ---- */

static void on_sent(http_req_t *req, void *ud) {
  tracker_t *t = ud;
  t->req = NULL;
  http_req_free(req); /* 204, or 409 when the container is not running: nothing to do */
  poke(t);
}

static int send_signal(tracker_t *t) {
  char *esc = url_escape(t->sb->container_name);
  http_req_t *r = esc ? http_req_new(t->sb->eng, "POST", "/containers/%s/kill?signal=SIGUSR1", esc) : NULL;
  free(esc);
  if (r == NULL) return -1;
  err_t err = ERR_INIT;
  if (http_req_start(r, on_sent, t, &err) != 0) {
    http_req_free(r);
    err_clear(&err);
    return -1;
  }
  t->req = r;
  t->last_sent = now_ms();
  return 0;
}

/* Sends now what is due, or sets the timer for when it will be. */
static void poke(tracker_t *t) {
  if (t->dead) return;
  if ((t->inflight == 0 && !t->owed) || t->holds > 0) {
    tick_stop(t);
    return;
  }
  uint64_t now = now_ms();
  uint64_t due = t->last_sent == 0 ? now : t->last_sent + t->period;
  if (now < due) {
    tick_arm(t, due - now);
    return;
  }
  tick_stop(t);
  if (t->req != NULL) return; /* on_sent pokes again */
  if (send_signal(t) != 0) return;
  if (t->inflight == 0) t->owed = 0;
  else tick_arm(t, t->period);
}

/* ---- the lifetime watch ---- */

static void watch_send(tracker_t *t, const char *method, const char *fmt, int stage);

/* State.StartedAt of a running container's inspection; NULL otherwise. */
static const char *running_since(json_t *ins) {
  json_t *state = json_object_get(ins, "State");
  json_t *at = json_object_get(state, "StartedAt");
  if (!json_is_true(json_object_get(state, "Running")) || !json_is_string(at)) return NULL;
  return json_string_value(at);
}

static void on_watch_due(void *ud) {
  tracker_t *t = ud;
  t->watch_timer = NULL;
  watch_send(t, "GET", "/containers/%s/json", W_CHECK);
}

static void on_watch_resp(http_req_t *req, void *ud) {
  tracker_t *t = ud;
  t->watch_req = NULL;
  err_t err = ERR_INIT;
  json_t *ins = t->watch_stage != W_STOP && http_req_ok(req) ? http_req_json(req, &err) : NULL;
  err_clear(&err);
  http_req_free(req);
  const char *since = running_since(ins);
  int stage = t->watch_stage;
  t->watch_stage = W_DONE;
  if (stage == W_LEARN && since != NULL && (t->started_at = strdup(since)) != NULL) {
    t->watch_timer = sbx_timer_start(t->js->io, (uint64_t)t->max_ms + LIFETIME_HOST_GRACE_MS, on_watch_due, t);
    sbx_timer_unref(t->watch_timer);
    if (t->watch_timer != NULL) t->watch_stage = W_WAIT;
  } else if (stage == W_CHECK && since != NULL && strcmp(since, t->started_at) == 0) {
    /* The same run, past its limit: what held it is the sandbox's doing. */
    watch_send(t, "POST", "/containers/%s/stop?t=1", W_STOP);
  }
  json_decref(ins);
}

/* One request of the watch; a request that cannot be made ends the watch (the container
 * still enforces the limit itself). */
static void watch_send(tracker_t *t, const char *method, const char *fmt, int stage) {
  t->watch_stage = W_DONE;
  if (t->dead || t->js->io->closing) return;
  char *esc = url_escape(t->sb->container_name);
  http_req_t *r = esc ? http_req_new(t->sb->eng, method, fmt, esc) : NULL;
  free(esc);
  if (r == NULL) return;
  if (stage != W_STOP) http_req_set_limit(r, LIFETIME_MAX_INSPECT_BYTES);
  err_t err = ERR_INIT;
  if (http_req_start(r, on_watch_resp, t, &err) != 0) {
    http_req_free(r);
    err_clear(&err);
    return;
  }
  t->watch_req = r;
  t->watch_stage = stage;
}

static void watch_end(tracker_t *t) {
  sbx_timer_cancel(t->watch_timer);
  t->watch_timer = NULL;
  http_req_free(t->watch_req);
  t->watch_req = NULL;
  free(t->started_at);
  t->started_at = NULL;
}

/* ---- attaching and ending ---- */

static void unlink_tracker(tracker_t *t) {
  if (t->prev) t->prev->next = t->next;
  else if (live_trackers == t) live_trackers = t->next;
  if (t->next) t->next->prev = t->prev;
  t->prev = t->next = NULL;
}

static void end_tracker(tracker_t *t) {
  if (t->dead) return;
  t->dead = 1;
  http_req_free(t->req);
  t->req = NULL;
  tick_close(t);
  watch_end(t);
  unlink_tracker(t);
}

static void free_tracker(void *state) {
  tracker_t *t = state;
  end_tracker(t);
  free(t);
}

static void on_teardown(jsenv_t *js) {
  tracker_t *t = live_trackers;
  while (t != NULL) {
    tracker_t *next = t->next;
    if (t->js == js) end_tracker(t);
    t = next;
  }
}

int lifetime_track(jsenv_t *js, sandbox_t *sb, const lifetime_t *l, err_t *err) {
  if (!lifetime_any(l) || sandbox_attached(sb, &TRACKER_KEY) != NULL) return 0;
  tracker_t *t = calloc(1, sizeof(*t));
  if (t == NULL || jsenv_on_teardown(js, on_teardown) != 0) {
    free(t);
    return err_oom(err);
  }
  t->sb = sb;
  t->js = js;
  t->period = l->idle_ms > 0 ? (uint64_t)l->idle_ms / 4 : 0;
  t->max_ms = l->max_ms > 0 ? l->max_ms : 0;
  if (sandbox_attach(sb, &TRACKER_KEY, t, free_tracker) != 0) {
    free(t);
    return err_oom(err);
  }
  t->next = live_trackers;
  if (live_trackers) live_trackers->prev = t;
  live_trackers = t;
  if (t->max_ms > 0) watch_send(t, "GET", "/containers/%s/json", W_LEARN);
  return 0;
}

/* The tracker of a sandbox with an idle limit (activity is for those only). */
static tracker_t *tracker_of(sandbox_t *sb) {
  tracker_t *t = sb ? sandbox_attached(sb, &TRACKER_KEY) : NULL;
  return t != NULL && t->period > 0 ? t : NULL;
}

void activity_begin(sandbox_t *sb) {
  tracker_t *t = tracker_of(sb);
  if (t == NULL) return;
  t->inflight++;
  poke(t);
}

void activity_end(sandbox_t *sb) {
  tracker_t *t = tracker_of(sb);
  if (t == NULL || t->inflight == 0) return;
  if (--t->inflight == 0) t->owed = 1;
  poke(t);
}

void activity_hold(sandbox_t *sb) {
  tracker_t *t = tracker_of(sb);
  if (t == NULL) return;
  t->holds++;
  poke(t);
}

void activity_release(sandbox_t *sb) {
  tracker_t *t = tracker_of(sb);
  if (t == NULL || t->holds == 0) return;
  t->holds--;
  t->owed = 1;
  poke(t);
}

/* native.sandboxActivity(sandbox, delta) -> whether the sandbox has an idle limit (the
 * shim stops calling for one that has none). */
static napi_value js_activity(napi_env env, napi_callback_info info) {
  napi_value delta_v;
  sandbox_t *sb = convert_sandbox_call(env, info, &delta_v);
  if (sb == NULL) return NULL;
  tracker_t *t = tracker_of(sb);
  if (t == NULL) return nu_bool(env, 0);
  int32_t delta = 0;
  napi_get_value_int32(env, delta_v, &delta); /* 0 unless a number */
  if (delta > 0) activity_begin(sb);
  else if (delta < 0) activity_end(sb);
  return nu_bool(env, 1);
}

void lifetime_register(napi_env env, napi_value exports) {
  napi_property_descriptor fns[] = {
      {"sandboxActivity", NULL, js_activity, NULL, NULL, NULL, napi_default, NULL},
  };
  napi_define_properties(env, exports, sizeof(fns) / sizeof(fns[0]), fns);
}
