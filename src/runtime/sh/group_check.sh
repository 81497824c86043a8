#!/bin/sh
# group_check.sh - run inside the sandbox by the addon (embedded in group_check_sh.h by
# scripts/embed-sh.mjs; its comment lines are not sent).
#
# sh -c "$GROUP_CHECK_SH" <name> <pgid>
#
#  kill -0 on the group, as the original's group check.
kill -0 "-$1" 2>/dev/null
