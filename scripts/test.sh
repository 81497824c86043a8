#!/usr/bin/env bash
# `npm test`: set up what is missing, run every suite in stages, then stop only what set-up
# started. A stage that fails is reported and the next stages still run; the exit status is
# non-zero at the end if any stage failed (so one failure never hides the others). A summary
# (status, wall time and CPU use of each stage) closes the run and is kept in
# .state/test-summary.txt.
#
# Stages:
#   prepare     scripts/setup.sh (packages, npm dependencies, release and debug addon, the
#               agent, an engine, the local images). Then, in the background while the
#               release stage runs, the artefacts that only some suites need and that take
#               minutes to make on a fresh machine, each made once for the whole run:
#               the self-contained prebuilt binaries (scripts/prebuilt/build.sh), the
#               consumer environments (scripts/prebuilt/consumer-env.sh) and the sanitizer
#               build (scripts/build.sh --asan). Their progress lines are prefixed
#               [artefacts]; their log is .state/artefacts.log.
#   release     every suite against the release build, the binary that ships, through the
#               default transport ("auto": the in-sandbox agent), but the packaging suites
#   engine-path the integration suites again through the Engine API (no agent), which must
#               give the same results (agent.test.js chooses its transport itself)
#   stress      the lost-output stress test alone against Docker (its CPU burners would slow
#               the suites beside it)
#   runsc       the integration suites of every runtime operation, and the limits, with each sandbox under
#               gVisor (containerRuntime "runsc", registered by scripts/dockerd.sh)
#   podman      the integration suites and the stress test against Podman (scripts/podman.sh)
#   ssh         the same over ssh:// to the local Docker (scripts/sshd.sh)
#   packaging   test/tooling/package.test.js and consumer.test.js, once the artefacts are made
#   asan        every suite that runs addon code, against the AddressSanitizer + UBSan build
# After each stage that uses Docker, nothing labelled by the tests may be left on it.
#
# ANVIA_TEST_STAGES="release asan" runs only the named stages (prepare always runs).
#
# Every stage has a time limit (its own, and never more than what is left of the whole run's
# budget, ANVIA_TEST_BUDGET_S, 80 minutes by default, so that a CI limit of 90 minutes is never
# reached). A stage over its limit has what it is still running printed (the process tree with
# ages, whether the engine answers), is stopped (its whole process group) and counts as failed;
# the next stages still run. A hang costs its stage, never the run.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT" || exit 1

run_started=$SECONDS
note() { printf '\033[1m[test]\033[0m %s\n' "$*" >&2; }
summary="$STATE/test-summary.txt"
results=()
failed=0

# CPU time of the whole machine (user + system, all cores), in clock ticks.
cpu_ticks() { awk '/^cpu / {print $2 + $3 + $4 + $7 + $8}' /proc/stat; }
hz="$(getconf CLK_TCK)"
cores="$(nproc)"

budget="${ANVIA_TEST_BUDGET_S:-4800}"
stage_pid=""

wanted() {
  [ -z "${ANVIA_TEST_STAGES:-}" ] || [ "$1" = prepare ] && return 0
  [[ " $ANVIA_TEST_STAGES " == *" $1 "* ]]
}

# stage NAME COMMAND...: runs COMMAND, records its status, wall time and CPU use.
stage() {
  local name="$1" t0=$SECONDS c0 rc
  shift
  wanted "$name" || { results+=("$(printf '%-12s %-7s' "$name" skipped)"); return 0; }
  local limit="${STAGE_LIMIT[$name]:-1200}" left=$((budget - (SECONDS - run_started)))
  [ "$left" -lt "$limit" ] && limit="$left"
  if [ "$limit" -le 60 ]; then
    results+=("$(printf '%-12s %-10s (the run'"'"'s budget of %d s is spent)' "$name" "NOT-RUN" "$budget")")
    note "stage $name: not run, the run's budget of $budget s is spent"
    failed=1
    return 0
  fi
  note "stage $name: starting (limit $limit s)"
  c0="$(cpu_ticks)"
  bounded "$name" "$limit" "$@"
  rc=$?
  local secs=$((SECONDS - t0)) ticks=$(($(cpu_ticks) - c0))
  local busy=0
  [ "$secs" -gt 0 ] && busy=$((100 * ticks / hz / (secs * cores)))
  [ "$busy" -le 100 ] || busy=100 # whole seconds against clock ticks: a short stage can round over
  local status=passed
  [ "$rc" = 0 ] || { status="FAILED($rc)"; failed=1; }
  [ "$rc" = 124 ] && status="TIMEOUT"
  results+=("$(printf '%-12s %-10s %5d s  machine CPUs %3d%% busy (%d)' "$name" "$status" "$secs" "$busy" "$cores")")
  note "stage $name: $status after $secs s"
  return 0
}

