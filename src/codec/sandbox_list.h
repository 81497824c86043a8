/*
 * sandbox_list.h - the engine's container list (GET /containers/json?all=1) read as a list
 * of sandboxes: which entries are sandboxes, their state, image, times, workspace, ports,
 * labels and limits; and the engine's status line ("Exited (0) 5 minutes ago") read as
 * how long a container has been stopped.
 *
 * Owns: a sandbox_summary_t owns its strings, ports and labels (sandbox_list_free
 * frees an array of them).
 *
 * An entry is a sandbox when its labels say schema "1" and carry a valid id, and one of
 * its names is "/anvia-sandbox-<id>" (what resumeSandbox looks up), whoever made it: this
 * package in any process, or the original package (same labels). Anything else in the
 * reply (other containers, helpers, malformed entries) is skipped, never an error; a reply
 * that is not a JSON array is.
 */
#ifndef SBX_SANDBOXES_H
#define SBX_SANDBOXES_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "codec/lifetime_cmd.h"
#include "codec/runspec.h"
#include "codec/spec.h"

/* Labels a fork carries (lifecycle/fork.c): the image it owns (removed with it), the
 * sandbox it was forked from, and the image its first ancestor was made from. */
#define LABEL_FORK_IMAGE "anvia.sandbox.fork.image"
#define LABEL_FORK_PARENT "anvia.sandbox.fork.parent"
#define LABEL_FORK_BASE "anvia.sandbox.fork.base-image"
#define LABEL_PREFIX "anvia.sandbox."

/*
 * Reserved labels and the image a container is made from. The engine merges the image's
 * labels into the container's, so an image can carry any anvia.sandbox.* label; the
 * package writes every one it reads back (labels_mask_reserved), and a fork's labels
 * count only on a container made from the image they name as its own.
 */
/* For every LABEL_PREFIX key of `image_labels` (an image's Config.Labels, or NULL) that
 * `labels` (a create body's) lacks, sets it to "" there: the container gets the
 * package's value, never the image's. An image without such labels changes nothing.
 * 0, or -1 when out of memory. */
int labels_mask_reserved(json_t *labels, json_t *image_labels);
/* A label's value when it is a non-empty string, else NULL (an empty value is what
 * labels_mask_reserved writes: no value). Borrowed. */
const char *label_value(json_t *labels, const char *name);
/* Whether the fork labels of a container are its own: LABEL_FORK_IMAGE is set and names
 * `container_image` (the image the container was made from, the inspection's Image or
 * the list's ImageID; "sha256:" prefixes aside). No image can carry its own id. */
int fork_labels_proven(json_t *labels, const char *container_image);
/* Whether an image's inspection (GET /images/{id}/json) says it belongs to sandbox `id`
 * (Config.Labels LABEL_ID, as POST /commit labels a fork's image). */
int image_is_sandboxes(const uint8_t *body, size_t len, const char *id);

typedef enum {
  SBX_RUNNING = 0,
  SBX_STOPPED, /* exited, or created and never started */
  SBX_PAUSED,
  SBX_RESTARTING,
  SBX_REMOVING,
  SBX_DEAD,
  SBX_STATE_COUNT
} sbx_state_t;

/* "running", "stopped", ... */
const char *sbx_state_name(sbx_state_t s);
/* The state named `name` (one of sbx_state_name's), 0; -1 when none is. */
int sbx_state_from_name(const char *name, sbx_state_t *out);

typedef struct sandbox_summary {
  char *id;
  char *container_name;
  sbx_state_t state;
  char *image;
  int64_t created_s; /* Unix seconds by the engine's clock; -1 when not reported */
  /* How long ago it stopped, from the status line: at least min, less than max (ms). */
  int stopped_known;
  int64_t stopped_min_ms, stopped_max_ms;
  int exit_code_known;
  int exit_code;
  char *workdir;           /* NULL when the label is missing */
  int ws_known;            /* the workspace labels are there and valid */
  int ws_ephemeral;
  char *volume;            /* the workspace volume's name (label), or NULL */
  published_port_t *ports; /* published on 127.0.0.1 (running containers only) */
  size_t nports;
  kv_list_t labels;        /* the caller's labels: every key outside anvia.sandbox. */
  lifetime_t lifetime;     /* zeros when none, or when its labels are malformed */
  char *owned_image;       /* LABEL_FORK_IMAGE when fork_labels_proven, or NULL */
  char *fork_parent;       /* LABEL_FORK_PARENT when fork_labels_proven, or NULL */
} sandbox_summary_t;

/* Parses the reply. *out (NULL when none) and *n are set on success (0); -1 with err set
 * (docker_command_failed) when the body is not a JSON array, or out of memory. */
int sandboxes_parse(const uint8_t *body, size_t len, sandbox_summary_t **out, size_t *n, err_t *err);
void sandbox_list_free(sandbox_summary_t *s, size_t n);

/*
 * The engine's status line of an exited container, "Exited (<code>) <duration> ago",
 * the duration as Docker's units.HumanDuration writes it ("Less than a second", "1
 * second", "N seconds", "About a minute", "N minutes", "About an hour", "N hours",
 * "N days", "N weeks", "N months", "N years"). Fills the exit code and the bounds of how
 * long ago it stopped: at least *min_ms, less than *max_ms. Returns 1 with both, 2 with
 * only the exit code ("Exited (1)" without a time), 0 when the line says neither.
 */
int status_stopped_for(const char *status, int *exit_code, int64_t *min_ms, int64_t *max_ms);

#endif
