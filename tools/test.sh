#!/usr/bin/env bash
# The whole test suite: every notebook (nbdev_test, `#| slow` cells skipped) and tests/ (pytest).
# Usage: bash tools/test.sh [--slow]    (--slow also runs the slow experiment cells)
set -euo pipefail
cd "$(dirname "$0")/.."
export OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
export GAPRUNE_DATA="${GAPRUNE_DATA:-$(cd .. && pwd)/shared/data}"
flags=""; [ "${1:-}" = "--slow" ] && flags="--flags slow"
echo "== notebook cells: imports apart from other code (nbdev_docs runs import cells)"
.venv/bin/python tools/check_import_cells.py nbs/*.ipynb
echo "== notebooks (GAPRUNE_DATA=$GAPRUNE_DATA)"
.venv/bin/nbdev_test --n_workers 2 --timing $flags
echo "== tests/"
.venv/bin/python -m pytest -q tests
