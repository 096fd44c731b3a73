#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Renders the tutorial MLP's report.html in headless Chromium and checks the
# page is self-contained and renders (a PNG screenshot, and the DOM after
# layout holds the mesh, the Gantt chart and the tables). Exit 77 (skipped)
# when no Chromium is installed. REPORTS_KEEP_PNG=FILE keeps the screenshot.
# Usage: html.sh TEST_REPORTS_EXE
set -u
exe=$1
browser=
for b in chromium chromium-browser google-chrome; do
  if command -v "$b" >/dev/null 2>&1; then browser=$b; break; fi
done
if [ -z "$browser" ]; then
  echo "chromium is not installed: test skipped"
  exit 77
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
. "$(dirname "$0")/../lib.sh"
"$exe" --write "$dir/out" >/dev/null || fail "cannot build the report"
page="$dir/out/report.html"
# Self-contained: no external resources, no scripts.
if grep -Eiq '(src|href)="(https?:)?//' "$page"; then fail "report.html references the network"; fi
if grep -qi '<script' "$page"; then fail "report.html contains a script"; fi
[ "$(grep -c '<svg' "$page")" -eq 3 ] || fail "expected 3 inline SVG figures"
flags="--headless --no-sandbox --disable-gpu --disable-background-networking
  --disable-component-update --disable-sync --no-first-run --hide-scrollbars"
timeout 120 "$browser" $flags --user-data-dir="$dir/profile" --screenshot="$dir/shot.png" \
  --window-size=1400,2000 "file://$page" >"$dir/log" 2>&1 || fail_with "$dir/log" "chromium failed"
[ -s "$dir/shot.png" ] || fail "no screenshot"
magic=$(od -An -tx1 -N8 "$dir/shot.png" | tr -d ' \n')
[ "$magic" = "89504e470d0a1a0a" ] || fail "the screenshot is not a PNG"
size=$(wc -c <"$dir/shot.png")
# A blank 1400x2000 page compresses to a few kB; the report is far larger.
[ "$size" -gt 30000 ] || fail "the screenshot looks blank ($size bytes)"
timeout 120 "$browser" $flags --user-data-dir="$dir/profile2" --dump-dom "file://$page" \
  >"$dir/dom.html" 2>"$dir/log2" || fail_with "$dir/log2" "chromium --dump-dom failed"
for want in "Cluster mesh" "Pipeline timeline" "layer2/dense/kernel" "sharded weight" \
            "ManualStageOption" "F3" "B3"; do
  grep -q "$want" "$dir/dom.html" || fail "rendered page lacks '$want'"
done
if [ -n "${REPORTS_KEEP_PNG:-}" ]; then cp "$dir/shot.png" "$REPORTS_KEEP_PNG"; fi
echo "ok: report.html rendered by $browser ($size bytes of PNG)"
