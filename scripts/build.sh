#!/usr/bin/env bash
# Builds the native addon from source with node-gyp, offline: the Node headers come from
# the system (/usr/include/node), nothing is downloaded. Each mode has its own build
# directory, so building one never wipes another:
#   scripts/build.sh            release   -> build/Release/anvia_sandbox.node
#   scripts/build.sh --debug    -Wall -Wextra -Werror, -O0 -g
#                                         -> build-debug/build/Debug/anvia_sandbox.node
#   scripts/build.sh --asan     debug + AddressSanitizer + UBSan
#                                         -> build-asan/build/Debug/anvia_sandbox.node
set -euo pipefail
cd "$(dirname "$0")/.."

mode=release
for arg in "$@"; do
  case "$arg" in
    --debug) mode=debug ;;
    --asan) mode=asan ;;
    *) echo "build.sh: unknown option $arg" >&2; exit 2 ;;
  esac
done

find_node_gyp() {
  if [ -n "${npm_config_node_gyp:-}" ] && [ -f "$npm_config_node_gyp" ]; then echo "$npm_config_node_gyp"; return; fi
  local npm_dir
  npm_dir="$(dirname "$(readlink -f "$(command -v npm)")")/.."
  for candidate in "node_modules/node-gyp/bin/node-gyp.js" \
                   "$npm_dir/node_modules/node-gyp/bin/node-gyp.js" \
                   "/usr/lib/node_modules/npm/node_modules/node-gyp/bin/node-gyp.js" \
                   "/usr/share/nodejs/node-gyp/bin/node-gyp.js"; do
    if [ -f "$candidate" ]; then echo "$candidate"; return; fi
  done
  echo "build.sh: node-gyp not found (it ships with npm)" >&2
  exit 1
}

nodedir="${ANVIA_NODEDIR:-}"
if [ -z "$nodedir" ]; then
  if [ -f /usr/include/node/node_api.h ]; then nodedir=/usr
  else nodedir="$(dirname "$(dirname "$(readlink -f "$(command -v node)")")")"; fi
fi

gyp="$(find_node_gyp)"
# The scripts run inside sandboxes (src/*/sh/*.sh) into their C headers: an edited script
# is what this build embeds (the headers are committed, for builds without this script).
if [ -f scripts/embed-sh.mjs ]; then node scripts/embed-sh.mjs; fi
# The debug and asan builds run in a shadow package directory (links to binding.gyp and
# src/), because node-gyp always builds in <package>/build.
pkg="."
if [ "$mode" != release ]; then
  pkg="build-$mode"
  mkdir -p "$pkg"
  ln -sfn ../binding.gyp "$pkg/binding.gyp"
  ln -sfn ../src "$pkg/src"
fi
args=(rebuild "--nodedir=$nodedir" "--directory=$pkg" "--jobs=max")
export ANVIA_SANITIZE=0
case "$mode" in
  debug) args+=(--debug) ;;
  asan) args+=(--debug); export ANVIA_SANITIZE=1 ;;
esac
# Incremental when the mode, the list of sources and binding.gyp are unchanged: make
# recompiles only what changed. A new or removed source file, or an edited binding.gyp (a
# define, a flag), needs gyp to run again (rebuild).
stamp="$mode $( { find src -name '*.c' -not -path 'src/agent/*' | sort; cat binding.gyp; } | sha256sum | cut -c1-16)"
if [ -f "$pkg/build/config.gypi" ] && [ -f "$pkg/build/.anvia-stamp" ] && [ "$(cat "$pkg/build/.anvia-stamp")" = "$stamp" ]; then
  args[0]=build
fi
log="$(mktemp)"
node "$gyp" "${args[@]}" >"$log" 2>&1 || { cat "$log" >&2; rm -f "$log"; exit 1; }
rm -f "$log"
echo "$stamp" > "$pkg/build/.anvia-stamp"
