/*
 * ag_err.c - the agent's typed errors (ag_err_t, agent.h): a protocol error kind, the
 * errno behind it and a bounded detail text, as ERROR frames carry them.
 *
 * Owns: nothing (an ag_err_t is a value; its detail is a fixed array).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "agent.h"

void ag_err_decode(ag_err_t *e, int rc, const char *what) {
  uint16_t kind = rc == AW_ERR_LIMIT ? AW_E_LIMIT : rc == AW_ERR_NUL || rc == AW_ERR_VALUE ? AW_E_INVALID : AW_E_PROTOCOL;
  ag_err_set(e, kind, 0, "%s: %s", what, aw_status_str(rc));
}

uint16_t ag_err_kind_of(int errnum) {
  switch (errnum) {
  case ENOENT: return AW_E_NOT_FOUND;
  case EACCES:
  case EPERM: return AW_E_PERMISSION;
  case ENOMEM:
  case EMFILE:
  case ENFILE:
  case EAGAIN: return AW_E_RESOURCES;
  case EROFS: return AW_E_READ_ONLY;
  case ENOSPC:
  case EDQUOT: return AW_E_NO_SPACE;
  case ENOTDIR: return AW_E_NOT_DIRECTORY;
  case EISDIR: return AW_E_IS_DIRECTORY;
  case ELOOP: return AW_E_SYMLINK;
  case ENAMETOOLONG: return AW_E_LIMIT;
  default: return AW_E_IO;
  }
}

void ag_err_set(ag_err_t *e, uint16_t kind, int errnum, const char *fmt, ...) {
  e->kind = kind;
  e->stage = AW_STAGE_NONE;
  e->err = errnum;
  e->value = 0;
  e->detail_len = 0;
  e->detail[0] = 0;
  if (fmt) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(e->detail, sizeof(e->detail), fmt, ap);
    va_end(ap);
    if (n > 0) e->detail_len = (size_t)n < sizeof(e->detail) ? (size_t)n : sizeof(e->detail) - 1;
  }
}

void ag_err_detail_bytes(ag_err_t *e, const void *p, size_t len) {
  if (len > sizeof(e->detail) - 1) len = sizeof(e->detail) - 1;
  if (len) memcpy(e->detail, p, len);
  e->detail[len] = 0;
  e->detail_len = len;
}
