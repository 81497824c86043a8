#!/usr/bin/env bash
# `npm run demo`: set up exactly as `npm test` does, then play a short agent session in a
# sandbox and print what happens, with timings. Stops only what set-up started.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
bash scripts/setup.sh
trap 'bash scripts/teardown.sh' EXIT
node scripts/demo.mjs
