#!/bin/sh
# file_read.sh - run inside the sandbox by the addon, as the sandbox's user (embedded in
# file_read_sh.h by scripts/embed-sh.mjs, after _file_walk.sh; its comment lines are not sent).
#
# sh -c "$FILE_READ_SH" anvia-read <workdir> <path> find <most bytes>
#
#  $4: the most bytes to read. 94: not a regular file; 95: cannot be read; 99: too large
# (the size on stderr).
#@include _file_walk.sh
# shellcheck disable=SC2154 # name and at: set by the walk
if [ -L "$name" ]; then printf '%s' "$2" >&2; exit 91; fi
[ -e "$name" ] || exit 96
exec 3< "$name" || exit 95
[ "$(readlink "/proc/$$/fd/3")" = "$at" ] || { printf '%s' "$2" >&2; exit 91; }
[ -f "/proc/$$/fd/3" ] || exit 94
size=$(stat -L -c %s "/proc/$$/fd/3") || exit 95
[ "$size" -le "$4" ] || { printf '%s' "$size" >&2; exit 99; }
exec cat <&3
