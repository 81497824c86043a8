#!/usr/bin/env bash
# `npm run bench`: set up what is missing (as `npm test` does), build a release addon of
# the current sources for the benchmark, run bench/run.mjs, then bench/engines.mjs (this
# package on Docker, on Docker over ssh:// and on Podman: scripts/sshd.sh and
# scripts/podman.sh, started here when they are not running and stopped after), then stop
# only what set-up started. Options go to bench/run.mjs: `npm run bench -- --scale 0.5`,
# `-- --help`; ANVIA_BENCH_ENGINES_ARGS to bench/engines.mjs (default: both transports, the
# default one and "engine"); ANVIA_BENCH_ENGINES=0 skips it, ANVIA_BENCH_ENGINES=only runs
# nothing else.
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

status=0
if [ "${ANVIA_BENCH_ENGINES:-1}" != only ]; then
  node --expose-gc bench/run.mjs "$@" || status=$?
fi
[ "${ANVIA_BENCH_ENGINES:-1}" = 0 ] && exit $status

# The engines table. Each started here is stopped at the end (and only that).
started_podman=0
started_sshd=0
stop_engines() {
  [ $started_podman = 1 ] && bash scripts/podman.sh stop || true
  [ $started_sshd = 1 ] && bash scripts/sshd.sh stop || true
  bash scripts/teardown.sh
}
trap stop_engines EXIT
if ! [ -f "$STATE/podman/service.pid" ] || ! kill -0 "$(cat "$STATE/podman/service.pid")" 2>/dev/null; then started_podman=1; fi
bash scripts/podman.sh start
if ! [ -f "$STATE/ssh/sshd.pid" ] || ! kill -0 "$(cat "$STATE/ssh/sshd.pid")" 2>/dev/null; then started_sshd=1; fi
bash scripts/sshd.sh start
export ANVIA_BENCH_PODMAN_HOST="unix://$STATE/podman/podman.sock"
ANVIA_BENCH_SSH_HOST="$(bash scripts/sshd.sh env | sed -n 's/^export DOCKER_HOST=//p')"
export ANVIA_BENCH_SSH_HOST
export PATH="$STATE/ssh/bin:$PATH" # the test sshd's client config (scripts/sshd.sh)
if [ -n "${ANVIA_BENCH_ENGINES_ARGS:-}" ]; then
  # shellcheck disable=SC2086
  node bench/engines.mjs $ANVIA_BENCH_ENGINES_ARGS || status=$?
else
  node bench/engines.mjs || status=$?
  node bench/engines.mjs --transport engine --out bench/results/engines-transport-engine-latest.json || status=$?
fi
exit $status
