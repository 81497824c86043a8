#!/usr/bin/env bash
# `npm run bench`: set up what is missing (as `npm test` does), build a release addon of
# the current sources for the benchmark, run bench/run.mjs, then stop only what set-up
# started. Options go to bench/run.mjs: `npm run bench -- --scale 0.5`, `-- --help`.
#
# The release addon is built in .state/bench-addon (a copy of binding.gyp and src/), not
# in build/: set-up leaves the debug build there for the tests, and switching build/
# between release and debug would rebuild it under anyone testing at the same time.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
bash scripts/setup.sh
trap 'bash scripts/teardown.sh' EXIT

addon_dir="$STATE/bench-addon"
mkdir -p "$addon_dir/scripts"
cp -p binding.gyp "$addon_dir/"
cp -p scripts/build.sh "$addon_dir/scripts/"
rm -rf "$addon_dir/src"
cp -a src "$addon_dir/src" # mtimes kept: make rebuilds only what changed
say "building a release addon for the benchmark"
bash "$addon_dir/scripts/build.sh"
export ANVIA_SANDBOX_ADDON="$addon_dir/build/Release/anvia_sandbox.node"
unset ANVIA_SANDBOX_BUILD

node --expose-gc bench/run.mjs "$@"
