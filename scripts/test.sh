#!/usr/bin/env bash
# `npm test`: set up what is missing, run every node --test suite, then stop only what
# set-up started.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
bash scripts/setup.sh
trap 'bash scripts/teardown.sh' EXIT
snapshot="$STATE/sandboxes-before-tests.json"
node scripts/check-leftovers.mjs --snapshot "$snapshot"
# Stage 1: every suite against the release build, the binary that ships.
mapfile -t files < <(find test -name '*.test.js' | sort)
ANVIA_SANDBOX_BUILD=release node --test --test-concurrency=2 "${files[@]}"
node scripts/check-leftovers.mjs "$snapshot"
# Stage 2: every suite again against an AddressSanitizer + UBSan build.
ANVIA_SETUP_DONE=1 bash scripts/test-asan.sh
