/*
 * term_req.h - one call on a terminal (startTerminal, attachTerminal, listTerminals and the
 * handle's write, output, wait, resize, kill) as a plain C request (term_req.c), read once
 * from the options of native.prepareTerminal(sandbox, options, action), so that either
 * transport carries it out: the agent's (agent_term.c) and, when the agent cannot run or
 * the sandbox uses the engine path, the engine's (engine_term.c).
 *
 * Owns: a term_req_t owns its spec and its input bytes (term_req_free).
 */
#ifndef SBX_TERM_REQ_H
#define SBX_TERM_REQ_H

#include <node_api.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "codec/agent_wire.h"
#include "engine/exec_task.h"
#include "sandbox/sandbox.h"

#define TERM_DEFAULT_COLS 80
#define TERM_DEFAULT_ROWS 24
#define TERM_DEFAULT_SCROLLBACK (1024u * 1024u)

typedef enum { TA_START, TA_ATTACH, TA_WRITE, TA_OUTPUT, TA_WAIT, TA_RESIZE, TA_SIGNAL, TA_LIST } term_action_t;

typedef struct term_req {
  term_action_t action;
  char id[AW_MAX_TERM_ID + 1]; /* start: a new uuid_v4; the others: the caller's, checked */
  exec_spec_t spec;            /* start: the program (no command: the default shell) */
  uint16_t cols, rows;         /* start (default 80 x 24), resize: 1 ..= AW_MAX_TERM_DIM */
  uint32_t scrollback;         /* start: AW_MIN_SCROLLBACK ..= AW_MAX_SCROLLBACK, default 1 MiB */
  uint64_t since;              /* output */
  uint8_t *input;              /* write: the bytes (a string as UTF-8) */
  size_t input_len;
  int signal; /* signal: its number, default SIGKILL */
} term_req_t;

/* The action argument ("start", ... "list"): 0, or -1 with a TypeError in err. */
int term_req_action(napi_env env, napi_value v, term_action_t *out, err_t *err);
/* Reads the options of r->action (set) into r. 0, or -1 with err set. */
int term_req_parse(napi_env env, napi_value options, sandbox_t *sb, term_req_t *r, err_t *err);
void term_req_free(term_req_t *r);

/* What a call answers, whichever transport carried it out (only the fields its action
 * reads are looked at). */
typedef struct term_answer {
  uint32_t pid;               /* start, attach */
  int exit_code, signal;      /* wait: signal 0 when it did not end by one */
  uint16_t cols, rows;        /* resize */
  int delivered;              /* signal */
  char *const *ids;           /* list */
  size_t nids;
} term_answer_t;

/* The call's JavaScript result: { id, pid }, { exitCode, signal }, { cols, rows },
 * { delivered }, [{ id }], or undefined (write, output). A signal is named "SIGKILL" for 9
 * and so on, "SIG<n>" for a number without a name. */
napi_value term_req_value(napi_env env, const term_req_t *r, const term_answer_t *a);

#endif
