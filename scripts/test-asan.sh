#!/usr/bin/env bash
# `npm run test:asan`: builds the addon with AddressSanitizer and UndefinedBehaviorSanitizer
# and runs every suite against it. Node itself is not instrumented, so the ASan runtime is
# preloaded into the node processes only (the tests' own helpers spawn docker, tar and
# others without it). Any sanitizer report fails the run.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
if [ "${ANVIA_SETUP_DONE:-}" != 1 ]; then
  bash scripts/setup.sh
  trap 'bash scripts/teardown.sh' EXIT
fi
bash scripts/build.sh --asan
snapshot="$STATE/sandboxes-before-asan.json"
node scripts/check-leftovers.mjs --snapshot "$snapshot"
libasan="$(gcc -print-file-name=libasan.so)"
report_dir="$(mktemp -d -t anvia-asan-reports.XXXXXX)"
export ANVIA_SANDBOX_BUILD=asan
# Leak checking would report Node's own allocations at exit: leaks are measured by the
# valgrind and RSS tests instead. Everything else stops at the first error. A small
# quarantine keeps freed memory from inflating RSS, which some tests bound.
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:halt_on_error=1:quarantine_size_mb=16:malloc_context_size=8:log_path=$report_dir/asan"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:log_path=$report_dir/ubsan"
# The tooling suites (test/tooling: packaging installs the packed binary, the fuzz smoke
# and the C drivers build their own sanitized binaries, the bench smoke times the release
# paths, the layer and type checks read sources) and the in-container agent's own suites
# (test/agent: no addon at all) exercise no addon code of this build: release stage only.
mapfile -t files < <(find test/unit test/fake test/integration test/leaks -name '*.test.js' \
  ! -path 'test/unit/c-drivers.test.js' | sort)
status=0
LD_PRELOAD="$libasan" node --test --test-concurrency=2 "${files[@]}" || status=$?
if compgen -G "$report_dir/*" >/dev/null; then
  echo "Sanitizer reports:" >&2
  cat "$report_dir"/* >&2
  status=1
fi
rm -rf "$report_dir"
node scripts/check-leftovers.mjs "$snapshot"
exit "$status"
