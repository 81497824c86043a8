#!/bin/sh
# term_signal.sh - run inside the sandbox by the addon (embedded in term_signal_sh.h by
# scripts/embed-sh.mjs; its comment lines are not sent).
#
# sh -c "$TERM_SIGNAL_SH" anvia-term-signal <marker> <signal number>
#
# Sends the signal to every process of an engine-path terminal: each one whose
# environment carries ANVIA_SANDBOX_EXEC_ID=$1 (the program and what it started; an
# entry counts only whole, see engine/sh/exec_kill.sh). Exit 0 when it reached at least
# one, 1 when none was left, 2 on bad arguments. SIGKILL goes through exec_kill.sh
# instead (freeze first, so nothing forks away).
[ -n "$1" ] || exit 2
case $2 in '' | *[!0-9]*) exit 2 ;; esac
m="ANVIA_SANDBOX_EXEC_ID=$1"
has() { tr '\n\000' '\001\n' < "/proc/$1/environ" 2>/dev/null | grep -qxF "$m"; }
sent=1
for d in /proc/[0-9]*; do
  p=${d#/proc/}
  [ "$p" = "$$" ] && continue
  has "$p" || continue
  kill "-$2" "$p" 2>/dev/null && sent=0
done
exit "$sent"
