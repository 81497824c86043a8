#!/bin/sh
# shellcheck disable=SC2015 # "A && B || C": C when A or B fails, as meant
# tree_import.sh - run inside the sandbox by the addon (embedded in tree_import_sh.h by
# scripts/embed-sh.mjs; its comment lines are not sent).
#
# sh -c "$TREE_IMPORT_SH" anvia-import <workdir> <dest> <stage> <mode> <marker> [pgid]
# Stages an import in the hidden directory <stage> of the workspace and publishes it into
# <dest> without a race (tree_engine.c says how). mode:
#  - stream: the destination's way is checked, `tar -x` reads the archive from stdin into
#    the staging directory (the transport's own flow control bounds what waits), then
#    publish. The archive ends with a member named <marker>: a stream that stops early
#    never has it, and the script then removes what it extracted;
#  - extract: the same, reporting tar's progress on stdout (/proc/<pid>/io rchar, every
#    20 ms: a "0" line first) for a transport without flow control of its own;
#  - publish, discard, await (says "ready", then reads "publish" or anything else from
#    stdin: publish or discard);
#  - discard with <pgid>: that process group is killed first (what was left running of
#    an import whose transport died);
#  - settle <pgid>: waits (at most TREE_STOP_GRACE_MS) for that group's leader (the
#    script of an import whose transport died after the whole stream was handed on) to
#    end, then removes what it left staged. Without <pgid>, or when it does not end,
#    nothing is removed (the script may be publishing).
# Exit 90: no workdir; 91: a symbolic link (its path on stderr); 92: not a directory or
# cannot be made; 93: cannot be entered; 94: a directory where a file goes; 95: cannot
# move; 97: the stream ended before its marker; 98: tar failed (its message on stderr); 99:
# tar's progress cannot be read (/proc/<pid>/io), without which stdin has no bound. A tar
# whose io file is not readable yet (mid-exec) or no longer (it already ended) is not that:
# 99 only when the script's own /proc/$$/io is unreadable, or tar's stays so while it runs
# for 500 checks 20 ms apart.
ws=$1 dest=$2 stage=$3 mode=$4 marker=$5 pg=${6:-}
umask 022
cd -P -- "$ws" 2>/dev/null || exit 90
ws=$(pwd -P)
case $ws in /) st=/$stage ;; *) st=$ws/$stage ;; esac
say() { printf '%s' "$1" >&2; }
gone() { cd / && rm -rf -- "$st"; }
case $mode in
  discard)
    case $pg in '' | *[!0-9]*) ;; *) kill -KILL "-$pg" 2>/dev/null ;; esac
    gone
    exit 0 ;;
  settle)
    case $pg in '' | *[!0-9]*) exit 0 ;; esac
    n=0
    while :; do
      s=
      { read -r _ _ s _ < "/proc/$pg/stat"; } 2>/dev/null
      [ -n "$s" ] && [ "$s" != Z ] || break
      [ "$n" -lt 300 ] || exit 0
      sleep 0.05
      n=$((n + 1))
    done
    gone
    exit 0 ;;
