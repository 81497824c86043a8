#!/bin/sh
# place_agent.sh - run inside the sandbox by the addon (embedded in place_agent_sh.h by
# scripts/embed-sh.mjs; its comment lines are not sent).
#
# /bin/sh -c "$PLACE_AGENT_SH" anvia-place-agent <the agent's path>
#
# Writes the binary into the /.anvia tmpfs of a read-only rootfs, as uid 0: run by
# /bin/sh with ROOT_EXEC_ENV (codec/runspec.h) over the container's environment, and
# every program named by its absolute path (busybox images and Debian's, merged /usr or
# not, have them in /bin), so nothing on the container's PATH, which can hold a
# directory the sandbox's user writes, is run as root. Every expansion is quoted.
set -e
[ -d /.anvia ] && [ ! -L /.anvia ]
t=/.anvia/.agent.$$
/bin/cat > "$t"
/bin/chmod 755 "$t"
/bin/mv -f "$t" "$1"
