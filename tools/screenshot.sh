#!/usr/bin/env bash
# Screenshot a rendered docs page with headless Chromium: bash tools/screenshot.sh _docs/core.html out.png [height]
set -euo pipefail
page=$(realpath "$1"); out=$(realpath -m "$2"); h=${3:-2400}
chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking \
  --disable-component-update --disable-sync --user-data-dir="$(mktemp -d)" --hide-scrollbars \
  --window-size=1280,"$h" --screenshot="$out" "file://$page" 2>/dev/null
echo "$out"
