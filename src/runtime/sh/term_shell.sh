#!/bin/sh
# term_shell.sh - run inside the sandbox by the addon (embedded in term_shell_sh.h by
# scripts/embed-sh.mjs; its comment lines are not sent).
#
# /bin/sh -c "$TERM_SHELL_SH" anvia-terminal
#
# The program of a terminal started without a command: the image's bash when it has
# one, else its sh, both interactive. exec keeps the pid the caller was told.
if [ -x /bin/bash ]; then exec /bin/bash -i; fi
exec /bin/sh -i
