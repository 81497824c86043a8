/*
 * exec_task.h - running one command in a sandbox: exec create, the upgraded stream (stdin in,
 * demultiplexed output out), the exit code, a timeout that ends the command's whole
 * process tree, and cancellation that does the same in the background.
 *
 * Owns: an exec_task_t owns its requests, its connection, its timer and its result
 * until it reports them. Runtime operations (exec, execStream, listFiles, waitForPort,
 * the process manager's checks) are built from exec tasks.
 *
 * How the process tree is found: every command runs with ANVIA_SANDBOX_EXEC_ID=<uuid>
 * in its environment, which its children inherit; on timeout or cancel a second exec
 * freezes and kills every process in the container carrying that value (see
 * engine/sh/exec_kill.sh). The original left timed-out commands running.
 */
#ifndef SBX_EXEC_H
#define SBX_EXEC_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "base/exec_result.h"
#include "engine/engine.h"

#define EXEC_MARKER_ENV "ANVIA_SANDBOX_EXEC_ID"

typedef struct exec_spec {
  char **argv; /* command then args */
  size_t argc;
  char **env; /* "KEY=value" */
  size_t envc;
  char *workdir; /* absolute container path */
  char *user;    /* the exec's user ("0"), or NULL for the container's own user */
  int attach_stdin;
  int has_input;
  uint8_t *input;
  size_t input_len;
  int64_t timeout_ms; /* 0: none */
  size_t max_output;  /* per stream, for the result */
  int kill_tree;      /* mark the command so timeout/cancel can end its process tree */
  int tty;            /* "Tty": true: the command gets a pty; its output is raw, all stream 1 */
} exec_spec_t;

void exec_spec_free(exec_spec_t *s);
/* Adds "KEY=value". */
int exec_spec_add_env(exec_spec_t *s, const char *key, const char *value);
int exec_spec_set_argv(exec_spec_t *s, const char *const *argv, size_t argc);

typedef struct exec_task exec_task_t;

typedef struct exec_callbacks {
  /* Optional: every piece of output as it arrives (stream 1 stdout, 2 stderr). */
  void (*on_output)(void *ud, int stream, const uint8_t *data, size_t len);
  /* Once, unless cancelled: the result (caller owns it) or the error. */
  void (*on_done)(void *ud, exec_result_t *result, err_t *err);
  /* Optional: the exec was created and its start sent (exec_task_exec_id is known, input
   * may be written). Called from the loop, at most once. */
  void (*on_started)(void *ud);
} exec_callbacks_t;

/* Runs `spec` in the container named `container` (a reference to `eng` is kept). Takes
 * ownership of `spec`'s contents (spec is left empty). NULL with err set on failure. */
exec_task_t *exec_task_start(engine_t *eng, const char *container, exec_spec_t *spec, const exec_callbacks_t *cbs,
                             void *ud, err_t *err);
/* Stops the task (no callback afterwards); the command is ended in the background. */
void exec_task_cancel(exec_task_t *t);
void exec_task_pause(exec_task_t *t);
void exec_task_resume(exec_task_t *t);
/* Writes to a running command's stdin (attach_stdin without has_input). */
int exec_task_write(exec_task_t *t, const uint8_t *data, size_t len);
void exec_task_end_stdin(exec_task_t *t);
/* Input bytes written and not yet on the socket (hijack_queued): what a writer bounds. */
size_t exec_task_queued(const exec_task_t *t);
/* The engine's id of the exec, once created (on_started), else NULL. */
const char *exec_task_exec_id(const exec_task_t *t);
/* The value of EXEC_MARKER_ENV every process of the command carries (kill_tree), else "". */
const char *exec_task_marker(const exec_task_t *t);
/* Whether the task's connection keeps Node's loop alive (default yes): hijack_set_ref. */
void exec_task_set_ref(exec_task_t *t, int ref);

#endif
