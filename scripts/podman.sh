#!/usr/bin/env bash
# A Podman engine beside Docker, for running the integration suites against Podman's
# Docker-compatible API (issue 15). All of its state lives in .state/podman/; the machine's
# own Podman configuration (/etc/containers, /var/lib/containers) is neither read for
# storage nor written.
#
#   scripts/podman.sh start   install podman if missing, start `podman system service` on
#                             .state/podman/podman.sock, load the test images from Docker
#   scripts/podman.sh stop    stop what `start` started, and only that: the service, the
#                             containers of our scratch store, their conmon processes, and
#                             the mounts under our scratch directory
#   scripts/podman.sh purge   stop, then remove .state/podman/ (images, store, configs)
#   scripts/podman.sh env     print `export DOCKER_HOST=unix://.../podman.sock` (eval it)
#   scripts/podman.sh podman ARGS...   run the podman CLI against our scratch store
#
# Configuration (written by `start`, used by the service and by every podman CLI call here
# through CONTAINERS_CONF / CONTAINERS_STORAGE_CONF / CONTAINERS_REGISTRIES_CONF and the
# global flags, so that nothing under /etc is consulted for them):
#   containers.conf  default_ulimits nofile=20000, nproc=32768 (containers do not start on
#                    this machine without them), cgroupfs, file events, exit_command_delay 10
#                    (Podman's 300 s default leaves two conmon processes per exec for five
#                    minutes), netavark with its network configs in our directory, file locks
#                    in our tmpdir (not the machine-wide /dev/shm/libpod_lock)
#   storage.conf     native overlay, graphroot .state/podman/storage, runroot .state/podman/run
#   registries.conf  no search registries, nothing to contact
set -euo pipefail
source "$(dirname "$0")/lib.sh"

P="$STATE/podman"
SOCK="$P/podman.sock"
PIDFILE="$P/service.pid"
LOG="$P/service.log"
IMAGES=("$DEFAULT_IMAGE" "$BUSYBOX_IMAGE")

podman_env() {
  export CONTAINERS_CONF="$P/containers.conf"
  export CONTAINERS_STORAGE_CONF="$P/storage.conf"
  export CONTAINERS_REGISTRIES_CONF="$P/registries.conf"
}
# The same flags on every call, the service's included: conmon's exit command (`podman
# container cleanup`) is built from them, so the cleanup also works on our store.
FLAGS=(--root "$P/storage" --runroot "$P/run" --tmpdir "$P/tmp"
       --storage-driver overlay --cgroup-manager cgroupfs --events-backend file
       --network-backend netavark --network-config-dir "$P/networks"
       --log-level warn)
pm() { podman_env; podman "${FLAGS[@]}" "$@"; }

log() { printf '\033[1m[podman]\033[0m %s\n' "$*" >&2; }

install_packages() {
  local packages=(podman runc conmon netavark aardvark-dns catatonit)
  local missing=() p
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "installing ${missing[*]}"
  # Installing podman enables systemd units; keep any init system from starting them.
  local made_policy=0
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    as_root sh -c 'printf "#!/bin/sh\nexit 101\n" > /usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d'
    made_policy=1
  fi
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
  [ $made_policy = 1 ] && as_root rm -f /usr/sbin/policy-rc.d
  return 0
}

write_configs() {
  mkdir -p "$P/storage" "$P/run" "$P/tmp" "$P/networks" "$P/events"
  chmod 700 "$P/run" "$P/tmp"
  cat > "$P/containers.conf.new" <<EOF
# Written by scripts/podman.sh; used only through CONTAINERS_CONF.
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]
log_driver = "k8s-file"

[engine]
cgroup_manager = "cgroupfs"
events_logger = "file"
events_logfile_path = "$P/events/events.log"
exit_command_delay = 10
runtime = "runc"
tmp_dir = "$P/tmp"
volume_path = "$P/storage/volumes"
static_dir = "$P/storage/libpod"
lock_type = "file"

[network]
network_backend = "netavark"
network_config_dir = "$P/networks"
EOF
  cat > "$P/storage.conf.new" <<EOF
# Written by scripts/podman.sh; used only through CONTAINERS_STORAGE_CONF.
[storage]
driver = "overlay"
graphroot = "$P/storage"
runroot = "$P/run"

[storage.options.overlay]
mountopt = "nodev"
EOF
  cat > "$P/registries.conf.new" <<EOF
# Written by scripts/podman.sh: no registry is searched or contacted for short names.
unqualified-search-registries = []
short-name-mode = "permissive"

# Plain-HTTP registries on loopback, as Docker allows by default (127.0.0.0/8 is insecure
# there): the pull test runs Debian's docker-registry on 127.0.0.1 at a random port. The
# prefix "127.0.0.1" also matches "127.0.0.1:PORT/..." in containers/image (its prefix
# match accepts ':' after a host).
[[registry]]
location = "127.0.0.1"
insecure = true

[[registry]]
location = "localhost"
insecure = true
EOF
  local f
  for f in containers.conf storage.conf registries.conf; do
    if cmp -s "$P/$f.new" "$P/$f"; then rm -f "$P/$f.new"; else mv "$P/$f.new" "$P/$f"; fi
  done
}

ping_headers() {
  # Prints the reply headers of /_ping, or fails.
  curl -sS -m 2 -o /dev/null -D - --unix-socket "$SOCK" http://d/_ping 2>/dev/null
}
answers() { ping_headers | grep -qi '^Libpod-Api-Version:'; }

