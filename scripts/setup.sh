#!/usr/bin/env bash
# Prepares a fresh Debian machine for the tests and the demo, and skips whatever is
# already done: system packages, npm dependencies, the native addon, the in-sandbox agent,
# a running Docker engine, and the local test images.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

# 1. System packages (apt, as root). Only what is missing is installed.
packages=(docker.io libcurl4-openssl-dev libssl-dev libarchive-dev libjansson-dev pkg-config make gcc g++ python3
          mmdebstrap busybox-static docker-registry libarchive-tools clang libclang-rt-14-dev openssl
          runsc crun shellcheck)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  say "installing system packages: ${missing[*]}"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
fi

# 2. npm dependencies (our own install script builds the addon; see below).
if [ ! -d node_modules/zod ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  say "installing npm dependencies"
  npm install --no-audit --no-fund --ignore-scripts >/dev/null
fi

# 3. The native addon, release and debug (-Werror) builds; make skips unchanged files.
say "building the native addon"
bash scripts/build.sh
bash scripts/build.sh --debug
# The in-sandbox agent (static, x86_64 and aarch64; rebuilt only when its sources change).
say "building the sandbox agent"
bash scripts/build-agent.sh --quiet

# 4. A Docker engine. Started (scripts/dockerd.sh: its own configuration and data root in
# .state/dockerd) only when nothing answers; teardown.sh stops only that one.
bash scripts/dockerd.sh start

# 5. The local images.
bash scripts/images.sh
