/*
 * lifetime.c - the `lifetime` option and the activity tracker (see lifetime.h).
 *
 * Owns: each tracker_t (attached to its sandbox) owns its timer (a libuv timer of its
 * own, unreferenced so that it never keeps Node alive, counted in the I/O context so the
 * environment's teardown waits for it to close) and its one request in flight. The
 * trackers of an environment are listed per thread (one environment per thread in Node),
 * so the teardown hook can end them before the I/O context closes.
 */
#include "lifecycle/lifetime.h"

#include <stdlib.h>
#include <string.h>
#include <uv.h>

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
  int dead; /* torn down with its environment: only the memory is left */
  tracker_t *prev, *next;
};

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
  err_t err;
  err_init(&err);
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
  if (l->idle_ms <= 0 || sandbox_attached(sb, &TRACKER_KEY) != NULL) return 0;
  tracker_t *t = calloc(1, sizeof(*t));
  if (t == NULL || jsenv_on_teardown(js, on_teardown) != 0) {
    free(t);
    return err_oom(err);
  }
  t->sb = sb;
  t->js = js;
  t->period = (uint64_t)l->idle_ms / 4;
  if (sandbox_attach(sb, &TRACKER_KEY, t, free_tracker) != 0) {
    free(t);
    return err_oom(err);
  }
  t->next = live_trackers;
  if (live_trackers) live_trackers->prev = t;
  live_trackers = t;
  return 0;
}

static tracker_t *tracker_of(sandbox_t *sb) { return sb ? sandbox_attached(sb, &TRACKER_KEY) : NULL; }

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
  size_t argc = 2;
  napi_value argv[2] = {NULL, NULL};
  NU_CALL(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  sandbox_t *sb = sandbox_from_js(env, argc > 0 ? argv[0] : nu_undefined(env));
  if (sb == NULL) return NULL;
  tracker_t *t = tracker_of(sb);
  if (t == NULL) return nu_bool(env, 0);
  int32_t delta = 0;
  if (argc > 1) napi_get_value_int32(env, argv[1], &delta);
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
