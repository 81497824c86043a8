#!/bin/sh
# term_pid.sh - run inside the sandbox by the addon (embedded in term_pid_sh.h by
# scripts/embed-sh.mjs; its comment lines are not sent).
#
# sh -c "$TERM_PID_SH" anvia-term-pid <marker>
#
# Prints the pid of an engine-path terminal's program: the process whose environment
# carries ANVIA_SANDBOX_EXEC_ID=$1 and whose parent's does not (the engine's exec
# starts it; everything it starts inherits the marker). Looks again for about 2 s while
# the program is being started. Exit 0 with the pid, 1 when none was found (it ended).
# An entry counts only whole (see engine/sh/exec_kill.sh).
[ -n "$1" ] || exit 2
m="ANVIA_SANDBOX_EXEC_ID=$1"
has() { tr '\n\000' '\001\n' < "/proc/$1/environ" 2>/dev/null | grep -qxF "$m"; }
i=0
while [ "$i" -lt 40 ]; do
  for d in /proc/[0-9]*; do
    p=${d#/proc/}
    [ "$p" = "$$" ] && continue
    has "$p" || continue
    # The parent: the fourth field of stat, after the command's parenthesis.
    s=$(cat "/proc/$p/stat" 2>/dev/null) || continue
    s=${s##*) }
    set -f
    # shellcheck disable=SC2086 # the fields, split on purpose (no glob: set -f)
    set -- $s
    set +f
    pp=$2
    if [ -z "$pp" ] || ! has "$pp"; then
      echo "$p"
      exit 0
    fi
  done
  sleep 0.05 2>/dev/null || sleep 1
  i=$((i + 1))
done
exit 1
