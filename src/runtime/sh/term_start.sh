#!/bin/sh
# term_start.sh - run inside the sandbox by the addon (embedded in term_start_sh.h by
# scripts/embed-sh.mjs; its comment lines are not sent).
#
# sh -c "$TERM_START_SH" anvia-term <cols> <rows> <program> [args...]
#
# The first program of an engine-path terminal (runtime/engine_term.c): the exec's pty
# gets its size before the program starts (Engine API v1.41 has no ConsoleSize on exec
# create), then the program replaces this shell (exec keeps the pid). A program that
# cannot be found exits 127 with "anvia-term: <program>: not found", before any output
# of its own.
stty cols "$1" rows "$2" 2>/dev/null
shift 2
if ! command -v "$1" >/dev/null 2>&1; then
  printf 'anvia-term: %s: not found\n' "$1" >&2
  exit 127
fi
exec "$@"
