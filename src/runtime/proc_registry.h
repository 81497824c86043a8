/*
 * proc_registry.h - the managed processes of one sandbox (shared by the proc_*.c files
 * of this layer, see proc.h).
 *
 * Owns: the registry (records in start order, attached to the sandbox with
 * sandbox_attach and freed with it), each record's output tails, and the exec task that
 * carries each process. A record lives in the registry until it is pruned (the
 * original's rule: only when the limit is reached, only finished processes whose group
 * is gone) or its start failed; operations hold a reference while they use one.
 *
 * A process starts through the original's launcher and wrapper shell scripts: the
 * wrapper becomes a session (process group) leader with setsid, prints a marker with
 * its pid and group, and waits for "start" on stdin; the registry writes "start" only
 * once it has recorded the group. A start that is aborted or times out before then
 * closes stdin instead, so the user's command never runs.
 */
#ifndef SBX_PROC_REGISTRY_H
#define SBX_PROC_REGISTRY_H

#include <node_api.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/tail.h"
#include "engine/exec.h"
#include "sandbox/sandbox.h"

#define PROC_MARKER_PREFIX "ANVIA_PROCESS"
#define PROC_CHECK_TIMEOUT_MS 5000
#define PROC_CLOSE_WAIT_MS 1000

enum { P_RUNNING = 0, P_EXITED, P_STOPPED };

typedef struct proc_registry proc_registry_t;
typedef struct proc_rec proc_rec_t;
typedef struct proc_watch proc_watch_t;

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
  exec_task_t *task;
  char marker_start[64]; /* "\x1eANVIA_PROCESS:<id>:" */
  size_t marker_start_len;
  buf_t scan; /* stdout held back while looking for the marker */
  int marker_seen;
  int marker_bad;
  long long pgid;
  int closed;
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
/* Tells every watcher something changed; each unwatches itself when it is done. */
void proc_rec_notify(proc_rec_t *r);
/* Marks the record closed by us (the stream was cut): stopped, exit code 137. */
void proc_rec_close_killed(proc_rec_t *r);

/* The exec callbacks of a record's task: output (marker scan, tails) and its end. */
extern const exec_callbacks_t proc_task_callbacks;

/* { id, command, args, cwd?, status, exitCode?, startedAt, endedAt? } */
napi_value proc_info_to_js(napi_env env, proc_rec_t *r);
/* The current time as the original's new Date().toISOString(). */
void proc_iso_now(char out[64]);
/* A `process` error: fmt has one %s for arg. Returns -1. */
int proc_error(err_t *err, const char *fmt, const char *arg);

/* A small `sh -c script name a1 [a2]` exec against a process group; done gets its exit
 * code (-1 when it timed out or failed) and result. NULL with err set. */
typedef void (*proc_script_done_fn)(void *ud, int exit_code, exec_result_t *r, err_t *err);
exec_task_t *proc_run_script(sandbox_t *sb, const char *script, const char *name, const char *a1, const char *a2,
                             int64_t timeout_ms, proc_script_done_fn fn, void *ud, err_t *err);

#endif
