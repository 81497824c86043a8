#!/bin/sh
# _file_walk.sh - the walk file_read.sh and file_write.sh begin with (#@include: scripts/embed-sh.mjs).
#
# The walk both scripts share: from the workdir ($1) down the directories of $2 (a
# normalized relative path), creating them when $3 is "create". Exit 90: no workdir; 91:
# a symbolic link (its path on stderr); 92: not a directory, or cannot be made (its path on
# stderr); 93: cannot be entered; 96: missing (read). Leaves $here (the directory
# entered) and $name (the last component).
# shellcheck disable=SC2034 # here, name and at are for the script that includes this
umask 022
cd -P -- "$1" 2>/dev/null || exit 90
here=$(pwd -P)
name=${2##*/}; dir=${2%/*}; [ "$dir" = "$2" ] && dir=
walked=
IFS=/; set -f
for c in $dir; do
  walked=${walked:+$walked/}$c
  if [ -L "$c" ]; then printf '%s' "$walked" >&2; exit 91; fi
  if [ ! -e "$c" ]; then
    [ "$3" = create ] || exit 96
    mkdir -- "$c" 2>/dev/null || [ -d "$c" ] || { printf '%s' "$walked" >&2; exit 92; }
  fi
  if [ -L "$c" ]; then printf '%s' "$walked" >&2; exit 91; fi
  if [ ! -d "$c" ]; then [ "$3" = create ] || exit 96; printf '%s' "$walked" >&2; exit 92; fi
  cd -P -- "$c" 2>/dev/null || { printf '%s' "$walked" >&2; exit 93; }
  case $here in /) want=/$c ;; *) want=$here/$c ;; esac
  here=$(pwd -P)
  [ "$here" = "$want" ] || { printf '%s' "$walked" >&2; exit 91; }
done
unset IFS; set +f
case $here in /) at=/$name ;; *) at=$here/$name ;; esac
