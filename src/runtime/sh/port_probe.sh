#!/bin/sh
# port_probe.sh - run inside the sandbox by the addon (embedded in port_probe_sh.h by
# scripts/embed-sh.mjs; its comment lines are not sent).
#
# sh -c "$PORT_PROBE_SH" anvia-port-probe <port> <interval s>
#
#  The original's probe, run in a loop: exit 0 as soon as the port listens.
port="$(printf '%04X' "$1")"
probe() {
for table in /proc/net/tcp /proc/net/tcp6; do
  [ -r "$table" ] || continue
  while read -r _ local _ state _; do
    case "$local" in
      "00000000:$port"|"00000000000000000000000000000000:$port")
        [ "$state" = "0A" ] && return 0
        ;;
    esac
  done < "$table"
done
return 1
}
while :; do
  probe && exit 0
  sleep "$2" || exit 1
done
