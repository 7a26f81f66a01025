"""Data-parallel gradient statistics over 2 CPU processes (torch.distributed, gloo): equal to one process, and resumable
after an interruption. The same entry point serves `torchrun` / `accelerate launch` (tested through the CLI too)."""
import os, socket, subprocess, sys
from pathlib import Path

import pytest
import torch
import torch.multiprocessing as mp
from datasets import Dataset

from gaprune_nb.arch import mlp_linears
from gaprune_nb.core import Encoder
from gaprune_nb.fisher import STAT_FIELDS, GradientStats, gradient_statistics
from gaprune_nb.fixtures import tiny_model

T = ["what is a bond", "define the equity risk premium", "how are dividends taxed", "ebitda", "a bond is a loan",
     "the extra return over the risk free rate", "qualified dividends are taxed at capital gains rates",
     "earnings before interest", "the weather is nice today", "cats sleep", "paris has many museums", "bread"]
GEN = dict(query=T[:4] * 3, positive=T[4:8] * 3, negative=T[8:] * 3)
DOM = dict(query=T[1:4] * 3, positive=T[5:8] * 3, negative=T[9:] * 3)
KW = dict(batch_size=2, domain_name='toy', show_progress=False, in_batch=True, accum_dtype=torch.float64)


class Stop(Exception): pass


def _free_port() -> int:
    with socket.socket() as s: s.bind(('127.0.0.1', 0)); return s.getsockname()[1]


def _worker(rank, world, port, out, ckpt, stop_after, groups=0):
    import torch.distributed as dist
    torch.set_num_threads(1)
    dist.init_process_group('gloo', init_method=f'tcp://127.0.0.1:{port}', rank=rank, world_size=world)
    try:
        enc = Encoder(*tiny_model('bert', seed=2))
        def on_step(step):
            if stop_after and step >= stop_after: raise Stop()
        try:
            if groups:  # one pass per group of matrices, each group on disk in `ckpt` (shared by the processes)
                from gaprune_nb.stat_groups import grouped_statistics
                st = grouped_statistics(enc, Dataset.from_dict(GEN), Dataset.from_dict(DOM), ckpt, groups,
                                        checkpoint_every=1, on_step=on_step, **KW)
            else: st = gradient_statistics(enc, Dataset.from_dict(GEN), Dataset.from_dict(DOM), checkpoint_dir=ckpt,
                                           checkpoint_every=1, on_step=on_step, **KW)
        except Stop: return
        if rank == 0: st.save(out)
    finally: dist.destroy_process_group()


def _spawn(tmp, name, ckpt=None, stop_after=None, groups=0):
    mp.spawn(_worker, args=(2, _free_port(), str(tmp/name), ckpt, stop_after, groups), nprocs=2, join=True)


def _close(a:GradientStats, b:GradientStats, rel=1e-6):
    for f in STAT_FIELDS:
        for k, x in getattr(a, f).items():
            y = getattr(b, f)[k]
            assert (x - y).abs().max() <= rel * y.abs().max() + 1e-12, (f, k)


@pytest.fixture(scope='module')
def single():
    enc = Encoder(*tiny_model('bert', seed=2))
    return gradient_statistics(enc, Dataset.from_dict(GEN), Dataset.from_dict(DOM), **KW)


def test_two_processes_equal_one(tmp_path, single):
    _spawn(tmp_path, 'dist')
    two = GradientStats.load(tmp_path/'dist')
    _close(two, single)
    assert all(two.manifest[k] == v for k, v in single.manifest.items())  # the same identity: the world size is not in it


def test_two_processes_resume(tmp_path, single):
    ckpt = str(tmp_path/'ckpt')
    _spawn(tmp_path, 'never', ckpt, stop_after=3)          # both processes stop after a few steps, checkpoints kept
    assert not (tmp_path/'never').exists() and sorted(os.listdir(ckpt)) == ['rank0-of-2', 'rank1-of-2']
    _spawn(tmp_path, 'resumed', ckpt)                      # the same call again: each process resumes its own steps
    _close(GradientStats.load(tmp_path/'resumed'), single)


