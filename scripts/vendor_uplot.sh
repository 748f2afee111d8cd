#!/usr/bin/env bash
# Refresh the vendored uPlot (the dashboard's charts) from its npm package:
#   scripts/vendor_uplot.sh [version]        (default: the version in web/static/vendor/uplot/VERSION)
# It packs uplot@<version> with npm, checks the tarball's integrity against the registry's, and copies
# the minified IIFE build, its stylesheet and the licence into web/static/vendor/uplot/. The server
# never fetches anything at run time: these files ship in the wheel.
set -euo pipefail
cd "$(dirname "$0")/.."
dest=web/static/vendor/uplot
version="${1:-$(cat "$dest/VERSION" 2>/dev/null || echo latest)}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
( cd "$work" && npm pack --silent "uplot@$version" > name.txt )
tarball="$work/$(tail -n 1 "$work/name.txt")"
expected="$(npm view "uplot@$version" dist.integrity)"
actual="sha512-$(openssl dgst -sha512 -binary "$tarball" | base64 -w0)"
if [ "$expected" != "$actual" ]; then
  echo "vendor_uplot: integrity mismatch for uplot@$version ($actual != $expected)" >&2
  exit 1
fi
tar -xzf "$tarball" -C "$work"
mkdir -p "$dest"
cp "$work/package/dist/uPlot.iife.min.js" "$work/package/dist/uPlot.min.css" "$dest/"
cp "$work/package/LICENSE" "$dest/LICENSE.txt"
node -p "require('$work/package/package.json').version" > "$dest/VERSION"
echo "vendored uplot $(cat "$dest/VERSION") into $dest"
