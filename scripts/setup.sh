#!/usr/bin/env bash
# Prepares a fresh Debian machine for the tests and the demo, and skips whatever is
# already done: system packages, npm dependencies, the native addon, the in-sandbox agent,
# a running Docker engine, and the local test images.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

# 1. System packages (apt, as root). Only what is missing is installed.
packages=(docker.io libcurl4-openssl-dev libssl-dev libarchive-dev libjansson-dev pkg-config make gcc g++ python3
          mmdebstrap busybox-static docker-registry libarchive-tools clang libclang-rt-14-dev openssl)
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

# 4. A Docker engine. Start dockerd only when nothing answers, and remember that we did.
if ! engine_answers; then
  if [ -n "${DOCKER_HOST:-}" ]; then
    echo "DOCKER_HOST=$DOCKER_HOST does not answer; not starting a local engine." >&2
    exit 1
  fi
  say "starting dockerd"
  as_root sh -c "nohup dockerd >'$STATE/dockerd.log' 2>&1 & echo \$! > '$STATE/dockerd.pid'"
  for _ in $(seq 1 60); do
    engine_answers && break
    sleep 1
  done
  engine_answers || { tail -20 "$STATE/dockerd.log" >&2; echo "dockerd did not come up" >&2; exit 1; }
fi

# 5. The local images.
bash scripts/images.sh
