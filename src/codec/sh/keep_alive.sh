#!/bin/sh
# keep_alive.sh - run inside the sandbox by the addon (embedded in keep_alive_sh.h by
# scripts/embed-sh.mjs; its comment lines are not sent).
#
# sh -c "$KEEP_ALIVE_SH": process 1 of a sandbox without limits; the original's container command, byte for byte (one line, as the original has it).
trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done
