#!/usr/bin/env bash
# `npm run test:quick`: the contributor's loop. No Docker, no set-up: builds the debug
# addon (-Werror; incremental, so a few seconds when little changed) and the static agent
# programs (the liar, for the fake engine's hostile agent), checks the layers
# of src/ (scripts/check-layers.mjs), then runs the unit suites (pure C through the addon,
# the C drivers, validation, tools) and the fake-engine suites (a fault-injecting Engine
# API server in the test process). Needs the build dependencies (scripts/setup.sh installs
# them) but no engine. Under a minute on two cores.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh --debug
# The liar of test/fake/agent-liar.test.js (incremental: nothing to do when it is built).
bash scripts/build-agent.sh --no-install --quiet
node scripts/check-layers.mjs
ANVIA_SANDBOX_BUILD=debug node --test --test-concurrency=2 test/unit/*.test.js test/fake/*.test.js
