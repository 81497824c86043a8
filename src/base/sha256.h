/*
 * sha256.h - SHA-256 of a byte string, as lowercase hex: Docker context metadata
 * directories (contexts/meta/<sha256 of the context name>/) and the in-sandbox agent's
 * content-hash name.
 */
#ifndef SBX_SHA256_H
#define SBX_SHA256_H

#include <stddef.h>

/* Writes 64 hex characters and a NUL into out[65]. */
void sha256_hex(const void *data, size_t len, char out[65]);

#endif
