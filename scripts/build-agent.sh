#!/usr/bin/env bash
# Builds the in-container agent (src/agent, src/codec/agent_wire.c) and its C unit tests:
#   build-agent/x86_64/anvia-agent      static, musl (musl-gcc)
#   build-agent/aarch64/anvia-agent     static, cross-built (glibc: Debian has no aarch64 musl
#                                        cross toolchain; the agent uses nothing that needs NSS)
#   build-agent/asan/anvia-agent        x86_64 glibc with AddressSanitizer + UBSan (tests only)
#   build-agent/<variant>/agent-unit-tests
#   build-agent/<variant>/liar          a hostile agent for the tests (test/agent/c/liar.c)
# Installs the Debian packages it needs (musl-tools, gcc-aarch64-linux-gnu, and
# qemu-user-static for the aarch64 tests) when they are missing. Incremental: a variant is
# rebuilt only when the hash of its sources and flags changed. The build id compiled in
# (HELLO's build string, --version) is that hash, so two agents with the same id are the
# same program.
#   bash scripts/build-agent.sh [--no-install] [--quiet]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="$ROOT/build-agent"
install=1
quiet=0
for arg in "$@"; do
  case "$arg" in
    --no-install) install=0 ;;
    --quiet) quiet=1 ;;
    *) echo "usage: $0 [--no-install] [--quiet]" >&2; exit 2 ;;
  esac
done
say() { [ "$quiet" = 1 ] || printf '\033[1m[agent]\033[0m %s\n' "$*" >&2; }

mkdir -p "$OUT"
# Concurrent callers (test files run in parallel) build one at a time.
exec 9>"$OUT/.lock"
flock 9

need=()
command -v musl-gcc >/dev/null 2>&1 || need+=(musl-tools)
command -v aarch64-linux-gnu-gcc >/dev/null 2>&1 || need+=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross)
command -v qemu-aarch64-static >/dev/null 2>&1 || need+=(qemu-user-static)
command -v gcc >/dev/null 2>&1 || need+=(gcc)
if [ "${#need[@]}" -gt 0 ]; then
  if [ "$install" = 1 ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "installing ${need[*]}"
    if ! DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${need[@]}" >/dev/null 2>&1; then
      apt-get update >/dev/null 2>&1 || true
      DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${need[@]}" >/dev/null 2>&1 ||
        say "could not install ${need[*]}: building what the installed compilers allow"
    fi
  else
    say "missing ${need[*]} (not installing): building what the installed compilers allow"
  fi
fi

AGENT_SRC=("$ROOT"/src/agent/*.c)
CODEC_SRC=("$ROOT/src/codec/agent_wire.c")
HEADERS=("$ROOT"/src/agent/*.h "$ROOT/src/codec/agent_wire.h")
# The unit tests link the agent's pure parts only (no main loop).
UNIT_SRC=("$ROOT/test/agent/c/unit_tests.c" "$ROOT/src/agent/walk.c" "$ROOT/src/agent/util.c" "$ROOT/src/agent/ag_err.c"
  "$ROOT/src/agent/procfs.c" "$ROOT/src/agent/diag.c" "$ROOT/src/codec/agent_wire.c")
# A hostile agent for real containers (test/integration/agent-liar.test.js plants it).
LIAR_SRC=("$ROOT/test/agent/c/liar.c" "$ROOT/src/codec/agent_wire.c")
WARN=(-std=c11 -Wall -Wextra -Werror)
INC=(-I"$ROOT/src/agent" -I"$ROOT/src/codec")

# The build id: sources, headers and this script, hashed.
src_hash="$(cat "${AGENT_SRC[@]}" "${CODEC_SRC[@]}" "${HEADERS[@]}" "$0" | sha256sum | cut -c1-16)"
unit_hash="$(cat "${UNIT_SRC[@]}" "${LIAR_SRC[@]}" "${HEADERS[@]}" "$0" | sha256sum | cut -c1-16)"

# build <variant> <compiler> <flags...>: the agent and the unit tests of one variant.
build() {
  local variant="$1" cc="$2"
  shift 2
  local flags=("$@")
  local dir="$OUT/$variant"
  if ! command -v "$cc" >/dev/null 2>&1; then
    say "$variant: $cc not found, skipped"
    return 0
  fi
  mkdir -p "$dir"
  local stamp="$src_hash/$unit_hash/${flags[*]}"
  if [ -x "$dir/anvia-agent" ] && [ -x "$dir/agent-unit-tests" ] && [ -x "$dir/liar" ] &&
    [ "$(cat "$dir/.stamp" 2>/dev/null)" = "$stamp" ]; then
    return 0
  fi
  say "$variant: building"
  "$cc" "${WARN[@]}" "${INC[@]}" "${flags[@]}" -DAGENT_BUILD="\"$src_hash\"" \
    "${AGENT_SRC[@]}" "${CODEC_SRC[@]}" -o "$dir/anvia-agent.tmp"
  "$cc" "${WARN[@]}" "${INC[@]}" "${flags[@]}" -DAGENT_BUILD="\"$src_hash\"" \
    "${UNIT_SRC[@]}" -o "$dir/agent-unit-tests.tmp"
  "$cc" "${WARN[@]}" "${INC[@]}" "${flags[@]}" "${LIAR_SRC[@]}" -o "$dir/liar.tmp"
  mv "$dir/anvia-agent.tmp" "$dir/anvia-agent"
  mv "$dir/agent-unit-tests.tmp" "$dir/agent-unit-tests"
  mv "$dir/liar.tmp" "$dir/liar"
  printf '%s' "$stamp" >"$dir/.stamp"
}

RELEASE=(-static -O2 -ffunction-sections -fdata-sections -Wl,--gc-sections -s)
build x86_64 musl-gcc "${RELEASE[@]}"
# A host-side helper of the tests (the symlink swap race).
swapper="$OUT/x86_64/swapper"
if [ ! -x "$swapper" ] || [ "$ROOT/test/agent/c/swapper.c" -nt "$swapper" ]; then
  cc "${WARN[@]}" -O2 "$ROOT/test/agent/c/swapper.c" -o "$swapper"
fi
build aarch64 aarch64-linux-gnu-gcc "${RELEASE[@]}"
build asan gcc -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all

for variant in x86_64 aarch64 asan; do
  f="$OUT/$variant/anvia-agent"
  [ -x "$f" ] && say "$(printf '%-8s %8d bytes  %s' "$variant" "$(stat -c %s "$f")" "${f#"$ROOT"/}")"
done
say "build id $src_hash"
