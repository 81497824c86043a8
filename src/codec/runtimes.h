/*
 * runtimes.h - the runtimes a daemon has registered, read from its GET /info reply
 * (`.Runtimes`: an object keyed by runtime name, Docker's and Podman's alike), for the
 * containerRuntime check of createSandbox.
 *
 * Owns nothing: the reply is borrowed for the call.
 */
#ifndef SBX_RUNTIMES_H
#define SBX_RUNTIMES_H

#include <stddef.h>

/* Most bytes of a GET /info reply read for this (Docker's is a few KiB). */
#define RUNTIMES_MAX_INFO_BYTES (1024u * 1024u)

typedef enum {
  RUNTIME_REGISTERED = 0,
  RUNTIME_MISSING,  /* the reply lists runtimes, and not this one */
  RUNTIME_INVALID,  /* not JSON, or no `Runtimes` object */
  RUNTIME_NOMEM,
} runtime_lookup_t;

/* Whether `name` (`name_len` bytes, which may hold a NUL) is a key of the reply's
 * `Runtimes` object. */
runtime_lookup_t runtimes_lookup(const char *reply, size_t len, const char *name, size_t name_len);

#endif
