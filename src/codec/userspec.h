/*
 * userspec.h - the numeric owner of a container user, from the container's own
 * /etc/passwd and /etc/group (read through the archive endpoint, so no command runs).
 *
 * Owns: nothing.
 * Rules follow runc's user lookup: "user[:group]"; user is a name or a number, looked up
 * by name or uid in passwd (an entry gives uid and primary gid); a number not in passwd
 * is used as is with gid 0; an unknown name is an error. group is a name or number
 * looked up in group; a number not found is used as is; an unknown name is an error.
 */
#ifndef SBX_USERSPEC_H
#define SBX_USERSPEC_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

/* passwd/group may be NULL (file absent). Errors are invalid_state DockerSandboxErrors:
 * "Sandbox user cannot be found in the image: <name>" / "... group ...: <name>". */
int userspec_resolve(const char *spec, const char *passwd, size_t passwd_len, const char *group,
                     size_t group_len, uint32_t *uid, uint32_t *gid, err_t *err);

/* 1 when the user needs no lookup: unset, "root", "0", "0:0", "root:root". */
int user_is_root(const char *user);

#endif
