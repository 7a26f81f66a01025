#!/usr/bin/env bash
# Render the docs site offline into _docs/ (and README.md from nbs/index.ipynb), with smalldocs behind tools/quarto.
set -euo pipefail
cd "$(dirname "$0")/.."
export OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 PATH="$PWD/tools:$PWD/.venv/bin:$PATH"
export GAPRUNE_DATA="${GAPRUNE_DATA:-$(cd .. && pwd)/shared/data}"
rm -rf _proc _docs  # processed copies of renamed or removed notebooks would render again (and win their page name)
nbdev_docs
python3 tools/offline_math.py _docs   # KaTeX from the npm registry into the site: formulas render offline
python3 tools/check_math.py _docs     # every formula typeset (headless Chromium; skipped without it)
python3 tools/check_site.py _docs     # links resolve, pages show results, each page once, figures legible
echo "docs: $PWD/_docs/index.html"
