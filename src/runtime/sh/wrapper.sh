#!/bin/sh
# wrapper.sh - run inside the sandbox by the addon (embedded in wrapper_sh.h by
# scripts/embed-sh.mjs; its comment lines are not sent).
#
# sh -c "$WRAPPER_SH" <name> <marker> <command> [args...] (started by the launcher)
#
#  The original's launcher and wrapper, byte for byte.
marker="$1"
shift
group=$$
printf '\036%s:%s:%s\036' "$marker" "$$" "$group"
IFS= read -r ready || exit 125
[ "$ready" = "start" ] || exit 125
"$@" &
child=$!
# shellcheck disable=SC2317 # run by the trap below
terminate() {
  wait "$child" 2>/dev/null || true
  exit 143
}
trap terminate TERM INT
wait "$child"
exit $?
