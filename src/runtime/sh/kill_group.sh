#!/bin/sh
# kill_group.sh - run inside the sandbox by the addon (embedded in kill_group_sh.h by
# scripts/embed-sh.mjs; its comment lines are not sent).
#
# sh -c "$KILL_GROUP_SH" anvia-kill-group <pgid>
#
#  Ends a process group through the engine (one exec), in the background: what a dead
# agent left running of a command it had started.
kill -KILL "-$1" 2>/dev/null; exit 0
