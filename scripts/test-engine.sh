#!/usr/bin/env bash
# Runs the integration suites against another engine (issue 15):
#   scripts/test-engine.sh podman   Podman's compat API (scripts/podman.sh)
#   scripts/test-engine.sh ssh      the local Docker through ssh:// (scripts/sshd.sh)
#   scripts/test-engine.sh docker   the local Docker, the same selection, for comparison
# Extra arguments after the engine are test files to run instead of the whole selection.
#
# After the suites, test/integration/input-loss.stress.js runs alone (its CPU burners would
# slow the suites beside it): hundreds of execs whose command never reads its input, which
# must all return their output (issue 15). ANVIA_TEST_STRESS=0 skips it.
#
# For ssh, the engine the ssh side reaches is the local Docker; when a Podman of
# scripts/podman.sh is running, its socket is passed on (ANVIA_TEST_PODMAN_SOCKET) for the
# Podman-over-ssh test of test/integration/ssh.test.js.
#
# The selection: test/integration/*.test.js without the packaging and demo ones (package,
# consumer, bench-smoke, demo: they pack, install or play the demo on the host's engine). The
# engine set-up is started when it is not running and stopped at the end only if this run
# started it; the same for dockerd (through setup.sh/teardown.sh), which Podman's images
# come from and which the ssh side reaches.
#
# The addon: build/Release/anvia_sandbox.node (built with scripts/build.sh only when
# missing; retried while src/ is mid-change), copied to .state/test-engine/ for the run so a
# rebuild during the run does not swap it; ANVIA_SANDBOX_ADDON=<path> overrides all that.
#
# Output: the spec reporter on stdout, TAP in .state/test-engine/<engine>.tap, and a summary
# (pass/fail counts, failing tests, wall time) at the end. Exit status: that of node --test,
# or 1 when the run left labelled containers or volumes on the engine.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

engine="${1:-}"
case "$engine" in
  podman|ssh|docker) shift ;;
  *) echo "usage: $0 podman|ssh|docker [test files...]" >&2; exit 2 ;;
esac
OUT="$STATE/test-engine"
mkdir -p "$OUT"
t_start="$(date +%s)"

# 1. The local Docker engine (and its images), only when none answers.
started_docker=0
if [ -z "${DOCKER_HOST:-}" ] || [[ "${DOCKER_HOST}" == unix://* ]]; then
  if ! engine_answers || ! docker image inspect "$DEFAULT_IMAGE" "$BUSYBOX_IMAGE" >/dev/null 2>&1; then
    had_pid=0; [ -f "$STATE/dockerd/dockerd.pid" ] && had_pid=1
    bash scripts/setup.sh
    [ $had_pid = 0 ] && [ -f "$STATE/dockerd/dockerd.pid" ] && started_docker=1
  fi
fi

# 2. The addon.
if [ -z "${ANVIA_SANDBOX_ADDON:-}" ]; then
  if [ ! -f build/Release/anvia_sandbox.node ]; then
    for try in 1 2 3; do
      say "building the addon (try $try)"
      bash scripts/build.sh && break
      [ $try = 3 ] || { say "build failed (src/ may be mid-change); retrying in 120 s"; sleep 120; }
    done
  fi
  if [ -f build/Release/anvia_sandbox.node ]; then
    cp build/Release/anvia_sandbox.node "$OUT/anvia_sandbox.node.tmp"
    mv "$OUT/anvia_sandbox.node.tmp" "$OUT/anvia_sandbox.node"
  elif [ -f "$STATE/addon/anvia_sandbox.node" ]; then
    say "no build; using the saved copy $STATE/addon/anvia_sandbox.node"
    cp "$STATE/addon/anvia_sandbox.node" "$OUT/anvia_sandbox.node"
  else
    echo "test-engine.sh: no addon could be built" >&2; exit 1
  fi
  export ANVIA_SANDBOX_ADDON="$OUT/anvia_sandbox.node"
fi
unset ANVIA_SANDBOX_BUILD

# 3. The engine.
started_engine=0
case "$engine" in
  podman)
    if ! [ -f "$STATE/podman/service.pid" ] || ! kill -0 "$(cat "$STATE/podman/service.pid")" 2>/dev/null; then
      started_engine=1
    fi
    bash scripts/podman.sh start
    eval "$(bash scripts/podman.sh env)"
    ;;
  ssh)
    if ! [ -f "$STATE/ssh/sshd.pid" ] || ! kill -0 "$(cat "$STATE/ssh/sshd.pid")" 2>/dev/null; then
      started_engine=1
    fi
    bash scripts/sshd.sh start
    eval "$(bash scripts/sshd.sh env)"
    # test/helpers/docker.js checks the engine behind ssh on its own socket.
    export ANVIA_TEST_ENGINE_SOCKET=/var/run/docker.sock
    if [ -S "$STATE/podman/podman.sock" ] && [ -f "$STATE/podman/service.pid" ] && kill -0 "$(cat "$STATE/podman/service.pid")" 2>/dev/null; then
      export ANVIA_TEST_PODMAN_SOCKET="$STATE/podman/podman.sock"
    fi
    ;;
  docker) ;;
