/*
 * sandbox_list.c - the container list read as sandboxes, status lines read as stopped-for
 * bounds, and which reserved labels of a container or an image the package can trust
 * (see sandbox_list.h).
 */
#include "codec/sandbox_list.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static const char *const STATE_NAMES[SBX_STATE_COUNT] = {
    [SBX_RUNNING] = "running", [SBX_STOPPED] = "stopped",   [SBX_PAUSED] = "paused",
    [SBX_RESTARTING] = "restarting", [SBX_REMOVING] = "removing", [SBX_DEAD] = "dead",
};

const char *sbx_state_name(sbx_state_t s) { return s < SBX_STATE_COUNT ? STATE_NAMES[s] : "stopped"; }

int sbx_state_from_name(const char *name, sbx_state_t *out) {
  for (int i = 0; i < SBX_STATE_COUNT; i++) {
    if (strcmp(name, STATE_NAMES[i]) == 0) {
      *out = (sbx_state_t)i;
      return 0;
    }
  }
  return -1;
}

/* Docker's states, and Podman's own where its compatible API passes them through:
 * "stopping" (a stop in progress: Docker reports such a container as running until it has
 * exited, and so do we), "stopped" (exited, not yet cleaned up), "configured" and
 * "initialized" (created, never started). A sandbox is never left out of a listing for
 * being half-way between two states. */
/* The engine's State string ("exited", "created", ...); -1 when unknown. */
static int sbx_state_from_engine(const char *state, sbx_state_t *out) {
  if (strcmp(state, "exited") == 0 || strcmp(state, "created") == 0 || strcmp(state, "stopped") == 0 ||
      strcmp(state, "configured") == 0 || strcmp(state, "initialized") == 0)
    *out = SBX_STOPPED;
  else if (strcmp(state, "running") == 0 || strcmp(state, "stopping") == 0) *out = SBX_RUNNING;
  else if (strcmp(state, "paused") == 0) *out = SBX_PAUSED;
  else if (strcmp(state, "restarting") == 0) *out = SBX_RESTARTING;
  else if (strcmp(state, "removing") == 0) *out = SBX_REMOVING;
  else if (strcmp(state, "dead") == 0) *out = SBX_DEAD;
  else return -1;
  return 0;
}

/* ---- status lines ---- */

#define SEC 1000LL
#define MIN (60 * SEC)
#define HOUR (60 * MIN)
#define HALF_HOUR (30 * MIN)

/* A decimal count of at most 7 digits at *p (advanced past it); -1 when none. */
static int64_t count_at(const char **p) {
  const char *s = *p;
  int64_t v = 0;
  int digits = 0;
  while (*s >= '0' && *s <= '9') {
    if (++digits > 7) return -1;
    v = v * 10 + (*s - '0');
    s++;
  }
  if (digits == 0) return -1;
  *p = s;
  return v;
}

/* HumanDuration's text followed by " ago" and nothing else -> [min, max) in ms. */
static int human_duration(const char *s, int64_t *min_ms, int64_t *max_ms) {
  struct fixed {
    const char *text;
    int64_t lo, hi;
  } fixed[] = {
      {"Less than a second ago", 0, SEC},
      {"1 second ago", SEC, 2 * SEC},
      {"About a minute ago", MIN, 2 * MIN},
      {"About an hour ago", HOUR, HOUR + HALF_HOUR},
  };
  for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
    if (strcmp(s, fixed[i].text) == 0) {
      *min_ms = fixed[i].lo;
      *max_ms = fixed[i].hi;
      return 0;
    }
  }
  const char *p = s;
  int64_t n = count_at(&p);
  if (n < 0 || *p != ' ') return -1;
  p++;
  struct unit {
    const char *text;
    int64_t lo, span, shift; /* [n*lo - shift, n*lo - shift + span) */
  } units[] = {
      {"seconds ago", SEC, SEC, 0},
      {"minutes ago", MIN, MIN, 0},
      /* hours: int(h + 0.5) == n */
      {"hours ago", HOUR, HOUR, HALF_HOUR},
      /* days, weeks, months: (int(h + 0.5)) / (24, 168, 720) == n */
      {"days ago", 24 * HOUR, 24 * HOUR, HALF_HOUR},
      {"weeks ago", 168 * HOUR, 168 * HOUR, HALF_HOUR},
      {"months ago", 720 * HOUR, 720 * HOUR, HALF_HOUR},
      /* years: int(h) / 24 / 365 == n */
      {"years ago", 8760 * HOUR, 8760 * HOUR, 0},
  };
  for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
    if (strcmp(p, units[i].text) == 0) {
      int64_t lo = n * units[i].lo - units[i].shift;
      *min_ms = lo < 0 ? 0 : lo;
      *max_ms = n * units[i].lo - units[i].shift + units[i].span;
      return 0;
    }
  }
  return -1;
}