esac
walk() {
  here=$ws
  cd -P -- "$ws" 2>/dev/null || return 90
  walked=
  [ "$2" = . ] && return 0
  IFS=/
  set -f
  for c in $2; do
    unset IFS
    set +f
    walked=${walked:+$walked/}$c
    case $here in /) t=/$c ;; *) t=$here/$c ;; esac
    if [ -L "$t" ]; then say "$walked"; return 91; fi
    if [ ! -e "$t" ]; then
      [ "$1" = check ] && return 0
      mkdir -m 755 -- "$t" 2>/dev/null || [ -d "$t" ] || { say "$walked"; return 92; }
      if [ -L "$t" ]; then say "$walked"; return 91; fi
    fi
    [ -d "$t" ] || { say "$walked"; return 92; }
    cd -P -- "$t" 2>/dev/null || { say "$walked"; return 93; }
    here=$(pwd -P)
    [ "$here" = "$t" ] || { say "$walked"; return 91; }
  done
  unset IFS
  set +f
  return 0
}
conflicts() {
  for e in "$1"/* "$1"/.[!.]* "$1"/..?*; do
    [ -e "$e" ] || [ -L "$e" ] || continue
    n=${e##*/}
    t=$2/$n
    r=${3:+$3/}$n
    if [ -L "$t" ]; then say "$r"; return 91; fi
    if [ -d "$e" ]; then
      if [ -d "$t" ]; then conflicts "$e" "$t" "$r" || return
      elif [ -e "$t" ]; then say "$r"; return 92
      fi
    elif [ -d "$t" ]; then say "$r"; return 94
    fi
  done
  return 0
}
merge() {
  for e in "$1"/* "$1"/.[!.]* "$1"/..?*; do
    [ -e "$e" ] || [ -L "$e" ] || continue
    n=${e##*/}
    t=$2/$n
    r=${3:+$3/}$n
    if [ -L "$t" ]; then say "$r"; return 91; fi
    if [ -d "$e" ] && [ -d "$t" ]; then merge "$e" "$t" "$r" || return
    elif [ -d "$t" ]; then say "$r"; return 94
    else mv -f -T -- "$e" "$t" 2>/dev/null || { say "$r"; return 95; }
    fi
  done
  return 0
}
publish() {
  case $dest in
    .) parent=.; name= ;;
    */*) parent=${dest%/*}; name=${dest##*/} ;;
    *) parent=.; name=$dest ;;
  esac
  walk create "$parent" || return
  if [ -z "$name" ]; then
    target=$ws
  else
    case $here in /) target=/$name ;; *) target=$here/$name ;; esac
    if [ -L "$target" ]; then say "$dest"; return 91; fi
    if [ ! -e "$target" ]; then
      chmod 755 -- "$st" 2>/dev/null && mv -T -- "$st" "$target" 2>/dev/null || { say "$dest"; return 95; }
      return 0
    fi
    [ -d "$target" ] || { say "$dest"; return 92; }
  fi
  shown=
  [ -n "$name" ] && shown=$dest
  conflicts "$st" "$target" "$shown" || return
  merge "$st" "$target" "$shown" || return
  gone
  return 0
}
if [ "$mode" = await ]; then
  printf 'ready\n'
  read -r verdict || verdict=
  [ "$verdict" = publish ] || { gone; exit 97; }
  mode=publish
fi
if [ "$mode" = publish ]; then
  publish; rc=$?
  [ "$rc" -eq 0 ] || gone
  exit "$rc"
fi
case $mode in extract | stream) ;; *) exit 2 ;; esac
walk check "$dest" || exit
mkdir -m 700 -- "$st" || exit 95
if [ "$mode" = stream ]; then
  (umask 0; exec tar -x -f - -C "$st")
  rc=$?
else
  printf '0\n'
  exec 3<&0
  (umask 0; exec tar -x -f - -C "$st") <&3 &
  pid=$!
  exec 3<&-
  n=0
  while [ ! -r "/proc/$pid/io" ]; do
    s=
    { read -r _ _ s _ < "/proc/$pid/stat"; } 2>/dev/null
    [ -n "$s" ] && [ "$s" != Z ] || break
    if [ ! -r "/proc/$$/io" ] || [ "$n" -ge 500 ]; then
      kill "$pid" 2>/dev/null
      wait "$pid"
      gone
      exit 99
    fi
    n=$((n + 1))
    sleep 0.02
  done
  while :; do
    s=
    { read -r _ _ s _ < "/proc/$pid/stat"; } 2>/dev/null
    [ -n "$s" ] && [ "$s" != Z ] || break
    { while read -r k v; do [ "$k" = rchar: ] && { printf '%s\n' "$v"; break; }; done < "/proc/$pid/io"; } 2>/dev/null
    sleep 0.02
  done
  wait "$pid"
  rc=$?
fi
if [ "$rc" -ne 0 ]; then
  # shellcheck disable=SC2046 # the fields of df's last line, split on purpose
  set -- $(df -P -k "$st" 2>/dev/null | tail -n 1)
  [ "${4:-1}" = 0 ] && say 'No space left on device'
  gone
  exit 98
fi
[ -f "$st/$marker" ] || { gone; exit 97; }
rm -f -- "$st/$marker"
publish; rc=$?
[ "$rc" -eq 0 ] || gone
exit "$rc"
