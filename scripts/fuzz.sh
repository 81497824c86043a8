#!/usr/bin/env bash
# `npm run fuzz`: builds the libFuzzer harnesses (test/fuzz, into build-fuzz/) and runs each
# for a set time, one after the other.
#
#   bash scripts/fuzz.sh                 every target, FUZZ_SECONDS each (default 60)
#   bash scripts/fuzz.sh tar paths       only those targets
#   FUZZ_SECONDS=600 FUZZ_JOBS=2 bash scripts/fuzz.sh
#
#   FUZZ_SECONDS  seconds per target (default 60)
#   FUZZ_JOBS     targets run at the same time (default 1; each uses one core)
#   FUZZ_STRICT=1 also fail on the known findings the harnesses otherwise tolerate
#                 (test/fuzz/FINDINGS.md)
#
# Each target starts from its committed seeds (test/fuzz/corpus/<name>, read only) and
# keeps what it discovers in build-fuzz/corpus/<name>, so later runs continue from there.
# Crashes, leaks and sanitizer reports are written to build-fuzz/crashes/<name>-*, the
# fuzzer's output to build-fuzz/logs/<name>.log. The exit status is 1 when any target
# found something. Reproduce one with: build-fuzz/fuzz_<name> build-fuzz/crashes/<file>
# Needs clang and its runtimes (Debian: clang libclang-rt-14-dev; scripts/setup.sh).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"

seconds="${FUZZ_SECONDS:-60}"
jobs="${FUZZ_JOBS:-1}"
out="$ROOT/build-fuzz"

if ! command -v clang >/dev/null 2>&1; then
  echo "fuzz.sh: clang is not installed (Debian: apt-get install clang libclang-rt-14-dev)." >&2
  exit 2
fi

all_targets=($(make -s -C test/fuzz list))
if [ $# -gt 0 ]; then targets=("$@"); else targets=("${all_targets[@]}"); fi
for t in "${targets[@]}"; do
  [[ " ${all_targets[*]} " == *" $t "* ]] || { echo "fuzz.sh: unknown target $t (have: ${all_targets[*]})" >&2; exit 2; }
done

echo "[fuzz] building ${#targets[@]} harness(es) into build-fuzz/" >&2
make -s -C test/fuzz -j"$jobs" "${targets[@]}" >&2

mkdir -p "$out/crashes" "$out/logs"

run_one() {
  local t="$1" work="$out/corpus/$1" log="$out/logs/$1.log"
  mkdir -p "$work"
  # Limits: 10 s for one input is a hang; 2 GiB of memory is a blow-up; 64 KiB inputs
  # cover every format here (a tar header, a page, a reply head) with room to spare.
  UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}" \
  ASAN_OPTIONS="detect_leaks=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}" \
  "$out/fuzz_$t" "$work" "test/fuzz/corpus/$t" \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
    -artifact_prefix="$out/crashes/$t-" -print_final_stats=1 >"$log" 2>&1
}

failed=()
running=0
for t in "${targets[@]}"; do
  echo "[fuzz] $t: ${seconds}s" >&2
  run_one "$t" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then
    wait -n || true
    running=$((running - 1))
  fi
done
wait || true

for t in "${targets[@]}"; do
  log="$out/logs/$t.log"
  runs="$(grep -a 'stat::number_of_executed_units' "$log" | awk '{print $2}' | tail -1)"
  found="$(grep -aE 'ERROR: (libFuzzer|AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer)|runtime error:|FUZZ_CHECK failed' "$log" | head -1 || true)"
  if [ -n "$found" ]; then
    failed+=("$t")
    echo "[fuzz] $t: FOUND: $found (log: build-fuzz/logs/$t.log)" >&2
    grep -a 'Test unit written to' "$log" | sed 's/^/[fuzz]   /' >&2 || true
  else
    echo "[fuzz] $t: ok, ${runs:-?} runs" >&2
  fi
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "[fuzz] findings in: ${failed[*]}" >&2
  exit 1
fi
