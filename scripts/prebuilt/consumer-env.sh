#!/usr/bin/env bash
# Makes (once, cached) what test/tooling/consumer.test.js runs the packed package in:
#  x64    a Docker image anvia-sandbox/consumer-bullseye:<node version>: Debian bullseye
#         minbase (glibc 2.31; no libcurl, libarchive, jansson, OpenSSL 3 or compiler) plus
#         this machine's own Node binary and its npm, imported with `docker import`;
#  arm64  a Debian bookworm arm64 root with Debian's nodejs, its packages only extracted
#         (no maintainer scripts run, so no binfmt_misc is needed): the tests run its node
#         as `qemu-aarch64-static -L ROOT ROOT/usr/bin/node`.
#   consumer-env.sh x64|arm64|all     prints "image NAME" and/or "arm64-root PATH"
# Needs root, mmdebstrap, docker (x64) and qemu-user-static (arm64).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
state="$repo/.state/prebuilt"
mkdir -p "$state"
# One maker at a time (the test and npm test's artefacts stage may both ask): the others
# wait here, then find what the first made.
exec 9>"$state/.consumer-env.lock"
flock 9
MIRROR="${ANVIA_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
what="${1:-all}"
log() { printf '[consumer-env] %s\n' "$*" >&2; }
need() { command -v "$1" >/dev/null || { echo "consumer-env.sh: $1 is missing (apt-get install $2)" >&2; exit 1; }; }

if [ "$what" = x64 ] || [ "$what" = all ]; then
  need mmdebstrap mmdebstrap; need docker docker.io
  node="$(readlink -f "$(command -v node)")"
  npm_dir="$(readlink -f "$(dirname "$(readlink -f "$(command -v npm)")")/..")"
  [ -f "$npm_dir/package.json" ] || { echo "consumer-env.sh: npm's folder not found next to $(command -v npm)" >&2; exit 1; }
  key="$( (sha256sum "$node"; cat "$npm_dir/package.json"; echo "bullseye minbase v1") | sha256sum | cut -c1-12)"
  image="anvia-sandbox/consumer-bullseye:$("$node" --version)-$key"
  if ! docker image inspect "$image" >/dev/null 2>&1; then
    log "building $image (bullseye minbase + $node + npm; about a minute)"
    work="$(mktemp -d -t anvia-consumer-env.XXXXXX)"
    trap 'rm -rf "$work"' EXIT
    mmdebstrap --quiet --variant=minbase bullseye "$work/root" "deb $MIRROR bullseye main" >&2
    rm -rf "$work/root/var/cache/apt/archives"/*.deb "$work/root/var/lib/apt/lists"/*_Packages
    install -D -m 0755 "$node" "$work/root/usr/local/bin/node"
    mkdir -p "$work/root/usr/local/lib/node_modules"
    cp -a "$npm_dir" "$work/root/usr/local/lib/node_modules/npm"
    ln -s ../lib/node_modules/npm/bin/npm-cli.js "$work/root/usr/local/bin/npm"
    tar -C "$work/root" -c . | docker import --change 'CMD ["/bin/bash"]' \
      --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' - "$image" >/dev/null
    rm -rf "$work"
    trap - EXIT
  fi
  echo "image $image"
fi

if [ "$what" = arm64 ] || [ "$what" = all ]; then
  need mmdebstrap mmdebstrap; need qemu-aarch64-static qemu-user-static
  key="$(printf 'bookworm arm64 extract nodejs %s v1' "$MIRROR" | sha256sum | cut -c1-12)"
  root="$state/arm64-root-$key"
  if [ ! -f "$root/.anvia-ready" ]; then
    log "making the arm64 root with Debian's nodejs (once, about a minute)"
    rm -rf "$root" "$root.tmp"
    mmdebstrap --quiet --architectures=arm64 --variant=extract --include=nodejs \
      bookworm "$root.tmp" "deb $MIRROR bookworm main" >&2
    touch "$root.tmp/.anvia-ready"
    mv "$root.tmp" "$root"
  fi
  echo "arm64-root $root"
fi
