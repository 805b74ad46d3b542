#!/usr/bin/env bash
# Build the edge proxy: nginx from Debian's pinned source tarballs, into the virtualenv.
#
# The edge refuses a tenant's flood before Python sees it (see infra/edge/). nginx is
# built, not downloaded as a binary: the orig tarballs below stay in Debian's pool for the
# whole release (security revisions only patch them), while a pinned binary .deb does not.
# PCRE2 is compiled in statically (nginx's `return` needs the rewrite module, which needs
# it). HTTP/2 and the gRPC proxy are in; gzip, SSI and basic auth (libcrypt) are out: the
# edge terminates plaintext HTTP/2 on a private network (TLS belongs to the ingress).
set -euo pipefail

NGINX_VERSION=1.26.3
NGINX_SHA256=69ee2b237744036e61d24b836668aad3040dda461fe6f570f1787eab570c75aa
PCRE2_VERSION=10.46
PCRE2_SHA256=8d28d7f2c3b970c3a4bf3776bcbb5adfc923183ce74bc8df1ebaad8c1985bd07
POOL=http://deb.debian.org/debian/pool/main
VENV=${1:-.venv}
TARGET="$VENV/bin/tandem-nginx"
STAMP="$TARGET.version"
want="nginx $NGINX_VERSION pcre2 $PCRE2_VERSION"

if [[ -x "$TARGET" && -f "$STAMP" && "$(cat "$STAMP")" == "$want" ]]; then
  echo "edge: $want already built ($TARGET)"
  exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fetch() {  # url sha256 file
  curl -fsSL --retry 3 -o "$work/$3" "$1"
  echo "$2  $work/$3" | sha256sum -c --quiet -
  tar -xzf "$work/$3" -C "$work"
}
fetch "$POOL/n/nginx/nginx_${NGINX_VERSION}.orig.tar.gz" "$NGINX_SHA256" nginx.tar.gz
fetch "$POOL/p/pcre2/pcre2_${PCRE2_VERSION}.orig.tar.gz" "$PCRE2_SHA256" pcre2.tar.gz
cd "$work/nginx-$NGINX_VERSION"
# Paths are given at run time (-p, -c); the prefix only names defaults never used.
./configure --prefix=/nonexistent --with-http_v2_module --with-pcre="$work/pcre2-$PCRE2_VERSION" \
  --without-http_gzip_module --without-http_ssi_module --without-http_auth_basic_module \
  --without-http_fastcgi_module --without-http_uwsgi_module --without-http_scgi_module \
  --without-http_memcached_module --without-mail_pop3_module --without-mail_imap_module \
  --without-mail_smtp_module >"$work/configure.log" 2>&1 || { cat "$work/configure.log" >&2; exit 1; }
make -j"$(nproc)" >"$work/build.log" 2>&1 || { tail -40 "$work/build.log" >&2; exit 1; }
cd - >/dev/null
install -m 755 "$work/nginx-$NGINX_VERSION/objs/nginx" "$TARGET.new"
mv "$TARGET.new" "$TARGET"
echo "$want" >"$STAMP"
echo "edge: built $want into $TARGET"
