/*
 * procs.c - SIGNAL and GROUP_ALIVE: acting on a process group by its id, so the host can
 * stop a managed (detached) command even from a new agent after the old one has gone.
 *
 * Owns: nothing; both requests answer at once. Process group ids <= 1 are refused, and
 * so is the agent's own group: no request can signal the agent or init.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <unistd.h>

#include "agent.h"

static int bad_pgid(uint32_t id, int32_t pgid) {
  if (pgid <= 1) {
    ag_err_t e;
    ag_err_set(&e, AW_E_INVALID, 0, "pgid must be greater than 1");
    e.value = (uint64_t)(int64_t)pgid;
    out_error(id, &e);
    return 1;
  }
  if (pgid == (int32_t)g.self || pgid == (int32_t)getpgrp()) {
    out_error_simple(id, AW_E_INVALID, 0, "pgid is the agent's own group");
    return 1;
  }
  return 0;
}

void procs_signal_run(uint32_t id, const uint8_t *p, size_t len) {
  aw_signal_req_t m;
  if (out_refused(id, aw_dec_signal(p, len, &m), "SIGNAL")) return;
  if (bad_pgid(id, m.pgid)) return;
  aw_signal_res_t res = {0, 0};
  if (m.flags & AW_SIGNAL_TREE) {
    int n = ptree_signal(m.pgid, m.signal, 1);
    if (n >= 0) {
      res.delivered = n > 0;
      res.count = (uint32_t)n;
    } else if (errno != ESRCH) {
      out_error_simple(id, ag_err_kind_of(errno), errno, "kill");
      return;
    }
  } else if (kill(-m.pgid, m.signal) == 0) {
    res.delivered = 1;
    res.count = 1;
  } else if (errno != ESRCH) {
    out_error_simple(id, ag_err_kind_of(errno), errno, "kill");
    return;
  }
  aw_writer_t w;
  if (out_frame_begin(&w, 64)) out_frame_end(&w, aw_put_signal_result(&w, id, &res));
}

void procs_alive_run(uint32_t id, const uint8_t *p, size_t len) {
  aw_alive_req_t m;
  int rc = aw_dec_group_alive(p, len, &m);
  if (rc != AW_OK) {
    out_error_simple(id, AW_E_PROTOCOL, 0, aw_status_str(rc));
    return;
  }
  if (bad_pgid(id, m.pgid)) return;
  aw_alive_res_t res = {0, 0, 0};
  int krc = kill(-m.pgid, 0);
  int exists = krc == 0 || errno == EPERM;
  if (exists) {
    uint32_t live, zombies;
    if (ptree_group_members(m.pgid, &live, &zombies) == 0) {
      res.members = live;
      res.zombies = zombies;
      res.alive = live > 0;
    } else {
      res.members = AW_UNKNOWN;
      res.zombies = AW_UNKNOWN;
      res.alive = 1;
    }
  }
  aw_writer_t w;
  if (out_frame_begin(&w, 64)) out_frame_end(&w, aw_put_alive_result(&w, id, &res));
}
