#!/bin/sh
# shellcheck disable=SC2086,SC2162 # every variable is a number; /proc/uptime has no backslash
# lifetime.sh - run inside the sandbox by the addon (embedded in lifetime_sh.h by
# scripts/embed-sh.mjs; its comment lines are not sent).
#
# sh -c "$LIFETIME_SH" anvia-sandbox-lifetime <idle ms> <max ms>: the limits' loop, process 1 of a sandbox with limits whose image has no room for the init (codec/lifetime_cmd.c).
#
# lifetime_cmd.c - the limits' two commands (the init's, the shell loop's) and their labels
# (see lifetime_cmd.h). The init itself is src/agent/init.c.
#
# The loop, line by line: TERM and INT end it as the original's keep-alive did; USR1
# only sets a flag (a trapped signal also interrupts `wait`, status > 128, and the time
# of that moment becomes the last activity). `now` reads /proc/uptime ("12345.67 ...")
# into milliseconds without a process. s is the start, p the last activity; the
# deadline d is the earlier of s + max and p + idle; past it, process 1 exits and the
# container stops. Otherwise one `sleep` of the time left (rounded up to whole seconds,
# at most the tick k while an idle limit is set) is waited for, again after each
# signal, so a stop comes between the limit and one second past it.
trap 'exit 0' TERM INT
trap 'a=1' USR1
i=$1 l=$2 a=0 k=$(($1 / 4000))
[ $k -gt 0 ] || k=1
now() { read t r </proc/uptime; t=${t%.*}${t#*.}0; t=${t#"${t%%[!0]*}"}; t=${t:-0}; }
now; s=$t; p=$t
while :; do
  [ $a = 0 ] || { a=0; p=$t; }
  d=$((s + l))
  [ $i -gt 0 ] && { [ $l -eq 0 ] || [ $((p + i)) -lt $d ]; } && d=$((p + i))
  if [ $t -ge $d ]; then
    r=idle; [ $l -gt 0 ] && [ $t -ge $((s + l)) ] && r=lifetime
    echo "anvia-sandbox: $r limit reached, stopping"; exit 0
  fi
  w=$(((d - t + 999) / 1000))
  [ $i -gt 0 ] && [ $w -gt $k ] && w=$k
  sleep $w & z=$!
  while wait $z; [ $? -gt 128 ]; do now; p=$t; a=0; done
  now
done
