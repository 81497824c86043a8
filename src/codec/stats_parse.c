/*
 * stats_parse.c - the stats reply and du's output read as numbers (see stats_parse.h).
 */
#include "codec/stats_parse.h"

#include <jansson.h>
#include <string.h>

/* A non-negative integer member, 0 when missing or not one. */
static uint64_t u64(json_t *obj, const char *key) {
  json_t *v = json_object_get(obj, key);
  return json_is_integer(v) && json_integer_value(v) > 0 ? (uint64_t)json_integer_value(v) : 0;
}

static void read_cpu(json_t *j, sbx_stats_t *out) {
  json_t *cpu = json_object_get(j, "cpu_stats"), *pre = json_object_get(j, "precpu_stats");
  json_t *usage = json_object_get(cpu, "cpu_usage"), *pre_usage = json_object_get(pre, "cpu_usage");
  out->cpu_total_ns = u64(usage, "total_usage");
  uint64_t online = u64(cpu, "online_cpus");
  if (online == 0) online = json_array_size(json_object_get(usage, "percpu_usage"));
  if (online > 4096) online = 4096;
  out->online_cpus = (uint32_t)online;
  uint64_t total = out->cpu_total_ns, pre_total = u64(pre_usage, "total_usage");
  uint64_t sys = u64(cpu, "system_cpu_usage"), pre_sys = u64(pre, "system_cpu_usage");
  out->system_ns = sys;
  if (json_is_object(pre_usage) && pre_total > 0 && sys > pre_sys && total >= pre_total && online > 0) {
    out->cpu_known = 1;
    out->cpu_percent = (double)(total - pre_total) / (double)(sys - pre_sys) * (double)online * 100.0;
  }
}

void stats_cpu_between(const sbx_stats_t *a, sbx_stats_t *b) {
  if (a->cpu_total_ns > 0 && b->system_ns > a->system_ns && b->cpu_total_ns >= a->cpu_total_ns && b->online_cpus > 0) {
    b->cpu_known = 1;
    b->cpu_percent = (double)(b->cpu_total_ns - a->cpu_total_ns) / (double)(b->system_ns - a->system_ns) *
                     (double)b->online_cpus * 100.0;
  }
}

static void read_memory(json_t *j, sbx_stats_t *out) {
  json_t *mem = json_object_get(j, "memory_stats");
  json_t *st = json_object_get(mem, "stats");
  uint64_t usage = u64(mem, "usage");
  json_t *v1 = json_object_get(st, "total_inactive_file");
  uint64_t inactive = json_is_integer(v1) ? u64(st, "total_inactive_file") : u64(st, "inactive_file");
  out->mem_used = inactive < usage ? usage - inactive : usage;
  out->mem_limit = u64(mem, "limit");
}

static void read_networks(json_t *j, sbx_stats_t *out) {
  const char *name;
  json_t *n;
  json_object_foreach(json_object_get(j, "networks"), name, n) {
    (void)name;
    out->rx_bytes += u64(n, "rx_bytes");
    out->tx_bytes += u64(n, "tx_bytes");
    out->rx_packets += u64(n, "rx_packets");
    out->tx_packets += u64(n, "tx_packets");
  }
}

int stats_parse(const uint8_t *body, size_t len, sbx_stats_t *out, err_t *err) {
  memset(out, 0, sizeof(*out));
  out->pids = -1;
  json_t *j = json_loadb((const char *)(body ? body : (const uint8_t *)""), len, 0, NULL);
  if (!json_is_object(j)) {
    json_decref(j);
    return err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, "Docker returned invalid container statistics.");
  }
  json_t *read = json_object_get(j, "read");
  if (json_is_string(read) && json_string_length(read) < sizeof(out->read)) {
    memcpy(out->read, json_string_value(read), json_string_length(read));
    out->read[json_string_length(read)] = 0;
  }
  read_cpu(j, out);
  read_memory(j, out);
  json_t *pids = json_object_get(json_object_get(j, "pids_stats"), "current");
  if (json_is_integer(pids) && json_integer_value(pids) >= 0) out->pids = json_integer_value(pids);
  read_networks(j, out);
  json_decref(j);
  return 0;
}

int du_parse(const uint8_t *out, size_t len, uint64_t *bytes) {
  int found = 0;
  size_t i = 0;
  while (i < len) {
    uint64_t kib = 0;
    int digits = 0;
    while (i < len && out[i] >= '0' && out[i] <= '9') {
      if (++digits > 15) break;
      kib = kib * 10 + (uint64_t)(out[i] - '0');
      i++;
    }
    if (digits > 0 && digits <= 15 && i < len && (out[i] == '\t' || out[i] == ' ')) {
      *bytes = kib * 1024;
      found = 1;
    }
    while (i < len && out[i] != '\n') i++;
    i++;
  }
  return found ? 0 : -1;
}
