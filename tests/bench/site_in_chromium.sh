#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# site_in_chromium.sh BANYAN_BENCH: publish a site from a --quick run of
# the floor and render its index and a benchmark page in headless
# Chromium; both must load and show every plot. Exits 77 (skipped, with
# the reason) where Chromium is missing or cannot run.
set -u
bench=$1
dir=$(mktemp -d "${TMPDIR:-/tmp}/bench_site.XXXXXX")
trap 'rm -rf "$dir"' EXIT
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
    echo "SKIP: chromium is not installed (Debian: apt-get install chromium)"
    exit 77
fi
"$bench" run --quick -b '^floor\.' --engines 1 --results "$dir/results" \
    --machine testbox --commit 0123456789abcdef0123456789abcdef01234567 \
    > "$dir/run.txt" 2>&1 || { cat "$dir/run.txt"; exit 1; }
"$bench" publish --results "$dir/results" --html "$dir/html" \
    > "$dir/publish.txt" 2>&1 || { cat "$dir/publish.txt"; exit 1; }
for page in index.html floor.ZmqFloor.time_echo.html; do
    timeout 90 "$browser" --headless --no-sandbox --disable-gpu \
        --user-data-dir="$dir/profile" --virtual-time-budget=5000 \
        --dump-dom "file://$dir/html/$page" > "$dir/dom.html" 2> "$dir/err"
    if ! grep -q '<body' "$dir/dom.html"; then
        echo "SKIP: chromium cannot run here: $(tail -n 1 "$dir/err")"
        exit 77
    fi
    plots=$(sed -n 's/.*data-plots="\([0-9]*\)".*/\1/p' "$dir/dom.html")
    loaded=$(sed -n 's/.*data-plots-loaded="\([0-9]*\)".*/\1/p' "$dir/dom.html")
    if [ -z "$plots" ] || [ "$plots" -lt 1 ] || [ "$plots" != "$loaded" ]; then
        echo "FAIL: $page: ${loaded:-no} of ${plots:-no} plots loaded"
        exit 1
    fi
    echo "ok: $page shows $loaded plot(s)"
done
