#!/bin/sh
# launcher.sh - run inside the sandbox by the addon (embedded in launcher_sh.h by
# scripts/embed-sh.mjs; its comment lines are not sent).
#
# sh -c "$LAUNCHER_SH" anvia-process-launcher <wrapper script> <its name> <marker> <command> [args...]
#
#  The original's launcher and wrapper, byte for byte.
wrapper="$1"
shift
if command -v setsid >/dev/null 2>&1 && setsid -w true >/dev/null 2>&1; then
  exec setsid -w sh -c "$wrapper" "$@"
fi
exec sh -c "$wrapper" "$@"
