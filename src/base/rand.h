/*
 * rand.h - random identifiers from the kernel's generator (getrandom).
 *
 * Owns: nothing.
 */
#ifndef SBX_RAND_H
#define SBX_RAND_H

/* A random RFC 4122 version 4 UUID, lowercase (randomUUID()). 0, or -1 when the kernel
 * gives no randomness. */
int uuid_v4(char out[37]);

#endif
