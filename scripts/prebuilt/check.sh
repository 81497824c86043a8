#!/usr/bin/env bash
# Checks that prebuilt binaries are self-contained: every NEEDED library is a part of the C
# library (libc, libm, libpthread, libdl, the loader), no GLIBC_ symbol version is above
# ANVIA_GLIBC_MAX (2.31: Debian 11, Ubuntu 20.04, RHEL 8 has 2.28), no symbol is left for
# another library to provide (undefined symbols are glibc's, or N-API's and libuv's, which
# Node provides), and only the module's entry points are exported. Prints the highest
# GLIBC version of each. readelf reads every architecture, so arm64 is checked on x86_64.
#   check.sh FILE...   (default: .state/prebuilt/out/linux-*/anvia_sandbox.napi.node)
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
max="${ANVIA_GLIBC_MAX:-2.31}"
[ $# -gt 0 ] || set -- "$repo"/.state/prebuilt/out/linux-*/anvia_sandbox.napi.node
allowed='^(libc\.so\.6|libm\.so\.6|libpthread\.so\.0|libdl\.so\.2|ld-linux-x86-64\.so\.2|ld-linux-aarch64\.so\.1)$'
fail=0
for f in "$@"; do
  [ -f "$f" ] || { echo "check: $f: missing" >&2; fail=1; continue; }
  machine="$(readelf -h "$f" | awk -F: '/Machine:/ {gsub(/^ +/, "", $2); print $2}')"
  needed="$(readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')"
  bad_needed="$(grep -Ev "$allowed" <<<"$needed" || true)"
  syms="$(readelf --dyn-syms -W "$f" | awk 'NR > 3 && $8 != "" {print $5, $7, $8}')"
  glibc_max="$(grep -o 'GLIBC_[0-9.]*' <<<"$syms" | sed 's/GLIBC_//' | sort -uV | tail -1)"
  # Undefined and unversioned: must be Node's (N-API, libuv); weak ones are optional hooks.
  stray="$(awk '$2 == "UND" && $3 !~ /@/ && $1 != "WEAK" {print $3}' <<<"$syms" | grep -Ev '^(napi_|node_api_|uv_)' || true)"
  exported="$(awk '$2 != "UND" && $1 != "LOCAL" {print $3}' <<<"$syms" | sed 's/@.*//' | sort -u | tr '\n' ' ')"
  printf '%s: %s, %s bytes\n  NEEDED: %s\n  highest GLIBC_: %s (limit %s)\n  exported: %s\n' \
    "$f" "$machine" "$(stat -c %s "$f")" "$(tr '\n' ' ' <<<"$needed")" "${glibc_max:-none}" "$max" "$exported"
  if [ -n "$bad_needed" ]; then echo "  FAIL: needs libraries outside the C library: $(tr '\n' ' ' <<<"$bad_needed")"; fail=1; fi
  if [ -n "$glibc_max" ] && [ "$(printf '%s\n%s\n' "$glibc_max" "$max" | sort -V | tail -1)" != "$max" ]; then
    echo "  FAIL: GLIBC_$glibc_max is above GLIBC_$max:"
    grep "GLIBC_$glibc_max" <<<"$syms" | awk '{print "    " $3}'
    fail=1
  fi
  if [ -n "$stray" ]; then echo "  FAIL: undefined symbols no library provides: $(head -20 <<<"$stray" | tr '\n' ' ')"; fail=1; fi
  if [ "$exported" != "napi_register_module_v1 node_api_module_get_api_version_v1 " ]; then
    echo "  FAIL: exports more than the module entry points"; fail=1
  fi
done
[ "$fail" = 0 ] && echo "check: ok" || { echo "check: FAILED" >&2; exit 1; }
