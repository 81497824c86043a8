/*
 * stats_parse.h - one sample of a container's resource use, from the engine's stats reply
 * (GET /containers/{id}/stats?stream=false), and the workspace's disk use from the
 * output of `du -sk <dir>`.
 *
 * Owns: nothing (plain values).
 *
 * The numbers are computed as the docker CLI computes `docker stats`: CPU percent from
 * the difference between the sample and the engine's previous one (100 = one CPU busy);
 * memory used without the inactive page cache (total_inactive_file on cgroup v1,
 * inactive_file on v2); network summed over the container's interfaces.
 */
#ifndef SBX_STATS_H
#define SBX_STATS_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

typedef struct sbx_stats {
  char read[64]; /* the engine's sample time (RFC 3339), "" when missing */
  int cpu_known; /* both samples present and the system time advanced */
  double cpu_percent;
  uint64_t cpu_total_ns;
  uint64_t system_ns; /* the host's CPU time at the sample (system_cpu_usage), 0 when missing */
  uint32_t online_cpus;
  uint64_t mem_used, mem_limit;
  int64_t pids; /* -1 when not reported */
  uint64_t rx_bytes, tx_bytes, rx_packets, tx_packets;
} sbx_stats_t;

/* 0, or -1 with err set (docker_command_failed) when the reply is not a JSON object. */
int stats_parse(const uint8_t *body, size_t len, sbx_stats_t *out, err_t *err);

/* The CPU use between two one-reading samples of the same container, `a` taken before
 * `b` (an engine whose stream=false reply has no previous reading: Podman), set in `b`
 * as read_cpu sets it from a reply's two readings. */
void stats_cpu_between(const sbx_stats_t *a, sbx_stats_t *b);

/* `du -sk` output ("<KiB>\t<dir>\n"; the last line counts when there are several) ->
 * bytes. 0, or -1 when no such line is there. */
int du_parse(const uint8_t *out, size_t len, uint64_t *bytes);

#endif
