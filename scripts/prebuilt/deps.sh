#!/usr/bin/env bash
# Runs inside the bullseye build root (see build.sh): builds OpenSSL, libcurl, libarchive
# and jansson as static, position-independent libraries for one architecture, from
# Debian's bookworm source packages (fetched and patched by build.sh), into
# /opt/anvia/deps/<arch>-<key>. <key> hashes the source versions and this recipe, so a new
# Debian upload (a security fix) or a changed recipe builds again; otherwise nothing runs.
#   deps.sh x86_64|aarch64 KEY "openssl=V curl=V libarchive=V jansson=V"
set -euo pipefail
shopt -s inherit_errexit
arch="$1" key="$2" versions="$3"
prefix="/opt/anvia/deps/$arch-$key"
[ -f "$prefix/.ready" ] && { echo "$prefix"; exit 0; }

case "$arch" in
  x86_64) host=x86_64-linux-gnu; ossl_target=linux-x86_64; cross=() ;;
  aarch64) host=aarch64-linux-gnu; ossl_target=linux-aarch64; cross=(--host=aarch64-linux-gnu) ;;
  *) echo "deps.sh: unknown arch $arch" >&2; exit 2 ;;
esac
export CC="$host-gcc" AR="$host-ar" RANLIB="$host-ranlib" STRIP="$host-strip"
export CFLAGS="-O2 -fPIC -ffunction-sections -fdata-sections -fno-semantic-interposition"
export CPPFLAGS="-I$prefix/include" LDFLAGS="-L$prefix/lib"
# Only our own .pc files: nothing from the build root's (native) libraries.
export PKG_CONFIG_LIBDIR="$prefix/lib/pkgconfig" PKG_CONFIG_PATH=""
jobs="$(nproc)"
log() { printf '[prebuilt %s] %s\n' "$arch" "$*" >&2; }

rm -rf "$prefix" "/opt/anvia/build/$arch"
mkdir -p "$prefix" "/opt/anvia/build/$arch"
# Each library's configure and make output goes to its log; a failure prints the end of it.
logs="/opt/anvia/logs/$arch"
rm -rf "$logs"; mkdir -p "$logs"
failed() { echo "deps.sh: building $1 for $arch failed; the end of $logs/$1.log (in the build root):" >&2; tail -60 "$logs/$1.log" >&2; exit 1; }

# The sources, extracted and patched by build.sh: /opt/anvia/src/<package>-<version>/.
# Each is built out of a private copy, so the extracted tree stays clean for the other arch.
source_dir() {
  local dir="/opt/anvia/src/$1-$2" work="/opt/anvia/build/$arch/$1"
  [ -f "$dir/.anvia-extracted" ] || { echo "deps.sh: $dir is missing" >&2; exit 1; }
  cp -a "$dir" "$work"
  echo "$work"
}
ver_of() { local v; for v in $versions; do [ "${v%%=*}" = "$1" ] && { echo "${v#*=}"; return; }; done; echo "deps.sh: no version for $1" >&2; exit 2; }

# OpenSSL 3.0 (bookworm's): libraries only, no shared objects, no loadable modules or
# engines. OPENSSLDIR /etc/ssl: the system's CA directory on Debian, Ubuntu and Alpine
# (SSL_CERT_FILE / SSL_CERT_DIR override it anywhere; Docker TLS uses DOCKER_CERT_PATH/ca.pem).
log "openssl $(ver_of openssl)"
src="$(source_dir openssl "$(ver_of openssl)")"
(cd "$src" && unset CC AR RANLIB CFLAGS CPPFLAGS LDFLAGS && \
  ./Configure "$ossl_target" --prefix="$prefix" --libdir=lib --openssldir=/etc/ssl \
    ${cross:+--cross-compile-prefix=$host-} \
    no-shared no-module no-engine no-dso no-tests no-comp no-ssl3 no-dtls no-srp no-legacy \
    no-ui-console no-afalgeng no-capieng -fPIC -ffunction-sections -fdata-sections && \
  make -s -j"$jobs" build_libs && make -s install_dev) > "$logs/openssl.log" 2>&1 || failed openssl

# libcurl: HTTP/1.1 over TCP and unix sockets, TLS through the OpenSSL above; every other
# protocol, auth scheme and optional library off.
log "curl $(ver_of curl)"
src="$(source_dir curl "$(ver_of curl)")"
(cd "$src" && ./configure "${cross[@]}" --prefix="$prefix" --disable-shared --enable-static --with-pic \
    --with-openssl="$prefix" --without-gnutls --without-mbedtls --without-wolfssl --without-nss \
    --without-libpsl --without-libidn2 --without-brotli --without-zstd --without-zlib \
    --without-nghttp2 --without-nghttp3 --without-ngtcp2 --without-libssh2 --without-libssh \
    --without-librtmp --without-gssapi --without-libgsasl --without-ca-bundle --without-ca-path --with-ca-fallback \
    --disable-ldap --disable-ldaps --disable-rtsp --disable-dict --disable-telnet --disable-tftp \
    --disable-pop3 --disable-imap --disable-smb --disable-smtp --disable-gopher --disable-mqtt \
    --disable-ftp --disable-file --disable-manual --disable-ntlm --disable-ntlm-wb \
    --disable-kerberos-auth --disable-negotiate-auth --disable-aws --disable-alt-svc --disable-hsts \
    --disable-cookies --disable-doh --disable-mime --disable-netrc --disable-dateparse --disable-progress-meter \
    --disable-tls-srp --disable-websockets --enable-threaded-resolver --enable-unix-sockets --enable-symbol-hiding && \
  make -s -j"$jobs" -C lib && make -s -C lib install && make -s -C include install && make -s install-pkgconfigDATA) > "$logs/curl.log" 2>&1 || failed curl

# libarchive: the library only; no compressors, no crypto, no XML, no ACLs or xattrs.
# (The tar reader and writer are all the addon references; the linker keeps nothing else.)
log "libarchive $(ver_of libarchive)"
src="$(source_dir libarchive "$(ver_of libarchive)")"
(cd "$src" && ./configure "${cross[@]}" --prefix="$prefix" --disable-shared --enable-static --with-pic \
    --disable-bsdtar --disable-bsdcat --disable-bsdcpio --disable-acl --disable-xattr \
    --without-zlib --without-bz2lib --without-libb2 --without-iconv --without-lz4 --without-zstd \
    --without-lzma --without-lzo2 --without-cng --without-openssl --without-xml2 --without-expat \
    --without-mbedtls --without-nettle && \
  make -s -j"$jobs" libarchive.la && make -s install-libLTLIBRARIES install-includeHEADERS install-pkgconfigDATA) > "$logs/libarchive.log" 2>&1 || failed libarchive

log "jansson $(ver_of jansson)"
src="$(source_dir jansson "$(ver_of jansson)")"
# (Debian's jansson source has no configure script: dh runs autoreconf, and so do we.)
(cd "$src" && { [ -x configure ] || autoreconf -fi >/dev/null 2>&1; } && \
  ./configure "${cross[@]}" --prefix="$prefix" --disable-shared --enable-static --with-pic && \
  make -s -j"$jobs" -C src && make -s -C src install && make -s install-pkgconfigDATA) > "$logs/jansson.log" 2>&1 || failed jansson

rm -rf "/opt/anvia/build/$arch"
echo "$versions" > "$prefix/VERSIONS"
touch "$prefix/.ready"
echo "$prefix"
