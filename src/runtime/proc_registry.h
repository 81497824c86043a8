/*
 * proc_registry.h - the managed processes of one sandbox (shared by the proc_*.c files
 * of this layer, see proc.h), and the carriers that run them.
 *
 * Owns: the registry (records in start order, attached to the sandbox with
 * sandbox_attach and freed with it), each record's output tails, and the link to what
 * carries each process (an engine exec or an agent request). A record lives in the
 * registry until it is pruned (the original's rule: only when the limit is reached, only
 * finished processes whose group is gone) or its start failed; operations hold a
 * reference while they use one.
 *
 * A process starts through the original's launcher and wrapper shell scripts: the
 * wrapper becomes a session (process group) leader with setsid, prints a marker with
 * its pid and group, and waits for "start" on stdin; the start operation has "start"
 * written once the group is recorded, if it is still in time. A start that is aborted or
 * times out before then cuts the launch instead, so the user's command never runs.
 *
 * A carrier (proc_carrier_t) is how the launch runs and how its group is checked and
 * signalled: proc_engine.c through Engine API execs and small scripts, agent_procs.c
 * through the in-sandbox agent. The scripts, the marker, the records, starting and
 * stopping are the same for both, so a process behaves the same whichever carries it.
 */
#ifndef SBX_PROC_REGISTRY_H
#define SBX_PROC_REGISTRY_H

#include <node_api.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/tail.h"
#include "engine/exec_task.h"
#include "sandbox/sandbox.h"

#define PROC_MARKER_PREFIX "ANVIA_PROCESS"
#define PROC_CHECK_TIMEOUT_MS 5000
#define PROC_CLOSE_WAIT_MS 1000

enum { P_RUNNING = 0, P_EXITED, P_STOPPED };

typedef struct proc_registry proc_registry_t;
typedef struct proc_rec proc_rec_t;
typedef struct proc_watch proc_watch_t;
typedef struct proc_carrier proc_carrier_t;

/* A group check's answer: alive 1 or 0; err set (alive -1) when it could not be made. */
typedef void (*proc_check_done_fn)(void *ud, int alive, err_t *err);
/* A stop's answer: gone 1 or 0; err set when it could not be carried out. */
typedef void (*proc_stop_done_fn)(void *ud, int gone, err_t *err);

struct proc_carrier {
  const char *name;
  /* Runs the launch `spec` (taken) for r: the output goes to proc_rec_output, the end to
   * proc_rec_ended; r->link holds a reference on r until then. 0, or -1 with err set. */
  int (*launch)(sandbox_t *sb, proc_rec_t *r, exec_spec_t *spec, err_t *err);
  /* The group is recorded and the start goes on: "start" to the wrapper, then the end of
   * its input. */
  void (*go)(proc_rec_t *r);
  /* Lets go of r->link (not NULL) at once: no callback after this; the launch's tree
   * ends, as when the original killed its docker CLI child. */
  void (*cut)(proc_rec_t *r, void *link);
  /* `kill -0` on r's group. A handle for cancel, or NULL with err set. */
  void *(*check_group)(proc_rec_t *r, proc_check_done_fn done, void *ud, err_t *err);
  /* TERM to r's group, up to grace_ms for it to go, KILL, up to a second more. */
  void *(*stop_group)(proc_rec_t *r, int64_t grace_ms, proc_stop_done_fn done, void *ud, err_t *err);
  /* No callback of the handle's after this. NULL is fine. */
  void (*cancel)(void *handle);
};

/* Through the Engine API (proc_engine.c). */
extern const proc_carrier_t proc_engine_carrier;

/* Someone waiting for a record to start or to close. */
struct proc_watch {
  void (*fn)(proc_watch_t *w);
  proc_watch_t *next;
};

struct proc_rec {
  int refs;
  proc_registry_t *pm;
  proc_rec_t *next;
  int in_registry;
  char id[37];
  char *command;
  char **args;
  size_t nargs;
  char *cwd; /* as given, or NULL */
  int status;
  int has_exit_code;
  int exit_code;
  char started_at[64];
  char ended_at[64];
  tail_t out, err;
  sandbox_t *sb; /* not a reference: the sandbox owns the registry */
  const proc_carrier_t *carrier;
  void *link; /* what carries the launch while it runs (the carrier's), holding a reference */
  char marker_start[64]; /* "\x1eANVIA_PROCESS:<id>:" */
  size_t marker_start_len;
  buf_t scan; /* stdout held back while looking for the marker */
  int marker_seen;
  int marker_bad;
  long long pgid;
  int closed; /* the launch is over and its end known (an orphan has no link and is not closed) */
  int stop_requested;
  proc_watch_t *watchers;
};

struct proc_registry {
  proc_rec_t *records;
  size_t count;
  int disposed;
};

/* The sandbox's registry, made at first use; NULL when out of memory. */
proc_registry_t *proc_registry_of(sandbox_t *sb);

/* A new record (one reference, not registered yet) for `max_output` bytes of tail per
 * stream; NULL when out of memory. */
proc_rec_t *proc_rec_new(size_t max_output);
void proc_rec_ref(proc_rec_t *r);
void proc_rec_unref(proc_rec_t *r);
/* Appends to the registry (it takes a reference). */
void proc_rec_register(proc_registry_t *pm, proc_rec_t *r);
/* Takes a record out of the registry (dropping the registry's reference). */
void proc_rec_remove(proc_rec_t *r);
proc_rec_t *proc_rec_find(proc_registry_t *pm, const char *id);
void proc_rec_watch(proc_rec_t *r, proc_watch_t *w);
void proc_rec_unwatch(proc_rec_t *r, proc_watch_t *w);
/* Marks the record closed by us (the stream was cut): stopped, exit code 137. */
void proc_rec_close_killed(proc_rec_t *r);
/* Cuts the record's link, if any (the carrier lets go; the link's reference is dropped). */
void proc_rec_cut(proc_rec_t *r);

/* What carriers report: output of the launch (stream 1 stdout, 2 stderr: the marker
 * scan, the tails), and its end (the link is over: its reference is dropped). */
void proc_rec_output(proc_rec_t *r, int stream, const uint8_t *data, size_t len);
void proc_rec_ended(proc_rec_t *r, int exit_code);
/* The link is lost but the process may live on (the agent died): the record stays
 * running; stopping it finds its group by id. The link's reference is dropped. */
void proc_rec_orphaned(proc_rec_t *r);

/* { id, command, args, cwd?, status, exitCode?, startedAt, endedAt? } */
napi_value proc_info_to_js(napi_env env, proc_rec_t *r);
/* A `process` error: fmt has one %s for arg. Returns -1. */
int proc_error(err_t *err, const char *fmt, const char *arg);

#endif
