#!/bin/sh
# exec_kill.sh - run inside the sandbox by the addon (embedded in exec_kill_sh.h by
# scripts/embed-sh.mjs; its comment lines are not sent).
#
# sh -c "$EXEC_KILL_SH" anvia-kill <marker>
#
# Ends every process whose environment carries ANVIA_SANDBOX_EXEC_ID=$1: freeze them
# all (so none forks while we look), kill them, look again until none is left. Only
# POSIX sh, tr and grep are needed (busybox has them).
#
# Only a whole environment entry counts: entries become lines with every newline inside
# a value turned into \001 first, so a value holding "\n<the entry>" (a variable that
# copied another command's environment) is not taken for it, and -x keeps a value or a
# longer marker that merely contains it out too. A process is looked at again once
# frozen, and let go if it is not the one seen (its pid was reused in between).
[ -n "$1" ] || exit 2
m="ANVIA_SANDBOX_EXEC_ID=$1"
has() { tr '\n\000' '\001\n' < "/proc/$1/environ" 2>/dev/null | grep -qxF "$m"; }
i=0
while [ "$i" -lt 50 ]; do
  found=
  for d in /proc/[0-9]*; do
    p=${d#/proc/}
    [ "$p" = "$$" ] && continue
    has "$p" || continue
    kill -STOP "$p" 2>/dev/null || continue
    if has "$p"; then found="$found $p"; else kill -CONT "$p" 2>/dev/null; fi
  done
  [ -z "$found" ] && exit 0
  # shellcheck disable=SC2086 # the pids, split on purpose
  kill -KILL $found 2>/dev/null
  i=$((i + 1))
done
exit 1
