#!/usr/bin/env bash
# `npm run test:quick`: the contributor's loop. No Docker, no set-up: builds the debug
# addon (-Werror; incremental, so a few seconds when little changed) and the static agent
# programs (the agent itself, for test/agent, and the liar, for the fake engine's hostile
# agent), checks the layers of src/ (scripts/check-layers.mjs, incremental), then runs the
# unit suites (pure C through the addon, the C drivers, validation, tools, the in-sandbox
# scripts), the fake-engine suites (a fault-injecting Engine API server in the test
# process) and the agent's own suites (test/agent: the agent run here, over pipes). Needs
# the build dependencies (scripts/setup.sh installs them) but no engine. Four test files
# at a time: most of them wait on timers and pipes, so two cores keep up (under a minute).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh --debug
# The agent and the liar of test/fake/agent-liar.test.js (incremental: nothing to do when
# they are built).
bash scripts/build-agent.sh --no-install --quiet
node scripts/check-layers.mjs
ANVIA_SANDBOX_BUILD=debug node --test --test-concurrency=4 test/unit/*.test.js test/fake/*.test.js test/agent/*.test.js
