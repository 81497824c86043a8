#!/usr/bin/env bash
# The Docker engine the tests and the demo start when none answers, with a configuration and
# a state of its own: nothing of the machine's /etc/docker is read (daemon.json) or written
# (key.json), and its images, containers and volumes live in .state/dockerd/root, not in
# /var/lib/docker, so `npm run reset` can put them back to nothing without touching an
# engine the machine had before.
#
#   scripts/dockerd.sh start   start dockerd on the default socket (/var/run/docker.sock, the
#                              endpoint users' code reaches without DOCKER_HOST) unless an
#                              engine already answers there; remembers that it did
#   scripts/dockerd.sh stop    stop the dockerd that `start` started, and only that one
#   scripts/dockerd.sh purge   stop, then remove its state (.state/dockerd: data root,
#                              configuration, log)
#   scripts/dockerd.sh status  "ours PID", "other" (an engine this script did not start
#                              answers) or "none"
#
# Files (.state/dockerd/): daemon.json (the configuration, written by `start`), root/ (the
# data root), key.json (the daemon's identity key), dockerd.pid, dockerd.log.
#
# Runtimes registered beside the default runc, when installed (setup.sh installs them), for
# createSandbox({ containerRuntime }) and its tests:
#   runsc   gVisor, with "--network=none": gVisor's own network stack does not start here
#           ("cannot run with network enabled in root network namespace"), so a runsc
#           sandbox has no network at all, whatever its network option says (a loopback
#           only: ports inside the sandbox work, published ports do not)
#   crun    the C runtime (Debian's crun). crun refuses a hybrid cgroup layout (v1
#           hierarchies and a cgroup2 "unified" one) while the cgroup2 side holds a
#           controller ("cgroups in hybrid mode not supported, drop all controllers from
#           cgroupv2"): on such a machine (this one: hugetlb is only on the cgroup2 side)
#           `start` mounts each such controller as a v1 hierarchy beside the others, so
#           that crun runs, and `stop` unmounts what it mounted (.state/dockerd/cgroup-mounts);
#           when that cannot be done, crun is not registered and the log says why
set -euo pipefail
source "$(dirname "$0")/lib.sh"

D="$STATE/dockerd"
PIDFILE="$D/dockerd.pid"
LOG="$D/dockerd.log"
SOCK=/var/run/docker.sock

log() { printf '\033[1m[dockerd]\033[0m %s\n' "$*" >&2; }

