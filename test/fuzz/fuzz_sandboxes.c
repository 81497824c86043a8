/*
 * fuzz_sandboxes.c - the parsers of issue 18's engine replies: the container list read
 * as sandboxes (src/codec/sandbox_list.c), status lines, the stats reply and du's output
 * (src/codec/stats_parse.c), the lifetime labels (src/codec/lifetime_cmd.c) and the fork bodies
 * built from an inspection (src/codec/forkspec.c).
 *
 * Input: any bytes. They go whole to sandboxes_parse (a GET /containers/json body),
 * stats_parse (a stats body) and du_parse; every line goes to status_stopped_for. When
 * they parse as JSON, the value is also used as a container inspection (forkspec, the
 * lifetime labels of Config.Labels) and, when it is an array, each element's "Status".
 * Properties: a kept sandbox has a valid id and its container name, a state name, ports
 * in 1..65535 and no anvia.sandbox. label among the caller's; stopped-for bounds are
 * ordered (min < max); limits read from labels are in range; a fork body always has the
 * fork's id, ephemeral workspace and image.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "codec/forkspec.h"
#include "codec/lifetime_cmd.h"
#include "codec/sandbox_list.h"
#include "codec/stats_parse.h"
#include "fuzz_common.h"

static void check_status(const char *line) {
  int code = -7;
  int64_t lo = -1, hi = -1;
  int rc = status_stopped_for(line, &code, &lo, &hi);
  FUZZ_CHECK(rc >= 0 && rc <= 2, "status_stopped_for returned %d", rc);
  if (rc == 1) FUZZ_CHECK(lo >= 0 && lo < hi, "\"%s\": [%lld, %lld)", line, (long long)lo, (long long)hi);
}

static void check_list(const uint8_t *data, size_t size) {
  uint8_t *copy = fuzz_dup(data, size);
  sandbox_summary_t *items = NULL;
  size_t n = 99;
  err_t err;
  err_init(&err);
  int rc = sandboxes_parse(copy, size, &items, &n, &err);
  free(copy);
  FUZZ_CHECK((rc == -1) == err_is_set(&err), "rc %d, error set %d", rc, err_is_set(&err));
  if (rc != 0) {
    FUZZ_CHECK(items == NULL && n == 0, "failed parse left %zu items", n);
    err_clear(&err);
    return;
  }
  for (size_t i = 0; i < n; i++) {
    sandbox_summary_t *s = &items[i];
    FUZZ_CHECK(spec_id_valid(s->id), "kept id \"%s\"", s->id);
    char *name = container_name_for(s->id);
    FUZZ_CHECK(name && strcmp(name, s->container_name) == 0, "name %s for %s", s->container_name, s->id);
    free(name);
    FUZZ_CHECK(s->state < SBX_STATE_COUNT, "state %d", (int)s->state);
    sbx_state_t back;
    FUZZ_CHECK(sbx_state_from_name(sbx_state_name(s->state), &back) == 0 && back == s->state, "state name");
    for (size_t p = 0; p < s->nports; p++)
      FUZZ_CHECK(s->ports[p].container_port >= 1 && s->ports[p].container_port <= 65535 && s->ports[p].host_port >= 1 &&
                     s->ports[p].host_port <= 65535,
                 "port %d -> %d", s->ports[p].container_port, s->ports[p].host_port);
    for (size_t l = 0; l < s->labels.count; l++)
      FUZZ_CHECK(strncmp(s->labels.items[l].key, LABEL_PREFIX, strlen(LABEL_PREFIX)) != 0, "reserved label %s kept",
                 s->labels.items[l].key);
    if (s->stopped_known) FUZZ_CHECK(s->stopped_min_ms < s->stopped_max_ms, "stopped bounds");
    if (s->ws_known) FUZZ_CHECK(s->volume != NULL && s->volume[0] != 0, "workspace without volume");
  }
  sandbox_list_free(items, n);
}

static void check_stats(const uint8_t *data, size_t size) {
  uint8_t *copy = fuzz_dup(data, size);
  sbx_stats_t st;
  err_t err;
  err_init(&err);
  int rc = stats_parse(copy, size, &st, &err);
  free(copy);
  FUZZ_CHECK((rc == -1) == err_is_set(&err), "rc %d, error set %d", rc, err_is_set(&err));
  if (rc == 0) {
    FUZZ_CHECK(memchr(st.read, 0, sizeof(st.read)) != NULL, "read not terminated");
    if (st.cpu_known) FUZZ_CHECK(st.cpu_percent >= 0, "cpu %f", st.cpu_percent);
    FUZZ_CHECK(st.pids >= -1, "pids %lld", (long long)st.pids);
  }
  err_clear(&err);
  uint64_t bytes = 0;
  copy = fuzz_dup(data, size);
  rc = du_parse(copy, size, &bytes);
  free(copy);
  FUZZ_CHECK(rc == 0 || rc == -1, "du_parse returned %d", rc);
  if (rc == 0) FUZZ_CHECK(bytes % 1024 == 0, "du bytes %llu", (unsigned long long)bytes);
}

static void check_inspection(json_t *ins) {
  lifetime_t l = {-1, -1};
  err_t err;
  err_init(&err);
  int rc = lifetime_from_labels(json_object_get(json_object_get(ins, "Config"), "Labels"), &l, &err);
  FUZZ_CHECK((rc == -1) == err_is_set(&err), "rc %d, error set %d", rc, err_is_set(&err));
  if (rc == 0) {
    FUZZ_CHECK(l.idle_ms == 0 || (l.idle_ms >= LIFETIME_MIN_MS && l.idle_ms <= LIFETIME_MAX_MS), "idle %lld",
               (long long)l.idle_ms);
    FUZZ_CHECK(l.max_ms == 0 || (l.max_ms >= LIFETIME_MIN_MS && l.max_ms <= LIFETIME_MAX_MS), "max %lld",
               (long long)l.max_ms);
  }
  err_clear(&err);

  const char *base = forkspec_base_image(ins);
  fork_names_t n = {"fork-1", "parent", "sha256:abc", base ? base : "img", "vol", "/workspace"};
  json_t *body = forkspec_container(ins, &n, &err);
  FUZZ_CHECK((body == NULL) == err_is_set(&err), "body %p, error set %d", (void *)body, err_is_set(&err));
  if (body != NULL) {
    json_t *labels = json_object_get(body, "Labels");
    FUZZ_CHECK(strcmp(json_string_value(json_object_get(labels, LABEL_ID)), "fork-1") == 0, "fork id");
    FUZZ_CHECK(strcmp(json_string_value(json_object_get(labels, LABEL_WS_TYPE)), "ephemeral") == 0, "ws type");
    FUZZ_CHECK(strcmp(json_string_value(json_object_get(body, "Image")), "sha256:abc") == 0, "image");
    json_t *mounts = json_object_get(json_object_get(body, "HostConfig"), "Mounts");
    FUZZ_CHECK(json_array_size(mounts) == 1, "mounts");
    char *text = json_dumps(body, JSON_COMPACT);
    FUZZ_CHECK(text != NULL, "fork body does not serialise");
    free(text);
    json_decref(body);
  }
  err_clear(&err);
  size_t i;
  json_t *c;
  json_array_foreach(ins, i, c) {
    json_t *status = json_object_get(c, "Status");
    if (json_is_string(status)) check_status(json_string_value(status));
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  check_list(data, size);
  check_stats(data, size);
  size_t start = 0;
  for (size_t i = 0; i <= size; i++) {
    if (i == size || data[i] == '\n') {
      char *line = fuzz_strndup(data + start, i - start);
      check_status(line);
      free(line);
      start = i + 1;
    }
  }
  uint8_t *block = fuzz_dup(data, size);
  json_t *j = json_loadb((const char *)block, size, 0, NULL);
  free(block);
  if (j != NULL) {
    check_inspection(j);
    json_decref(j);
  }
  return 0;
}