esac
cleanup() {
  local rc=$?
  if [ "$started_engine" = 1 ]; then
    if [ "$engine" = podman ]; then bash scripts/podman.sh stop || true; else bash scripts/sshd.sh stop || true; fi
  fi
  if [ "$started_docker" = 1 ]; then bash scripts/teardown.sh || true; fi
  exit $rc
}
trap cleanup EXIT
export ANVIA_TEST_ENGINE="$engine"
say "engine $engine: DOCKER_HOST=${DOCKER_HOST:-(default)}; addon $ANVIA_SANDBOX_ADDON"

# 4. The suites.
stress=()
if [ $# -gt 0 ]; then
  files=("$@")
else
  mapfile -t files < <(ls test/integration/*.test.js | grep -Ev '/(package|consumer|bench-smoke|demo)\.test\.js$' | sort)
  [ "${ANVIA_TEST_STRESS:-1}" = 0 ] || stress=(test/integration/input-loss.stress.js)
fi
# test/helpers/docker.js checks the engine over a unix socket: for ssh:// it falls back to
# /var/run/docker.sock, the engine the ssh side reaches here.
snapshot="$OUT/$engine-before.json"
node scripts/check-leftovers.mjs --snapshot "$snapshot"
t_suites="$(date +%s)"
set +e
node --test --test-concurrency=2 \
  --test-reporter=spec --test-reporter-destination=stdout \
  --test-reporter=tap --test-reporter-destination="$OUT/$engine.tap" \
  "${files[@]}"
rc=$?
t_stress="$(date +%s)"
if [ ${#stress[@]} -gt 0 ]; then
  say "alone: ${stress[*]}"
  node --test --test-reporter=spec --test-reporter-destination=stdout \
    --test-reporter=tap --test-reporter-destination="$OUT/$engine-stress.tap" "${stress[@]}"
  src=$?
  [ $rc = 0 ] && rc=$src
fi
set -e
t_end="$(date +%s)"
leftovers=0
node scripts/check-leftovers.mjs "$snapshot" || leftovers=1

# 5. Summary.
{
  echo "== $engine: node --test exit $rc; suites $((t_stress - t_suites)) s, stress $((t_end - t_stress)) s, whole run $((t_end - t_start)) s"
  grep -E '^# (tests|suites|pass|fail|cancelled|skipped|todo|duration_ms) ' "$OUT/$engine.tap" || true
  [ ${#stress[@]} -eq 0 ] || grep -E '^# (pass|fail) |^# (docker|podman|ssh): [0-9]+ execs' "$OUT/$engine-stress.tap" | sed 's/^/stress /' || true
  echo "failing tests:"
  # TAP: "not ok N - name", subtests indented.
  for tap in "$OUT/$engine.tap" ${stress[@]:+"$OUT/$engine-stress.tap"}; do
    awk '/^not ok [0-9]+ - /{sub(/^not ok [0-9]+ - /,""); print "  " $0; next}
         /^ +not ok [0-9]+ - /{sub(/^ +not ok [0-9]+ - /,""); print "    " $0}' "$tap"
  done
} | tee "$OUT/$engine.summary"
[ $leftovers = 0 ] || rc=1
exit $rc
