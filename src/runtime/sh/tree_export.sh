#!/bin/sh
# tree_export.sh - run inside the sandbox by the addon (embedded in tree_export_sh.h by
# scripts/embed-sh.mjs; its comment lines are not sent).
#
# sh -c "$TREE_EXPORT_SH" anvia-export <workdir> <kind> [path...]: the selection as a
# tar stream on stdout. Exit 90: no workdir; 91: a symbolic link on the way (its path on
# stderr); 93: cannot enter; 94: not a directory (subtree) or not a regular file (files);
# 96: missing.
ws=$1 kind=$2
shift 2
cd -P -- "$ws" 2>/dev/null || exit 90
say() { printf '%s' "$1" >&2; }
links() {
  p=
  IFS=/
  set -f
  for c in $1; do
    p=${p:+$p/}$c
    if [ -L "$p" ]; then unset IFS; set +f; say "$p"; return 91; fi
    if [ ! -e "$p" ]; then unset IFS; set +f; say "$1"; return 96; fi
  done
  unset IFS
  set +f
  return 0
}
case $kind in
  workspace) exec tar -c -f - . ;;
  subtree)
    links "$1" || exit
    [ -d "$1" ] || { say "$1"; exit 94; }
    case $1 in */*) cd -P -- "${1%/*}" 2>/dev/null || exit 93; n=${1##*/} ;; *) n=$1 ;; esac
    exec tar -c -f - -- "$n" ;;
  files)
    for f; do
      links "$f" || exit
      [ -f "$f" ] || { say "$f"; exit 94; }
    done
    exec tar -c -f - -- "$@" ;;
esac
exit 2