# Time limits of the stages, in seconds: about three times what each takes on a fresh,
# busy two-core machine (README "Tests"), so that only a hang reaches them.
declare -A STAGE_LIMIT=([prepare]=1800 [release]=1500 [engine-path]=900 [stress]=300 [runsc]=1200
  [podman]=1200 [ssh]=1200 [packaging]=1500 [asan]=1200)

# bounded NAME LIMIT COMMAND...: runs COMMAND in a process group of its own; past LIMIT
# seconds, prints what is still running and stops the group. Exit status 124 on a timeout.
bounded() {
  local name="$1" limit="$2" t0=$SECONDS rc
  shift 2
  set -m
  "$@" </dev/null &
  stage_pid=$!
  set +m
  while kill -0 "$stage_pid" 2>/dev/null; do
    if [ $((SECONDS - t0)) -ge "$limit" ]; then
      note "stage $name: still running after its limit of $limit s; what it runs now:"
      diagnose "$stage_pid"
      kill -TERM -- "-$stage_pid" 2>/dev/null
      for _ in $(seq 1 20); do kill -0 "$stage_pid" 2>/dev/null || break; sleep 0.5; done
      kill -KILL -- "-$stage_pid" 2>/dev/null
      wait "$stage_pid" 2>/dev/null
      stage_pid=""
      return 124
    fi
    sleep 1
  done
  wait "$stage_pid"
  rc=$?
  stage_pid=""
  return $rc
}

# diagnose PGID: the processes of the group (oldest first, with their age in seconds and what
# they wait in), and whether the engine still answers.
diagnose() {
  echo "  PGID   PID  PPID AGE(s) STAT WCHAN                  COMMAND" >&2
  ps -e -o pgid=,pid=,ppid=,etimes=,stat=,wchan:22=,args= --forest | awk -v g="$1" '$1 == g' | cut -c1-220 >&2
  local ping
  ping="$(timeout 10 docker version --format '{{.Server.Version}}' 2>&1 | head -1)" || ping="no answer in 10 s ($ping)"
  echo "  the engine (${DOCKER_HOST:-default}): $ping; its containers: $(timeout 10 docker ps -a --format '{{.Names}} {{.Status}}' 2>&1 | head -20 | tr '\n' ';')" >&2
}

# Fails on containers or volumes the tests left on the engine DOCKER_HOST names.
snapshot="$STATE/sandboxes-before-tests.json"
leftovers() { node scripts/check-leftovers.mjs "$snapshot"; }

suites() {  # suites FILTER...: node --test on the selected files, then the leftover check
  local rc=0
  node --test --test-concurrency=2 "$@" || rc=$?
  leftovers || rc=1
  return $rc
}

# --- prepare -------------------------------------------------------------------------------
artefacts_pid=""
podman_started=0
cleanup() {
  [ -n "$stage_pid" ] && kill -- "-$stage_pid" 2>/dev/null
  [ -n "$artefacts_pid" ] && kill -0 "$artefacts_pid" 2>/dev/null && { kill -- "-$artefacts_pid" 2>/dev/null || kill "$artefacts_pid" 2>/dev/null; }
  [ $podman_started = 1 ] && bash scripts/podman.sh stop
  bash scripts/teardown.sh
  # Nothing this run started may outlive it (an engine, a service, a build of this checkout).
  local left
  left="$(pgrep -af -- "$STATE/" | grep -v pgrep || true)"
  if [ -n "$left" ]; then
    note "still running after the run (started from $STATE):"
    printf '  %s\n' "$left" | cut -c1-200 >&2
    exit 1
  fi
}
trap cleanup EXIT

prepare() {
  bash scripts/setup.sh || return 1
  node scripts/check-leftovers.mjs --snapshot "$snapshot" || return 1
}
stage prepare prepare
if [ "$failed" = 1 ]; then
  printf '%s\n' "${results[@]}" | tee "$summary"
  echo "npm test: set-up failed; no suite ran" >&2
  exit 1
fi

