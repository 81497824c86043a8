#!/usr/bin/env bash
# `npm pack` (prepack): builds the release addon and places it where the loader looks for a
# prebuilt binary, prebuilds/<platform>-<arch>/anvia_sandbox.napi.node. postpack removes it
# again, so the working tree keeps using its own builds. ANVIA_SANDBOX_NO_PREBUILT=1 packs
# without it (the source build is then the only way in).
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf prebuilds
[ "${ANVIA_SANDBOX_NO_PREBUILT:-}" = 1 ] && exit 0
bash scripts/build.sh
target="prebuilds/$(node -p 'process.platform + "-" + process.arch')"
mkdir -p "$target"
cp build/Release/anvia_sandbox.node "$target/anvia_sandbox.napi.node"
strip --strip-unneeded "$target/anvia_sandbox.napi.node"