int status_stopped_for(const char *status, int *exit_code, int64_t *min_ms, int64_t *max_ms) {
  static const char prefix[] = "Exited (";
  if (strncmp(status, prefix, sizeof(prefix) - 1) != 0) return 0;
  const char *p = status + sizeof(prefix) - 1;
  int negative = 0;
  if (*p == '-') {
    negative = 1;
    p++;
  }
  int64_t code = count_at(&p);
  if (code < 0 || *p != ')') return 0;
  p++;
  *exit_code = (int)(negative ? -code : code);
  if (*p == 0) return 2;
  if (*p != ' ') return 0;
  return human_duration(p + 1, min_ms, max_ms) == 0 ? 1 : 2;
}

/* ---- the list ---- */

static char *dup_or_null(json_t *v) {
  return json_is_string(v) ? strdup(json_string_value(v)) : NULL;
}

/* ---- reserved labels ---- */

int labels_mask_reserved(json_t *labels, json_t *image_labels) {
  const char *key;
  json_t *value;
  if (!json_is_object(labels) || !json_is_object(image_labels)) return 0;
  json_object_foreach(image_labels, key, value) {
    (void)value;
    if (strncmp(key, LABEL_PREFIX, sizeof(LABEL_PREFIX) - 1) != 0 || json_object_get(labels, key) != NULL) continue;
    if (json_object_set_new(labels, key, json_string("")) != 0) return -1;
  }
  return 0;
}

const char *label_value(json_t *labels, const char *name) {
  json_t *v = json_object_get(labels, name);
  return json_is_string(v) && json_string_length(v) > 0 ? json_string_value(v) : NULL;
}

static const char *without_algorithm(const char *id) {
  return strncmp(id, "sha256:", 7) == 0 ? id + 7 : id;
}

int fork_labels_proven(json_t *labels, const char *container_image) {
  const char *own = label_value(labels, LABEL_FORK_IMAGE);
  if (own == NULL || container_image == NULL || container_image[0] == 0) return 0;
  const char *a = without_algorithm(own), *b = without_algorithm(container_image);
  return a[0] != 0 && strcmp(a, b) == 0;
}

int image_is_sandboxes(const uint8_t *body, size_t len, const char *id) {
  json_t *img = json_loadb((const char *)(body ? body : (const uint8_t *)""), len, 0, NULL);
  json_t *label = json_object_get(json_object_get(json_object_get(img, "Config"), "Labels"), LABEL_ID);
  int ours = id != NULL && json_is_string(label) && strcmp(json_string_value(label), id) == 0;
  json_decref(img);
  return ours;
}

static int has_name(json_t *names, const char *want) {
  size_t i;
  json_t *n;
  json_array_foreach(names, i, n) {
    if (json_is_string(n) && strcmp(json_string_value(n), want) == 0) return 1;
  }
  return 0;
}

static int user_labels(json_t *labels, kv_list_t *out) {
  size_t n = 0;
  const char *key;
  json_t *value;
  json_object_foreach(labels, key, value) {
    if (json_is_string(value) && strncmp(key, LABEL_PREFIX, sizeof(LABEL_PREFIX) - 1) != 0) n++;
  }
  out->items = n ? calloc(n, sizeof(kv_t)) : NULL;
  out->count = 0;
  if (n && out->items == NULL) return -1;
  json_object_foreach(labels, key, value) {
    if (!json_is_string(value) || strncmp(key, LABEL_PREFIX, sizeof(LABEL_PREFIX) - 1) == 0) continue;
    kv_t *kv = &out->items[out->count];
    kv->key = strdup(key);
    kv->value = strdup(json_string_value(value));
    if (kv->key == NULL || kv->value == NULL) {
      free(kv->key);
      free(kv->value);
      return -1;
    }
    out->count++;
  }
  return 0;
}

/* Ports published on 127.0.0.1 over tcp, as the sandbox publishes them. */
static int published(json_t *ports, sandbox_summary_t *s) {
  size_t n = json_array_size(ports);
  if (n == 0) return 0;
  s->ports = calloc(n, sizeof(published_port_t));
  if (s->ports == NULL) return -1;
  size_t i;
  json_t *p;
  json_array_foreach(ports, i, p) {
    json_t *ip = json_object_get(p, "IP"), *type = json_object_get(p, "Type");
    json_int_t priv = json_integer_value(json_object_get(p, "PrivatePort"));
    json_int_t pub = json_integer_value(json_object_get(p, "PublicPort"));
    if (!json_is_string(ip) || strcmp(json_string_value(ip), "127.0.0.1") != 0) continue;
    if (!json_is_string(type) || strcmp(json_string_value(type), "tcp") != 0) continue;
    if (priv < 1 || priv > 65535 || pub < 1 || pub > 65535) continue;
    s->ports[s->nports].container_port = (int)priv;
    s->ports[s->nports].host_port = (int)pub;
    s->nports++;
  }
  return 0;
}

