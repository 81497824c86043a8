#!/bin/sh
# file_write.sh - run inside the sandbox by the addon, as the sandbox's user (embedded in
# file_write_sh.h by scripts/embed-sh.mjs, after _file_walk.sh; its comment lines are not sent).
#
# sh -c "$FILE_WRITE_SH" anvia-write <workdir> <path> create <bytes>
#
#  stdin: the content, $4 bytes of it. 94: the target is a directory; 95: cannot write.
#@include _file_walk.sh
# shellcheck disable=SC2154 # name and at: set by the walk
if [ -d "$name" ] && [ ! -L "$name" ]; then exit 94; fi
tmp=".anvia-write.$$"
set -C
cat > "$tmp" || { rm -f -- "$tmp"; exit 95; }
set +C
n=$(wc -c < "$tmp")
[ "$((n))" -eq "$4" ] || { rm -f -- "$tmp"; echo "wrote $((n)) of $4 bytes" >&2; exit 95; }
mv -f -- "$tmp" "$name" || { rm -f -- "$tmp"; exit 95; }
