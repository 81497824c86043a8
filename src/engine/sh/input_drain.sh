#!/bin/sh
# input_drain.sh - run inside the sandbox by the addon (embedded in input_drain_sh.h by
# scripts/embed-sh.mjs; its comment lines are not sent).
#
# sh -c "$INPUT_DRAIN_SH" anvia-input <command> [args...]
#
# Input on engines that drop output when a command leaves its input unread (Podman: its
# attach code returns on the failed stdin copy and resets the connection without waiting
# for the output; engine_info says which engine this is). The command runs behind this
# wrapper instead: its stdin is a pipe fed by `cat` from the exec's stdin, and once the
# command has exited, whatever it did not read is drained, so the exec's stdin is always
# read to its end before the exec exits and nothing of the output is dropped. The exit
# status is the command's. Nothing is written anywhere (no staged file to place, clean up
# or hide from a read-only rootfs or a non-root user); only `sh` and `cat` are needed.
# "$@" is the command and its arguments, never parsed by the shell.
cat | { "$@"; s=$?; cat >/dev/null; exit $s; }
