/*
 * err.h - the error record the C side carries until it reaches JavaScript.
 *
 * Owns: an err_t owns its message, its details (a jansson value) and its cause text.
 * Deep code never touches N-API to report a failure: it fills an err_t, and the
 * operation layer (op.c) turns it into a DockerSandboxError, TypeError or RangeError
 * at the moment it rejects a promise.
 */
#ifndef SBX_ERR_H
#define SBX_ERR_H

#include <jansson.h>

typedef enum err_kind {
  ERRK_NONE = 0,
  ERRK_SANDBOX, /* DockerSandboxError with a code */
  ERRK_TYPE,    /* TypeError */
  ERRK_RANGE,   /* RangeError */
} err_kind_t;

/* DockerSandboxErrorCode values, as the original package names them. */
#define CODE_DOCKER_UNAVAILABLE "docker_unavailable"
#define CODE_DOCKER_COMMAND_FAILED "docker_command_failed"
#define CODE_IMAGE_NOT_FOUND "image_not_found"
#define CODE_VOLUME_NOT_FOUND "volume_not_found"
#define CODE_RUNTIME_NOT_FOUND "runtime_not_found"
#define CODE_SANDBOX_NOT_FOUND "sandbox_not_found"
#define CODE_INVALID_STATE "invalid_state"
#define CODE_INVALID_PATH "invalid_path"
#define CODE_TIMEOUT "timeout"
#define CODE_FILE_TOO_LARGE "file_too_large"
#define CODE_TOOL_POLICY "tool_policy"
#define CODE_PORT "port"
#define CODE_PROCESS "process"

struct exec_result;

typedef struct err {
  err_kind_t kind;
  const char *code; /* static string, for ERRK_SANDBOX */
  char *message;
  json_t *details;                   /* optional, owned */
  struct exec_result *exec_details;  /* optional, owned: an exec result as details */
  char *cause;                       /* optional, owned: message of an Error used as cause */
} err_t;

/* An empty record: `err_t err = ERR_INIT;` declares one, err_init empties one in place. */
#define ERR_INIT {.kind = ERRK_NONE}
void err_init(err_t *e);
void err_clear(err_t *e);
/* Sets kind/code/message (printf-style). Replaces any earlier content. Returns -1. */
int err_set(err_t *e, err_kind_t kind, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
int err_sandbox(err_t *e, const char *code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int err_type(err_t *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int err_range(err_t *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Out of memory: a DockerSandboxError that still carries a message without allocating. */
int err_oom(err_t *e);
void err_set_details(err_t *e, json_t *details); /* steals the reference */
void err_set_cause(err_t *e, const char *cause);
/* Copies src's kind, code, message, details and cause into dst (replacing what dst held).
 * Returns -1, as the setters. */
int err_copy(err_t *dst, const err_t *src);
/* Moves src into dst (dst is cleared first); src is left empty. */
void err_move(err_t *dst, err_t *src);
static inline int err_is_set(const err_t *e) { return e->kind != ERRK_NONE; }

#endif
