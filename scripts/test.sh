#!/usr/bin/env bash
# `npm test`: set up what is missing, run every node --test suite, then stop only what
# set-up started.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
bash scripts/setup.sh
trap 'bash scripts/teardown.sh' EXIT
export ANVIA_SANDBOX_BUILD=debug
mapfile -t files < <(find test -name '*.test.js' | sort)
node --test --test-concurrency=2 "${files[@]}"
node scripts/check-leftovers.mjs
