#!/bin/sh
# list.sh - run inside the sandbox by the addon (embedded in list_sh.h by
# scripts/embed-sh.mjs; its comment lines are not sent).
#
# sh -c "$LIST_SH" anvia-list <directory>
#
#  The records of find -printf '%y\0%s\0%p\0' with the shell's builtins and stat, for
# images whose find lacks -printf. As find: a missing directory fails, a symbolic link or a
# file lists nothing. Globs list names with any byte in them; a pattern that matches no
# file (an empty directory's) is skipped.
if [ -L "$1" ] || { [ -e "$1" ] && [ ! -d "$1" ]; }; then exit 0; fi
[ -d "$1" ] || { echo "find: $1: No such file or directory" >&2; exit 1; }
for f in "$1"/* "$1"/.[!.]* "$1"/..?*; do
  if [ -L "$f" ]; then t=l; s=
  elif [ -d "$f" ]; then t=d; s=
  elif [ -f "$f" ]; then t=f; s=$(stat -c %s "$f" 2>/dev/null) || s=
  elif [ -e "$f" ]; then t=o; s=
  else continue; fi
  printf '%s\0%s\0%s\0' "$t" "$s" "$f"
done
