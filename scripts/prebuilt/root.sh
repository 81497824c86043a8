#!/usr/bin/env bash
# Makes (once) the build root for the self-contained binaries: Debian bullseye (glibc 2.31)
# made with mmdebstrap, with a native toolchain, Debian's aarch64 cross toolchain, the
# autotools, and deb-src lines for bookworm (the newer, security-maintained sources of
# curl, libarchive, jansson and OpenSSL are built here against bullseye's older glibc).
# Prints the root's path. Cached in .state/prebuilt/root-<hash of this recipe>; a change
# to the package list makes a new root. Needs root (chroot) and mmdebstrap.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
state="$repo/.state/prebuilt"
mkdir -p "$state"

MIRROR="${ANVIA_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
PACKAGES="build-essential,gcc-aarch64-linux-gnu,libc6-dev-arm64-cross,binutils-aarch64-linux-gnu,autoconf,automake,libtool,pkg-config,perl,dpkg-dev,ca-certificates,xz-utils,bzip2,file"
recipe="bullseye $MIRROR $PACKAGES v1"
root="$state/root-$(printf '%s' "$recipe" | sha256sum | cut -c1-12)"

if [ ! -f "$root/.anvia-ready" ]; then
  command -v mmdebstrap >/dev/null || { echo "root.sh: mmdebstrap is missing (apt-get install mmdebstrap)" >&2; exit 1; }
  rm -rf "$root" "$root.tmp"
  echo "[prebuilt] making the bullseye build root (once, a few minutes): $root" >&2
  mmdebstrap --quiet --variant=minbase --include="$PACKAGES" \
    --setup-hook='mkdir -p "$1/etc/apt/sources.list.d"' \
    bullseye "$root.tmp" "deb $MIRROR bullseye main" >&2
  # Sources: bookworm's (and bookworm-security's, where the mirror has them) deb-src lines.
  cat > "$root.tmp/etc/apt/sources.list.d/anvia-src.list" <<SRC
deb-src $MIRROR bookworm main
deb-src $MIRROR bookworm-updates main
deb-src ${MIRROR%/debian}/debian-security bookworm-security main
SRC
  touch "$root.tmp/.anvia-ready"
  mv "$root.tmp" "$root"
fi
echo "$root"
