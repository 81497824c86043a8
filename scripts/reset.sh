#!/usr/bin/env bash
# `npm run reset`: puts this machine back to fresh for the suite's purposes, so that what a
# newcomer's first `npm test` or `npm run demo` does can be tried on purpose. Removes every
# cache and state the set-up, the tests, the demo and the benches make:
#   - the engines this checkout started, and their whole state: the dockerd of
#     scripts/dockerd.sh with its data root (images, containers, volumes: .state/dockerd),
#     the Podman of scripts/podman.sh (.state/podman), the sshd of scripts/sshd.sh (.state/ssh);
#   - on an engine this checkout did not start (the machine's own Docker, or DOCKER_HOST):
#     the images the set-up and the tests build there (anvia-sandbox/*); sandboxes found there
#     are listed, never removed (they may be someone's work);
#   - in the checkout: .state/ (the prebuilt binaries' build root and library cache, the
#     consumer environments, logs), the build directories (build/, build-*/), prebuilds/,
#     node_modules/;
#   - outside it: the tests' scratch directories an interrupted run left in the temporary
#     directory (anvia-*).
# Left alone: the Debian packages set-up installed (a fresh machine would have to install
# them again, which the set-up does in about a minute), npm's own download cache (~/.npm),
# and anything of an engine that this checkout did not make.
#   scripts/reset.sh [--dry-run]
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

dry=0
for arg in "$@"; do
  case "$arg" in
    --dry-run) dry=1 ;;
    *) echo "usage: $0 [--dry-run]" >&2; exit 2 ;;
  esac
done
log() { printf '\033[1m[reset]\033[0m %s\n' "$*" >&2; }
do_rm() {  # do_rm PATH...: removes what exists, saying so
  local p
  for p in "$@"; do
    [ -e "$p" ] || [ -L "$p" ] || continue
    log "removing $p ($(du -sh "$p" 2>/dev/null | cut -f1))"
    [ "$dry" = 1 ] || as_root rm -rf "$p"
  done
}

# 1. The engines this checkout started, state and all. (Stopping Podman and the sshd first:
# Podman's images came from the dockerd, and the sshd reaches it.)
if [ "$dry" = 1 ]; then
  log "would stop and purge this checkout's podman, sshd and dockerd ($(bash scripts/dockerd.sh status))"
else
  [ -d "$STATE/podman" ] && { bash scripts/podman.sh purge || exit 1; }
  [ -d "$STATE/ssh" ] && bash scripts/sshd.sh stop
  bash scripts/dockerd.sh purge
fi

# 2. An engine the checkout did not start: only the images made for the suite.
if [ "$(bash scripts/dockerd.sh status)" = other ]; then
  mapfile -t images < <(docker image ls --format '{{.Repository}}:{{.Tag}}' | grep '^anvia-sandbox/' || true)
  for image in "${images[@]}"; do
    log "removing the image $image from the engine that answers (not this checkout's)"
    [ "$dry" = 1 ] || docker image rm -f "$image" >/dev/null
  done
  sandboxes="$(docker ps -aq --filter label=anvia.sandbox.id | wc -l)"
  volumes="$(docker volume ls -q --filter label=anvia.sandbox.id | wc -l)"
  if [ "$sandboxes" != 0 ] || [ "$volumes" != 0 ]; then
    log "left alone on that engine: $sandboxes sandbox containers and $volumes volumes labelled anvia.sandbox.id (remove them with docker rm / docker volume rm if they are yours to remove)"
  fi
fi

# 3. The checkout's caches and builds.
shopt -s nullglob
do_rm "$STATE" build build-* prebuilds node_modules

# 4. Scratch directories of interrupted test runs (each test removes its own when it ends).
tmp="${TMPDIR:-/tmp}"
do_rm "$tmp"/anvia-*
log "done: the next npm test or npm run demo starts from nothing but the Debian packages"