artefacts() {
  bash scripts/prebuilt/build.sh &&
    bash scripts/prebuilt/consumer-env.sh all >/dev/null &&
    bash scripts/build.sh --asan
}
artefacts_log="$STATE/artefacts.log"
artefacts_rc="$STATE/artefacts.rc"
rm -f "$artefacts_rc"
if wanted packaging || wanted asan; then
  note "making the prebuilt binaries, the consumer environments and the sanitizer build in the background (minutes on a fresh machine; lines prefixed [artefacts])"
  # Its own process group (set -m), so that an interrupted run stops the whole build.
  set -m
  (
    t0=$SECONDS
    artefacts > >(tee "$artefacts_log" | sed -u 's/^/  [artefacts] /' >&2) 2>&1
    rc=$?
    echo "$rc $((SECONDS - t0))" > "$artefacts_rc"
  ) &
  artefacts_pid=$!
  set +m
fi
wait_artefacts() {
  [ -n "$artefacts_pid" ] || return 1
  local t0=$SECONDS next=$SECONDS
  while kill -0 "$artefacts_pid" 2>/dev/null; do
    if [ "$SECONDS" -ge "$next" ]; then
      note "waiting for the artefacts ($((SECONDS - t0)) s so far): $(tail -1 "$artefacts_log" 2>/dev/null)"
      next=$((SECONDS + 60))
    fi
    sleep 1
  done
  wait "$artefacts_pid" 2>/dev/null
  artefacts_pid=""
  local rc secs
  read -r rc secs < "$artefacts_rc" 2>/dev/null || { rc=1; secs="?"; }
  if [ "$rc" != 0 ]; then
    echo "the artefacts could not be made (exit $rc); the end of $artefacts_log:" >&2
    tail -40 "$artefacts_log" >&2
    return 1
  fi
  note "artefacts made in $secs s"
}

# --- the suites ----------------------------------------------------------------------------
export ANVIA_SANDBOX_BUILD=release
mapfile -t all_files < <(find test -name '*.test.js' ! -path 'test/tooling/package.test.js' ! -path 'test/tooling/consumer.test.js' | sort)
stage release suites "${all_files[@]}"

mapfile -t integration < <(find test/integration -name '*.test.js' ! -name agent.test.js | sort)
ANVIA_SANDBOX_TRANSPORT=engine stage engine-path suites "${integration[@]}"
stage stress suites test/integration/input-loss.stress.js
# The integration suites of every runtime operation again, with every sandbox under gVisor
# (test/helpers/docker.js baseOptions reads ANVIA_TEST_CONTAINER_RUNTIME).
runsc_files=(test/integration/{lifecycle,lifetime,exec,files,processes,agent,tree,tree-agent,stream,symlink-race,terminal}.test.js)
ANVIA_TEST_CONTAINER_RUNTIME=runsc stage runsc suites "${runsc_files[@]}"

# Whether this run starts the Podman service (and so stops it at the end) is decided here,
# in this shell: a stage runs in a process of its own, whose variables die with it.
if wanted podman && { ! [ -f "$STATE/podman/service.pid" ] || ! kill -0 "$(cat "$STATE/podman/service.pid")" 2>/dev/null; }; then
  podman_started=1
fi
podman_stage() { bash scripts/podman.sh start && bash scripts/test-engine.sh podman; }
stage podman podman_stage
# (The ssh pass also reaches the Podman started above, for its Podman-over-ssh test.)
stage ssh bash scripts/test-engine.sh ssh

# Late in the run, so that the artefacts were made while the stages above ran.
packaging() {
  wait_artefacts || return 1
  suites test/tooling/package.test.js test/tooling/consumer.test.js
}
stage packaging packaging

asan_stage() {
  # The sanitizer build is one of the artefacts; when the packaging stage did not wait for
  # them (it was not selected), wait here.
  if [ -n "$artefacts_pid" ]; then wait_artefacts || return 1; fi
  ANVIA_SETUP_DONE=1 bash scripts/test-asan.sh
}
stage asan asan_stage
unset ANVIA_SANDBOX_BUILD

# --- summary -------------------------------------------------------------------------------
{
  echo "npm test: $((SECONDS - run_started)) s in all on $cores CPUs ($(date -u +%Y-%m-%dT%H:%MZ))"
  printf '  %s\n' "${results[@]}"
} | tee "$summary"
if [ "$failed" != 0 ]; then
  echo "npm test: some stages FAILED (above); their output is in the log above" >&2
  exit 1
fi
