#!/usr/bin/env bash
# `npm pack` (prepack): places the prebuilt binaries where the loader looks for them,
# prebuilds/<platform>-<arch>/anvia_sandbox.napi.node. postpack removes them again, so the
# working tree keeps using its own builds.
#  - On Linux x86_64 as root with mmdebstrap: the self-contained binaries for linux-x64 and
#    linux-arm64 (OpenSSL, libcurl, libarchive and jansson linked in; glibc <= 2.31 only),
#    made by scripts/prebuilt/build.sh (cached: seconds when nothing changed).
#  - Otherwise, or with ANVIA_SANDBOX_PREBUILT=host: the release build of this machine
#    (node-gyp against the system's shared libraries) for this platform only, with a warning.
#  - ANVIA_SANDBOX_PREBUILT=self-contained fails instead of falling back.
#  - ANVIA_SANDBOX_NO_PREBUILT=1 packs none (the source build is then the only way in).
# In every mode but the last, the in-sandbox agent too: prebuilds/agent/<arch>/anvia-agent
# for x86_64 and aarch64 (static, scripts/build-agent.sh), which the library places in
# sandboxes whatever platform it runs on.
# `prebuild.sh DIR` fills DIR (absolute, or relative to the package) instead of prebuilds/:
# test/tooling/consumer.test.js packs a scratch copy of the package that way, leaving
# the checkout's prebuilds/ alone.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-prebuilds}"
rm -rf "$out"
[ "${ANVIA_SANDBOX_NO_PREBUILT:-}" = 1 ] && exit 0

mode="${ANVIA_SANDBOX_PREBUILT:-auto}"
if [ "$mode" = auto ]; then
  if [ "$(uname -sm)" = "Linux x86_64" ] && [ "$(id -u)" = 0 ] && command -v mmdebstrap >/dev/null && [ -f /usr/include/node/node_api.h ]; then
    mode=self-contained
  else
    mode=host
  fi
fi
case "$mode" in
  self-contained)
    bash scripts/prebuilt/build.sh --out "$out" >&2
    ;;
  host)
    echo "prebuild: packing this machine's release build, which needs the system's libcurl, libarchive and jansson;" \
         "the self-contained binaries need Linux x86_64, root, mmdebstrap and /usr/include/node (scripts/prebuilt/build.sh)." >&2
    bash scripts/build.sh
    target="$out/$(node -p 'process.platform + "-" + process.arch')"
    mkdir -p "$target"
    cp build/Release/anvia_sandbox.node "$target/anvia_sandbox.napi.node"
    strip --strip-unneeded "$target/anvia_sandbox.napi.node"
    ;;
  *) echo "prebuild: ANVIA_SANDBOX_PREBUILT must be auto, self-contained or host (got $mode)" >&2; exit 2 ;;
esac

bash scripts/build-agent.sh --quiet >&2
for arch in x86_64 aarch64; do
  agent="build-agent/$arch/anvia-agent"
  [ -x "$agent" ] || { echo "prebuild: $agent was not built (scripts/build-agent.sh)" >&2; exit 1; }
  mkdir -p "$out/agent/$arch"
  cp "$agent" "$out/agent/$arch/anvia-agent"
done