/* 1 when `c` is a sandbox (filled into s), 0 when it is skipped, -1 when out of memory. */
static int read_entry(json_t *c, sandbox_summary_t *s) {
  json_t *labels = json_object_get(c, "Labels");
  json_t *schema = json_object_get(labels, LABEL_SCHEMA);
  json_t *id = json_object_get(labels, LABEL_ID);
  if (!json_is_string(schema) || strcmp(json_string_value(schema), SBX_SCHEMA_VERSION) != 0) return 0;
  if (!json_is_string(id) || !spec_id_valid(json_string_value(id))) return 0;
  json_t *state = json_object_get(c, "State");
  if (!json_is_string(state) || sbx_state_from_engine(json_string_value(state), &s->state) != 0) return 0;
  char *name = container_name_for(json_string_value(id));
  if (name == NULL) return -1;
  char slash[80];
  snprintf(slash, sizeof(slash), "/%s", name);
  s->container_name = name;
  if (!has_name(json_object_get(c, "Names"), slash)) return 0;
  s->id = strdup(json_string_value(id));
  s->image = strdup(json_is_string(json_object_get(c, "Image")) ? json_string_value(json_object_get(c, "Image")) : "");
  if (s->id == NULL || s->image == NULL) return -1;
  json_t *created = json_object_get(c, "Created");
  s->created_s = json_is_integer(created) && json_integer_value(created) >= 0 ? json_integer_value(created) : -1;
  json_t *status = json_object_get(c, "Status");
  if (json_is_string(status)) {
    int rc = status_stopped_for(json_string_value(status), &s->exit_code, &s->stopped_min_ms, &s->stopped_max_ms);
    s->exit_code_known = rc > 0;
    s->stopped_known = rc == 1;
  }
  s->workdir = dup_or_null(json_object_get(labels, LABEL_WORKDIR));
  s->volume = dup_or_null(json_object_get(labels, LABEL_WS_VOLUME));
  json_t *type = json_object_get(labels, LABEL_WS_TYPE);
  if (json_is_string(type) && s->volume != NULL && s->volume[0] != 0) {
    if (strcmp(json_string_value(type), "ephemeral") == 0) s->ws_known = s->ws_ephemeral = 1;
    else if (strcmp(json_string_value(type), "docker-volume") == 0) s->ws_known = 1;
  }
  /* A fork's labels count only on the container made from the image they name (an
   * image's own labels, merged into its containers', cannot name it). */
  json_t *image_id = json_object_get(c, "ImageID");
  if (fork_labels_proven(labels, json_is_string(image_id) ? json_string_value(image_id) : NULL)) {
    s->owned_image = strdup(label_value(labels, LABEL_FORK_IMAGE));
    const char *parent = label_value(labels, LABEL_FORK_PARENT);
    s->fork_parent = parent ? strdup(parent) : NULL;
    if (s->owned_image == NULL || (parent && s->fork_parent == NULL)) return -1;
  }
  err_t ignored = ERR_INIT;
  if (lifetime_from_labels(labels, &s->lifetime, &ignored) != 0) s->lifetime.idle_ms = s->lifetime.max_ms = 0;
  err_clear(&ignored);
  if (user_labels(labels, &s->labels) != 0) return -1;
  /* Ports in effect: a container that does not run has none (Docker lists none for it;
   * Podman lists the bindings it would make, with the host ports of its last run). */
  if (s->state != SBX_STOPPED && s->state != SBX_DEAD && published(json_object_get(c, "Ports"), s) != 0) return -1;
  return 1;
}

static void summary_free(sandbox_summary_t *s) {
  free(s->id);
  free(s->container_name);
  free(s->image);
  free(s->workdir);
  free(s->volume);
  free(s->ports);
  kv_list_free(&s->labels);
  free(s->owned_image);
  free(s->fork_parent);
  memset(s, 0, sizeof(*s));
}

void sandbox_list_free(sandbox_summary_t *s, size_t n) {
  for (size_t i = 0; s != NULL && i < n; i++) summary_free(&s[i]);
  free(s);
}

int sandboxes_parse(const uint8_t *body, size_t len, sandbox_summary_t **out, size_t *n, err_t *err) {
  *out = NULL;
  *n = 0;
  json_t *list = json_loadb((const char *)(body ? body : (const uint8_t *)""), len, 0, NULL);
  if (!json_is_array(list)) {
    json_decref(list);
    return err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, "Docker returned an invalid container list.");
  }
  size_t count = json_array_size(list);
  sandbox_summary_t *items = count ? calloc(count, sizeof(*items)) : NULL;
  if (count && items == NULL) {
    json_decref(list);
    return err_oom(err);
  }
  size_t kept = 0;
  size_t i;
  json_t *c;
  json_array_foreach(list, i, c) {
    int rc = read_entry(c, &items[kept]);
    if (rc < 0) {
      sandbox_list_free(items, kept + 1);
      json_decref(list);
      return err_oom(err);
    }
    if (rc == 0) summary_free(&items[kept]);
    else kept++;
  }
  json_decref(list);
  if (kept == 0) {
    free(items);
    items = NULL;
  }
  *out = items;
  *n = kept;
  return 0;
}
