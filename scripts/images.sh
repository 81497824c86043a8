#!/usr/bin/env bash
# Builds the local images when they are absent (cached in the engine afterwards):
#  - DEFAULT_IMAGE: Debian bookworm minbase with busybox and procps (GNU find, setsid, ps,
#    busybox httpd), made with mmdebstrap and imported;
#  - BUSYBOX_IMAGE: nothing but Debian's static busybox, for images without GNU tools.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

if ! docker image inspect "$DEFAULT_IMAGE" >/dev/null 2>&1; then
  say "building $DEFAULT_IMAGE with mmdebstrap (about a minute)"
  work="$(mktemp -d -t anvia-images.XXXXXX)"
  trap 'rm -rf "$work"' EXIT
  mmdebstrap --quiet --variant=minbase --include=busybox,procps bookworm "$work/rootfs.tar" >/dev/null
  docker import --change 'CMD ["/bin/sh"]' "$work/rootfs.tar" "$DEFAULT_IMAGE" >/dev/null
  rm -rf "$work"
  trap - EXIT
fi

if ! docker image inspect "$BUSYBOX_IMAGE" >/dev/null 2>&1; then
  say "building $BUSYBOX_IMAGE from busybox-static"
  work="$(mktemp -d -t anvia-images.XXXXXX)"
  trap 'rm -rf "$work"' EXIT
  mkdir -p "$work/bin" "$work/etc" "$work/tmp" "$work/root"
  cp /bin/busybox "$work/bin/busybox"
  for applet in $("$work/bin/busybox" --list); do
    [ "$applet" = busybox ] || ln -s busybox "$work/bin/$applet"
  done
  printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' > "$work/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' > "$work/etc/group"
  chmod 1777 "$work/tmp"
  tar -C "$work" -c . | docker import --change 'CMD ["/bin/sh"]' --change 'ENV PATH=/bin' - "$BUSYBOX_IMAGE" >/dev/null
  rm -rf "$work"
  trap - EXIT
fi
