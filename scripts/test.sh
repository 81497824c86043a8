#!/usr/bin/env bash
# `npm test`: set up what is missing, run every node --test suite, then stop only what
# set-up started.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
bash scripts/setup.sh
# Podman, when this run starts it (the engines stage below), is stopped at the end too.
podman_started=0
trap '[ $podman_started = 1 ] && bash scripts/podman.sh stop; bash scripts/teardown.sh' EXIT
snapshot="$STATE/sandboxes-before-tests.json"
node scripts/check-leftovers.mjs --snapshot "$snapshot"
# Stage 1: every suite against the release build, the binary that ships. Runtime
# operations take the default transport ("auto": through the in-sandbox agent).
mapfile -t files < <(find test -name '*.test.js' | sort)
ANVIA_SANDBOX_BUILD=release node --test --test-concurrency=2 "${files[@]}"
node scripts/check-leftovers.mjs "$snapshot"
# Stage 2: the integration suites again through the Engine API path (no agent), which
# must give the same results (agent.test.js chooses its transport itself).
mapfile -t integration < <(find test/integration -name '*.test.js' ! -name agent.test.js | sort)
ANVIA_SANDBOX_BUILD=release ANVIA_SANDBOX_TRANSPORT=engine node --test --test-concurrency=2 "${integration[@]}"
node scripts/check-leftovers.mjs "$snapshot"
# Stage 3: the other engines (issue 15). The integration suites against Podman
# (scripts/podman.sh: all its state in .state/podman) and over ssh:// (scripts/sshd.sh: the
# local Docker through a local sshd), each followed by the lost-output stress test alone,
# which also runs alone against Docker first. scripts/test-engine.sh starts and stops the
# sshd; Podman stays up for both passes (the ssh pass also reaches it over ssh).
ANVIA_SANDBOX_BUILD=release node --test test/integration/input-loss.stress.js
if ! [ -f "$STATE/podman/service.pid" ] || ! kill -0 "$(cat "$STATE/podman/service.pid")" 2>/dev/null; then
  podman_started=1
fi
bash scripts/podman.sh start
bash scripts/test-engine.sh podman
bash scripts/test-engine.sh ssh
# Stage 4: every suite again against an AddressSanitizer + UBSan build.
ANVIA_SETUP_DONE=1 bash scripts/test-asan.sh
