#!/bin/sh
# term_leash.sh - run inside the sandbox by the addon (embedded in term_leash_sh.h by
# scripts/embed-sh.mjs; its comment lines are not sent).
#
# sh -c "$TERM_LEASH_SH" anvia-term-leash <marker> <kill script>
#
# The leash of an engine-path terminal (runtime/engine_term.c): an exec whose stdin is
# the addon's connection. The engine keeps a Tty exec's program running when its client
# goes; this one reads its input until the connection closes (the terminal ended, or the
# Node process that held it is gone), then runs the kill script (engine/sh/exec_kill.sh)
# on the terminal's marker, so nothing of the terminal outlives the process that holds
# it. Exit status: the kill script's.
[ -n "$1" ] && [ -n "$2" ] || exit 2
cat >/dev/null 2>&1
exec sh -c "$2" anvia-kill "$1"
