#!/usr/bin/env bash
# The whole test suite: every notebook (nbdev_test, `#| slow` cells skipped) and tests/ (pytest).
# Usage: bash tools/test.sh [--slow]    (--slow also runs the slow experiment cells)
# Each notebook's and each test file's wall time is written to $GAPRUNE_TIMES (default: a temporary folder) and
# summarised at the end against the CI budget (tools/ci_times.py); `GAPRUNE_TIMES=results/ci bash tools/test.sh`
# refreshes the committed measure.
set -euo pipefail
cd "$(dirname "$0")/.."
export OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
export GAPRUNE_DATA="${GAPRUNE_DATA:-$(cd .. && pwd)/shared/data}"
flags=""; [ "${1:-}" = "--slow" ] && flags="--flags slow"
times="${GAPRUNE_TIMES:-$(mktemp -d)}"; mkdir -p "$times"
start=$(date +%s)
echo "== notebook cells: imports apart from other code (nbdev_docs runs import cells)"
.venv/bin/python tools/check_import_cells.py nbs/*.ipynb
echo "== notebooks (GAPRUNE_DATA=$GAPRUNE_DATA)"
t0=$(date +%s)
.venv/bin/nbdev_test --n_workers 2 --timing $flags 2>&1 | tee "$times/notebooks.log"
echo "notebooks wall: $(( $(date +%s) - t0 )) s" >> "$times/notebooks.log"
echo "== tests/"
t0=$(date +%s)
.venv/bin/python -m pytest -q -n 2 --dist load tests --junitxml "$times/pytest.xml" -o junit_family=xunit1  # two tests at a time (pytest-xdist), spread one by one: no long file holds a worker
echo "tests wall: $(( $(date +%s) - t0 )) s" >> "$times/notebooks.log"
echo "test command wall: $(( $(date +%s) - start )) s" >> "$times/notebooks.log"
.venv/bin/python tools/ci_times.py "$times"
