#!/bin/sh
# proc_stop.sh - run inside the sandbox by the addon (embedded in proc_stop_sh.h by
# scripts/embed-sh.mjs; its comment lines are not sent).
#
# sh -c "$PROC_STOP_SH" <name> <pgid> <grace ms>
#
# The original's stop in one exec: TERM to the group, wait up to the grace period for it
# to go, KILL, wait up to a second more. Exit 0: the group is gone; 1: it is not.
pg="$1"
n=$(( ($2 + 49) / 50 ))
gone() { ! kill -0 "-$pg" 2>/dev/null; }
gone && exit 0
kill -TERM "-$pg" 2>/dev/null
i=0
while [ "$i" -lt "$n" ]; do gone && exit 0; sleep 0.05; i=$((i + 1)); done
gone && exit 0
kill -KILL "-$pg" 2>/dev/null
i=0
while [ "$i" -lt 20 ]; do gone && exit 0; sleep 0.05; i=$((i + 1)); done
exit 1
