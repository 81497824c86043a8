#!/usr/bin/env bash
# Runs inside the bullseye build root (see build.sh): compiles the addon's C sources copied
# to /opt/anvia/addon/src for one architecture and links them with the static libraries
# from deps.sh into one self-contained anvia_sandbox.napi.node.
#   addon.sh x86_64|aarch64 DEPS_PREFIX OUT_FILE
set -euo pipefail
arch="$1" deps="$2" out="$3"
case "$arch" in
  x86_64) host=x86_64-linux-gnu ;;
  aarch64) host=aarch64-linux-gnu ;;
  *) echo "addon.sh: unknown arch $arch" >&2; exit 2 ;;
esac
cd /opt/anvia/addon
obj="/opt/anvia/addon/obj-$arch"
rm -rf "$obj"; mkdir -p "$obj" "$(dirname "$out")"

includes=(-I/opt/anvia/node-include -I"$deps/include")
# (No process substitution here: the build root has no /dev/fd.)
find src -type d -not -path 'src/agent*' | sort > "$obj/dirs"
find src -name '*.c' -not -path 'src/agent/*' | sort > "$obj/sources"
while IFS= read -r d; do includes+=("-I$d"); done < "$obj/dirs"
cflags=(-std=c11 -O2 -fvisibility=hidden -DNAPI_VERSION=8 -D_GNU_SOURCE -fPIC -ffunction-sections -fdata-sections
        -fno-semantic-interposition -Wall -Wno-unused-parameter "${includes[@]}")

# Compile (all cores), one object per source; the object's name keeps its folder.
jobs="$(nproc)" failed=0
compile() { "$host-gcc" "${cflags[@]}" -c "$1" -o "$obj/$(echo "$1" | tr / _).o"; }
while IFS= read -r src; do
  compile "$src" &
  if [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; then wait -n || failed=1; fi
done < "$obj/sources"
while [ "$(jobs -rp | wc -l)" -gt 0 ]; do wait -n || failed=1; done
[ "$failed" = 0 ] && [ "$(find "$obj" -name '*.o' | wc -l)" = "$(wc -l < "$obj/sources")" ] || { echo "addon.sh: some sources did not compile" >&2; exit 1; }

# Link: static libraries, libgcc folded in, only the module entry points exported, every
# symbol bound at load (-z now: a missing N-API function fails the require, not a call).
"$host-gcc" -shared -o "$out.tmp" "$obj"/*.o \
  -L"$deps/lib" -lcurl -larchive -ljansson -lssl -lcrypto \
  -static-libgcc -pthread -ldl -lm \
  -Wl,--version-script=/opt/anvia/exports.map -Wl,--gc-sections -Wl,--as-needed -Wl,-O1 \
  -Wl,-z,relro -Wl,-z,now -Wl,-z,noexecstack -Wl,--build-id
"$host-strip" --strip-unneeded "$out.tmp"
mv "$out.tmp" "$out"
