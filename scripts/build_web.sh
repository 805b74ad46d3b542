#!/usr/bin/env bash
# Build the playground page (web/playground/) into web/playground/dist/, which the edge
# serves at `/` (EDGE_PLAYGROUND_DIR). Vega, Vega-Lite, vega-embed and vega-interpreter
# come from npm through the committed lockfile (`npm ci`, no install scripts) and are
# bundled by esbuild into one file the page loads when an answer has a chart: nothing is
# fetched from a CDN or at run time. `npm ci` runs again only when the lockfile or the
# Node version changes (a stamp in node_modules records which).
# Without Node.js and npm this says how to get them and `make setup` goes on (the edge
# then answers `/` with 404; everything else works).
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
web="$here/web/playground"
out="$web/dist"

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  cat >&2 <<MSG
web: Node.js (>= 18) and npm are not installed; the playground page is not built:
web:   sudo apt-get install -y --no-install-recommends nodejs npm && make web
MSG
  exit 0
fi

cd "$web"
stamp=node_modules/.tandem-installed
want="$(sha256sum package-lock.json | cut -d' ' -f1) $(node --version)"
if [[ ! -f "$stamp" || "$(cat "$stamp")" != "$want" ]]; then
  npm ci --no-audit --no-fund --ignore-scripts --loglevel=error
  echo "$want" >"$stamp"
fi

# A fresh directory, swapped in whole: the edge never serves half a build.
rm -rf "$out.new"
mkdir -p "$out.new"
node_modules/.bin/esbuild vendor.js --bundle --minify --format=esm --target=es2020 \
  --legal-comments=eof --log-level=warning --outfile="$out.new/vendor.js"
cp index.html app.js format.js sse.js style.css favicon.svg "$out.new/"
rm -rf "$out.old"
if [[ -d "$out" ]]; then mv "$out" "$out.old"; fi
mv "$out.new" "$out"
rm -rf "$out.old"
echo "web: playground built into $out ($(du -sk "$out" | cut -f1) KB)"