our_pid() {
  [ -f "$PIDFILE" ] || return 1
  local pid; pid="$(cat "$PIDFILE")"
  kill -0 "$pid" 2>/dev/null || return 1
  tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -q -- "system service" || return 1
  echo "$pid"
}

# The compat API resolves the names the tests use (anvia-sandbox/bookworm:local); a docker
# archive loaded by podman is named docker.io/... or localhost/... depending on the version.
image_resolves() {
  local name="$1" code
  code="$(curl -s -m 5 -o /dev/null -w '%{http_code}' --unix-socket "$SOCK" "http://d/v1.41/images/$name/json")"
  [ "$code" = 200 ]
}

load_images() {
  if ! docker version --format '{{.Server.APIVersion}}' >/dev/null 2>&1; then
    echo "podman.sh: no Docker engine answers; the test images are loaded from it (run scripts/setup.sh)" >&2
    return 1
  fi
  local want have
  want="$(docker image inspect --format '{{.Id}}' "${IMAGES[@]}" | tr '\n' ' ')"
  have="$(cat "$P/images.loaded" 2>/dev/null || true)"
  local ok=1 img
  for img in "${IMAGES[@]}"; do image_resolves "$img" || ok=0; done
  if [ "$want" = "$have" ] && [ $ok = 1 ]; then return 0; fi
  log "loading ${IMAGES[*]} from Docker"
  docker save "${IMAGES[@]}" | pm load -q >/dev/null
  for img in "${IMAGES[@]}"; do
    if ! image_resolves "$img"; then
      # Give it the name Docker's normalisation produces, which the compat API looks up.
      local id; id="$(pm images -q --filter "reference=*$img" | head -1)"
      [ -n "$id" ] || id="$(pm images -q --filter "reference=*/${img}" | head -1)"
      pm tag "$id" "docker.io/$img"
      image_resolves "$img" || { echo "podman.sh: $img does not resolve on Podman's compat API" >&2; return 1; }
    fi
  done
  echo "$want" > "$P/images.loaded"
}

start() {
  install_packages
  mkdir -p "$P"
  write_configs
  if our_pid >/dev/null && answers; then
    load_images
    return 0
  fi
  if answers; then
    echo "podman.sh: $SOCK answers but was not started by this script (no live pid in $PIDFILE)" >&2
    exit 1
  fi
  rm -f "$SOCK"
  local t0; t0="$(date +%s%N)"
  podman_env
  # setsid: its own session, so that a Ctrl-C of the caller does not reach it.
  setsid podman "${FLAGS[@]}" system service --time=0 "unix://$SOCK" >"$LOG" 2>&1 < /dev/null &
  echo $! > "$PIDFILE"
  for _ in $(seq 1 1500); do
    answers && break
    kill -0 "$(cat "$PIDFILE")" 2>/dev/null || { tail -20 "$LOG" >&2; echo "podman.sh: the service exited" >&2; exit 1; }
    sleep 0.02
  done
  answers || { tail -20 "$LOG" >&2; echo "podman.sh: the service does not answer on $SOCK" >&2; exit 1; }
  local ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  echo "$ms" > "$P/last-start-ms"
  log "podman $(ping_headers | sed -n 's/^Libpod-Api-Version: *//Ip' | tr -d '\r') answers on $SOCK (${ms} ms after start)"
  load_images
}

stop() {
  [ -d "$P" ] || return 0
  local pid
  # Our store's containers are ours: stop them so that no process stays behind (the CLI
  # works on the store with or without the service).
  if [ -f "$P/containers.conf" ] && [ -n "$(pm ps -q 2>/dev/null)" ]; then
    log "stopping the containers still running in $P"
    pm stop -a -t 1 >/dev/null 2>&1 || true
  fi
  if pid="$(our_pid)"; then
    log "stopping podman system service (pid $pid)"
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$PIDFILE"
  # conmon processes of our store (their command lines name our runroot or graphroot).
  local c left=()
  for c in $(pgrep -x conmon || true); do
    tr '\0' ' ' < "/proc/$c/cmdline" 2>/dev/null | grep -qF -- "$P/" && left+=("$c")
  done
  if [ ${#left[@]} -gt 0 ]; then
    log "ending ${#left[@]} conmon process(es) of $P"
    kill "${left[@]}" 2>/dev/null || true
    sleep 0.5
    kill -9 "${left[@]}" 2>/dev/null || true
  fi
  # Mounts under our scratch directory, deepest first.
  local m
  while read -r m; do
    [ -n "$m" ] && { umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true; }
  done < <(awk -v p="$P/" 'index($5, p) == 1 { print $5 }' /proc/self/mountinfo | sort -r)
  rm -f "$SOCK"
}

# Stop, then remove the whole scratch directory (store, images, configs): the next start
# is a first start again.
purge() {
  stop
  [ -d "$P" ] || return 0
  if awk -v p="$P/" 'index($5, p) == 1 { found = 1 } END { exit !found }' /proc/self/mountinfo; then
    echo "podman.sh: something is still mounted under $P; not removing it" >&2
    return 1
  fi
  rm -rf "$P"
  log "removed $P"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  purge) purge ;;
  env) echo "export DOCKER_HOST=unix://$SOCK" ;;
  podman) shift; pm "$@" ;;
  *) echo "usage: $0 start|stop|purge|env|podman ARGS..." >&2; exit 2 ;;
esac