ours_running() {
  [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null
}

CG=/sys/fs/cgroup
CG_MOUNTS="$D/cgroup-mounts"

# 1 when some v1 hierarchy mounted anywhere holds controller $1.
v1_mounted() {
  grep -qE " - cgroup [^ ]+ ([^ ]*,)?$1(,[^ ]*)?\$" /proc/self/mountinfo
}

# A v1 hierarchy that exists without a mount (its controller has a hierarchy number in
# /proc/cgroups): what an unmount leaves while cgroups remain in it. Processes started then
# are in its root and containerd reads no statistics for them (the engine's stats have an
# empty memory_stats), so it is mounted again, and unmounted at stop like the others.
cgroups_reattach() {
  local c h _n enabled
  while read -r c h _n enabled; do
    [ "${c:0:1}" = "#" ] && continue
    if [ "$h" = 0 ] || [ "$enabled" != 1 ]; then continue; fi
    v1_mounted "$c" && continue
    [ -e "$CG/$c" ] && ! mountpoint -q "$CG/$c" && [ -n "$(ls -A "$CG/$c" 2>/dev/null)" ] && continue
    if as_root mkdir -p "$CG/$c" && as_root mount -t cgroup -o "$c" cgroup "$CG/$c" 2>/dev/null; then
      echo "$CG/$c" >> "$CG_MOUNTS"
      log "the v1 cgroup hierarchy of $c had no mount (an earlier unmount left it behind): mounted it again at $CG/$c"
    else
      log "the v1 cgroup hierarchy of $c has no mount and could not be mounted: the engine's stats may be empty"
    fi
  done < /proc/cgroups
}

# 0 when crun can run here: no hybrid layout, or one whose cgroup2 side holds no controller
# once those it held are mounted as v1 hierarchies (recorded for cgroups_restore).
cgroups_for_crun() {
  [ -f "$CG/unified/cgroup.controllers" ] || return 0 # not hybrid
  local c held=()
  read -ra held < "$CG/unified/cgroup.controllers" || true
  for c in "${held[@]}"; do
    if [ -e "$CG/$c" ] && ! mountpoint -q "$CG/$c"; then
      log "cgroup controller $c is on the cgroup2 side and $CG/$c is not free: crun is not registered"
      return 1
    fi
    if as_root mkdir -p "$CG/$c" && as_root mount -t cgroup -o "$c" cgroup "$CG/$c" 2>/dev/null; then
      echo "$CG/$c" >> "$CG_MOUNTS"
      log "mounted the cgroup controller $c as a v1 hierarchy ($CG/$c) for crun; stop unmounts it"
    else
      as_root rmdir "$CG/$c" 2>/dev/null || true
      log "could not mount the cgroup controller $c as a v1 hierarchy: crun is not registered"
      return 1
    fi
  done
  [ -z "$(cat "$CG/unified/cgroup.controllers")" ]
}

# Unmounts what start mounted, after removing the cgroups the engine made in it (its
# "docker" parent stays after its containers are gone): a hierarchy that still holds a cgroup
# outlives its unmount, keeps its controller from the cgroup2 side and takes the statistics
# of later containers with it.
cgroups_restore() {
  [ -f "$CG_MOUNTS" ] || return 0
  local m
  while read -r m; do
    as_root find "$m" -mindepth 1 -depth -type d -exec rmdir {} \; 2>/dev/null || true
    if [ -n "$(find "$m" -mindepth 1 -type d -print -quit 2>/dev/null)" ]; then
      log "cgroups remain in $m (processes still in them?): left mounted"
      continue
    fi
    if as_root umount "$m" 2>/dev/null; then as_root rmdir "$m" 2>/dev/null || true
    else log "could not unmount $m (still in use?)"; fi
  done < "$CG_MOUNTS"
  rm -f "$CG_MOUNTS"
}

# The configuration: every setting the suites rely on, spelled out rather than inherited.
write_config() {
  mkdir -p "$D/root"
  local runtimes="" sep=""
  if [ -x /usr/bin/runsc ]; then
    runtimes+="$sep\"runsc\": { \"path\": \"/usr/bin/runsc\", \"runtimeArgs\": [\"--network=none\"] }"; sep=", "
  fi
  cgroups_reattach
  if [ -x /usr/bin/crun ] && cgroups_for_crun; then
    runtimes+="$sep\"crun\": { \"path\": \"/usr/bin/crun\" }"
  fi
  cat > "$D/daemon.json" <<JSON
{
  "runtimes": { $runtimes },
  "data-root": "$D/root",
  "deprecated-key-path": "$D/key.json",
  "hosts": ["unix://$SOCK"],
  "storage-driver": "overlay2",
  "log-driver": "json-file",
  "log-level": "warn",
  "iptables": true,
  "live-restore": false
}
JSON
}

start() {
  if ours_running; then return 0; fi
  if engine_answers; then
    log "an engine already answers; not starting another"
    return 0
  fi
  if [ -n "${DOCKER_HOST:-}" ] && [ "${DOCKER_HOST}" != "unix://$SOCK" ]; then
    echo "DOCKER_HOST=$DOCKER_HOST does not answer; not starting a local engine." >&2
    exit 1
  fi
  command -v dockerd >/dev/null || { echo "dockerd.sh: dockerd is missing (apt-get install docker.io)" >&2; exit 1; }
  write_config
  log "starting dockerd (state in $D)"
  # A socket left by an engine that died would make dockerd refuse to start.
  [ -S "$SOCK" ] && ! engine_answers && as_root rm -f "$SOCK"
  as_root sh -c "nohup dockerd --config-file '$D/daemon.json' --pidfile '$PIDFILE' >'$LOG' 2>&1 &"
  # dockerd writes its pidfile once it runs; the engine answers a little later.
  local i
  for i in $(seq 1 120); do
    engine_answers && break
    sleep 0.5
  done
  if ! engine_answers; then
    tail -20 "$LOG" >&2
    echo "dockerd did not come up (log: $LOG)" >&2
    stop
    exit 1
  fi
  log "dockerd answers (pid $(cat "$PIDFILE"), after $((i / 2)) s)"
}

stop() {
  [ -f "$PIDFILE" ] || return 0
  local pid
  pid="$(cat "$PIDFILE")"
  if kill -0 "$pid" 2>/dev/null; then
    log "stopping the dockerd this checkout started (pid $pid)"
    as_root kill "$pid" 2>/dev/null || true
    local i
    for i in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    if kill -0 "$pid" 2>/dev/null; then
      log "dockerd $pid did not stop in 30 s; killing it"
      as_root kill -9 "$pid" 2>/dev/null || true
    fi
  fi
  rm -f "$PIDFILE"
  cgroups_restore
}

purge() {
  stop
  [ -d "$D" ] || return 0
  # Mounts a killed engine left under its data root (overlays, network namespaces).
  local m
  while read -r m; do
    as_root umount -l "$m" 2>/dev/null || true
  done < <(awk -v d="$D/" 'index($2, d) == 1 {print $2}' /proc/self/mounts | sort -r)
  log "removing $D"
  as_root rm -rf "$D"
}

status() {
  if ours_running; then echo "ours $(cat "$PIDFILE")"
  elif engine_answers; then echo other
  else echo none
  fi
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  purge) purge ;;
  status) status ;;
  *) echo "usage: $0 start|stop|purge|status" >&2; exit 2 ;;
esac