def test_two_processes_in_groups_of_matrices(tmp_path, single):
    "`grouped_statistics` under 2 processes: data-parallel inside each group, one writer, resumable: the one-process statistics."
    ckpt = str(tmp_path/'groups')
    _spawn(tmp_path, 'never', ckpt, stop_after=3, groups=2)   # stopped inside the first group
    _spawn(tmp_path, 'grouped', ckpt, groups=2)
    _close(GradientStats.load(tmp_path/'grouped'), single)
    assert len(list((tmp_path/'grouped').glob('stats-*-of-00002.safetensors'))) == 2


def test_torchrun_prune(tmp_path, bert, data):
    "`torchrun --nproc_per_node 2 $(which gaprune) prune ...` (tiny BERT, tiny data): one folder written, the same mask as one process."
    env = {**os.environ, 'OMP_NUM_THREADS': '1'}
    args = ['prune', '--model', str(bert), '--data', str(data), '--method', 'fisher-dom', '--sparsity', '0.5', '--n-calib', '8',
            '--pool', '0', '--batch-size', '2']
    gaprune = str(Path(sys.executable).parent/'gaprune')  # the console script (a Python file torchrun can launch)
    one = subprocess.run([gaprune, *args, '--out', str(tmp_path/'one')], env=env,
                         capture_output=True, text=True)
    assert one.returncode == 0, one.stderr[-2000:]
    two = subprocess.run([sys.executable, '-m', 'torch.distributed.run', '--nproc_per_node', '2', '--master_port',
                          str(_free_port()), gaprune, *args, '--out', str(tmp_path/'two')], env=env,
                         capture_output=True, text=True)
    assert two.returncode == 0, two.stderr[-2000:]
    from gaprune_nb.masks import load_mask
    a, b = load_mask(tmp_path/'one'/'mask.safetensors'), load_mask(tmp_path/'two'/'mask.safetensors')
    differ = sum(int((a[k] != b[k]).sum()) for k in a) / sum(a[k].numel() for k in a)
    assert differ < 1e-4, differ  # float sums in another order may swap weights tied at the threshold, nothing more


def _calib_worker(rank, world, port, out):
    import torch.distributed as dist
    from gaprune_nb.scoring import activation_norms
    from gaprune_nb.sparsegpt import input_hessians
    from gaprune_nb.arch import mlp_linears
    torch.set_num_threads(1)
    dist.init_process_group('gloo', init_method=f'tcp://127.0.0.1:{port}', rank=rank, world_size=world)
    try:
        enc = Encoder(*tiny_model('bert', seed=2))
        norms = activation_norms(enc, Dataset.from_dict(DOM), batch_size=2)
        hess = input_hessians(enc, Dataset.from_dict(DOM), list(mlp_linears(enc)), batch_size=2)
        if rank == 0: torch.save(dict(norms=dict(norms), hess=hess), out)
    finally: dist.destroy_process_group()


def test_activation_norms_and_hessians_two_processes_equal_one(tmp_path):
    "Wanda's activation norms and SparseGPT's input Hessians, each process on its share of the batches: equal to one process."
    from gaprune_nb.scoring import activation_norms
    from gaprune_nb.sparsegpt import input_hessians
    mp.spawn(_calib_worker, args=(2, _free_port(), str(tmp_path/'two.pt')), nprocs=2, join=True)
    two = torch.load(tmp_path/'two.pt')
    enc = Encoder(*tiny_model('bert', seed=2))
    one = dict(norms=activation_norms(enc, Dataset.from_dict(DOM), batch_size=2),
               hess=input_hessians(enc, Dataset.from_dict(DOM), list(mlp_linears(enc)), batch_size=2))
    for part in ('norms', 'hess'):
        for k, y in one[part].items():
            x = two[part][k]
            assert (x - y).abs().max() <= 1e-6 * y.abs().max() + 1e-12, (part, k)
