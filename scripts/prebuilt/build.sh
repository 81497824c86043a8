#!/usr/bin/env bash
# Builds the self-contained prebuilt binaries:
#   OUT/linux-x64/anvia_sandbox.napi.node    (x86_64, native)
#   OUT/linux-arm64/anvia_sandbox.napi.node  (aarch64, Debian's cross toolchain)
# OUT is .state/prebuilt/out unless --out says (`npm pack` uses --out prebuilds: in a
# checkout a prebuilds/ folder would shadow the checkout's own builds, see lib/native.js).
# Each links OpenSSL 3.0, libcurl, libarchive and jansson statically (built from Debian
# bookworm's source packages) and needs nothing but glibc's parts, at most GLIBC_2.31 (libc, libm,
# libpthread, libdl, the loader): the build root is Debian bullseye (glibc 2.31), made once
# with mmdebstrap (root.sh). Cached in .state/prebuilt/: the libraries by source version,
# the addon by the hash of its sources; a second run with nothing changed takes seconds.
#   build.sh [--out DIR] [--arch x64|arm64]...   (default: .state/prebuilt/out, both)
# ANVIA_PREBUILT_REFRESH=1 asks the mirror for new source versions now (else once a day).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
state="$repo/.state/prebuilt"
out="$state/out"
arches=()
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    --arch) arches+=("$2"); shift 2 ;;
    *) echo "build.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
