/*
 * forkspec.h - the request bodies of sandbox.fork(): the commit of the parent's own
 * filesystem changes, the helper container that copies its workspace volume, and the
 * fork's container, all built from the parent's inspection (GET /containers/{id}/json).
 *
 * Owns: nothing; returns new jansson values the caller owns.
 *
 * The fork is the parent's configuration (command, environment, user, working
 * directory, labels, ports, resources, security) on the committed image, with its own
 * id, its own ephemeral workspace volume and the fork labels (codec/sandbox_list.h): the
 * image it owns, its parent, and the image the first ancestor was made from (whose `cp`
 * copies the workspace: the committed images hold what the sandbox changed, the base
 * image only what its owner chose).
 */
#ifndef SBX_FORKSPEC_H
#define SBX_FORKSPEC_H

#include <jansson.h>

#include "base/err.h"

typedef struct fork_names {
  const char *fork_id;
  const char *parent_id;
  const char *image;      /* the committed image (the fork's own) */
  const char *base_image; /* forkspec_base_image of the parent */
  const char *volume;     /* the fork's workspace volume */
  const char *workdir;    /* the workspace's mount point */
} fork_names_t;

/* Where the helper mounts the two volumes. */
#define FORK_COPY_FROM "/anvia-fork-from"
#define FORK_COPY_TO "/anvia-fork-to"

/* The parent's base image: its LABEL_FORK_BASE when it is a fork (fork_labels_proven:
 * its fork labels name the image it was made from), else its Image (the image ID).
 * NULL when the inspection names neither. Borrowed from `ins`. */
const char *forkspec_base_image(json_t *ins);
/* The fork's create body. NULL with err set: invalid_state "Sandbox metadata is invalid:
 * <field>" when the inspection lacks Config or HostConfig, or out of memory. */
json_t *forkspec_container(json_t *ins, const fork_names_t *n, err_t *err);
/* The helper: `/bin/cp -a FROM/. TO/` as root from `image`, with ROOT_EXEC_ENV
 * (codec/runspec.h) over the image's environment, only the capabilities a faithful copy
 * needs (CHOWN, DAC_OVERRIDE, DAC_READ_SEARCH, FOWNER, FSETID), no network, no new
 * privileges, a read-only root, the source mounted read-only. NULL when out of memory. */
json_t *forkspec_copy_helper(const char *image, const char *from_volume, const char *to_volume, const char *fork_id);
/* POST /commit's body: the image says which sandbox it belongs to. */
json_t *forkspec_commit_config(const char *fork_id);

#endif