[ ${#arches[@]} -gt 0 ] || arches=(x64 arm64)
[ "$(id -u)" = 0 ] || { echo "build.sh: needs root (chroot into the build root)" >&2; exit 1; }
[ -f /usr/include/node/node_api.h ] || { echo "build.sh: the Node headers are missing (/usr/include/node/node_api.h)" >&2; exit 1; }
log() { printf '[prebuilt] %s\n' "$*" >&2; }
# One build at a time (two `npm pack`s may run at once): the others wait here.
mkdir -p "$state"
exec 9>"$state/.lock"
flock 9
started=$SECONDS

root="$(bash "$here/root.sh")"
in_root() { chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LC_ALL=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"; }
cp -L /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
mkdir -p "$root/opt/anvia"
cp "$here/deps.sh" "$here/addon.sh" "$here/exports.map" "$root/opt/anvia/"

# 1. Source versions: the newest bookworm (+ security, updates) upload of each package.
stamp="$state/apt-updated"
if [ "${ANVIA_PREBUILT_REFRESH:-}" = 1 ] || [ ! -f "$stamp" ] || [ -n "$(find "$stamp" -mmin +1440)" ]; then
  log "reading the source package lists"
  in_root apt-get update -q >/dev/null
  touch "$stamp"
  rm -f "$state/unfetchable"
fi
# The newest upload whose source package the mirror serves in full (a security upload can
# be listed before its .dsc reaches the mirror: then the one before it is used), fetched
# with apt-get source and patched with dpkg-source once, into /opt/anvia/src/<pkg>-<ver>.
fetch_source() {
  in_root sh -ec 'dir="/opt/anvia/src/$1-$2"; [ -f "$dir/.anvia-extracted" ] && exit 0
    dl="/opt/anvia/src/dl-$1"; rm -rf "$dl" "$dir"; mkdir -p "$dl"; cd "$dl"
    apt-get source --download-only -q "$1=$2" >/dev/null 2>&1 || { cd /; rm -rf "$dl"; exit 1; }
    dpkg-source --no-check -x ./*.dsc "$dir" >/dev/null; cd /; rm -rf "$dl"; touch "$dir/.anvia-extracted"' _ "$1" "$2"
}
newest_first() {  # Debian version order (dpkg's), newest first
  local list=() v i j t
  while read -r v; do list+=("$v"); done
  for ((i = 0; i < ${#list[@]}; i++)); do
    for ((j = i + 1; j < ${#list[@]}; j++)); do
      if dpkg --compare-versions "${list[j]}" gt "${list[i]}"; then t="${list[i]}"; list[i]="${list[j]}"; list[j]="$t"; fi
    done
  done
  [ ${#list[@]} -eq 0 ] || printf '%s\n' "${list[@]}"
}
unfetchable="$state/unfetchable"
touch "$unfetchable"
versions=""
for pkg in openssl curl libarchive jansson; do
  chosen=""
  for v in $(in_root apt-cache showsrc "$pkg" | awk -v p="$pkg" '$1=="Package:"{cur=$2} $1=="Version:" && cur==p {print $2}' | newest_first); do
    grep -qxF "$pkg=$v" "$unfetchable" && continue
    if fetch_source "$pkg" "$v"; then chosen="$v"; break; fi
    log "$pkg $v: the mirror does not serve its whole source package; using the previous upload (asked again at the next refresh)"
    echo "$pkg=$v" >> "$unfetchable"
  done
  [ -n "$chosen" ] || { echo "build.sh: no source package of $pkg could be fetched" >&2; exit 1; }
  versions+="$pkg=$chosen "
done
versions="${versions% }"
deps_key="$(printf '%s\n' "$versions" | cat - "$here/deps.sh" | sha256sum | cut -c1-12)"
log "sources: $versions (key $deps_key)"

# 2. The addon's sources (everything under src/ but the in-container agent) and Node's headers.
rm -rf "$root/opt/anvia/addon/src" "$root/opt/anvia/node-include"
mkdir -p "$root/opt/anvia/addon"
(cd "$repo" && find src -type d -not -path 'src/agent*' -print0 | xargs -0 -I{} mkdir -p "$root/opt/anvia/addon/{}" &&
  find src \( -name '*.c' -o -name '*.h' \) -not -path 'src/agent/*' -print0 | xargs -0 -I{} cp {} "$root/opt/anvia/addon/{}")
cp -a /usr/include/node "$root/opt/anvia/node-include"
src_key="$( (cd "$root/opt/anvia" && find addon/src node-include -type f -print0 | sort -z | xargs -0 sha256sum; cat addon.sh exports.map; echo "$deps_key") | sha256sum | cut -c1-12)"

for a in "${arches[@]}"; do
  case "$a" in
    x64) arch=x86_64 ;;
    arm64) arch=aarch64 ;;
    *) echo "build.sh: unknown arch $a (x64 or arm64)" >&2; exit 2 ;;
  esac
  cached="$state/addon/$a-$src_key.node"
  if [ ! -f "$cached" ]; then
    t=$SECONDS
    # Libraries of an older key (an older upload or recipe) are not needed again.
    find "$root/opt/anvia/deps" -mindepth 1 -maxdepth 1 -name "$arch-*" ! -name "$arch-$deps_key" -exec rm -rf {} + 2>/dev/null || true
    deps="$(in_root bash /opt/anvia/deps.sh "$arch" "$deps_key" "$versions")"
    log "$a: libraries ready ($deps, $((SECONDS - t)) s)"
    t=$SECONDS
    in_root bash /opt/anvia/addon.sh "$arch" "$deps" "/opt/anvia/out/$a/anvia_sandbox.napi.node"
    mkdir -p "$state/addon"
    find "$state/addon" -name "$a-*.node" -delete
    cp "$root/opt/anvia/out/$a/anvia_sandbox.napi.node" "$cached"
    log "$a: addon linked ($((SECONDS - t)) s)"
  else
    log "$a: unchanged, from the cache"
  fi
  mkdir -p "$out/linux-$a"
  cp "$cached" "$out/linux-$a/anvia_sandbox.napi.node"
done

files=()
for a in "${arches[@]}"; do files+=("$out/linux-$a/anvia_sandbox.napi.node"); done
bash "$here/check.sh" "${files[@]}"
log "done in $((SECONDS - started)) s"
