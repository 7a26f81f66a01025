"Devices, dtypes and memory: bf16 statistics accumulate in fp32, a run that cannot fit is refused before any work, and the GPU path (skipped without CUDA)."
import copy

import pytest
import torch

import gaprune_nb.saliency  # registers the OBD scorers
from gaprune_nb.core import Encoder
from gaprune_nb.arch import mlp_linears
from gaprune_nb.data import load_triplets
from gaprune_nb.methods import importance
from gaprune_nb.fisher import STAT_FIELDS, gradient_statistics
from gaprune_nb.fixtures import minilm_path, tiny_model
from gaprune_nb.options import SlimConfig
from gaprune_nb.memory import NotEnoughMemory
from gaprune_nb.pipeline import RunConfig, prune_run
from gaprune_nb.slim_pipeline import slim_run

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason='needs a CUDA device')


@pytest.fixture(scope='module')
def trip():
    return load_triplets('finance/fin_qa10k', limit=6)


def tiny(arch='llama', dtype=torch.float32, device='cpu'):
    m, tok = tiny_model(arch)
    return Encoder(m.to(device=device, dtype=dtype), tok, pooling='last', max_length=48)


def close(a, b): return float((a - b).norm() / b.norm().clamp_min(1e-30))


def test_bf16_statistics_accumulate_in_fp32(trip):
    "A bf16 model's statistics are fp32 and close to the fp32 model's (bf16 forward/backward, fp32 products and sums)."
    f32 = gradient_statistics(tiny(), trip, trip, batch_size=3, fields=('fisher_gen', 'fisher_dom'), show_progress=False)
    b16 = gradient_statistics(tiny(dtype=torch.bfloat16), trip, trip, batch_size=3, fields=('fisher_gen', 'fisher_dom'),
                              show_progress=False)
    for k in f32.names:
        assert b16.fisher_dom[k].dtype == torch.float32
        assert close(b16.fisher_dom[k], f32.fisher_dom[k]) < 0.1, k


def test_fields_change_nothing_but_memory(trip):
    "Asking for two fields gives those two exactly as the seven-field run does; the others are not kept."
    enc = tiny()
    full = gradient_statistics(enc, trip, trip, batch_size=3, show_progress=False)
    two = gradient_statistics(enc, trip, trip, batch_size=3, fields=('fisher_gen', 'fisher_dom'), show_progress=False)
    assert two.fields == ('fisher_gen', 'fisher_dom') and full.fields == STAT_FIELDS
    for k in full.names:
        assert torch.equal(two.fisher_gen[k], full.fisher_gen[k]) and torch.equal(two.fisher_dom[k], full.fisher_dom[k])
    assert torch.equal(importance('obd-kfac', enc, stats=two)[k], importance('obd-kfac', enc, stats=full)[k])
    with pytest.raises(ValueError, match="Method 'gaprune-paper' needs the statistics cross"):
        importance('gaprune-paper', enc, stats=two)


def test_refused_before_any_work(tmp_path, monkeypatch):
    "With too little free memory, prune_run refuses after loading the model, naming the knob, and writes nothing."
    import psutil
    class Tight:  # what psutil.virtual_memory() returns, with 1 MB free
        available = 2**20
    monkeypatch.setattr(psutil, 'virtual_memory', lambda: Tight())
    out = tmp_path/'run'
    with pytest.raises(NotEnoughMemory, match=r"needs about .* GB beyond the model .*--batch-size"):
        prune_run(RunConfig(method='obd-kfac', n_calib=4, pool=50), out=out, show_progress=False)
    assert not out.exists() and not list(tmp_path.iterdir())
    monkeypatch.setenv('GAPRUNE_NO_MEMORY_CHECK', '1')  # the documented way past the check
    prune_run(RunConfig(method='magnitude'), show_progress=False)


@cuda
def test_cuda_statistics_equal_cpu(trip):
    "The same statistics on the GPU as on the CPU (fp32), and a bf16 GPU run close to them."
    cpu = gradient_statistics(tiny(), trip, trip, batch_size=3, show_progress=False)
    gpu = gradient_statistics(tiny(device='cuda'), trip, trip, batch_size=3, show_progress=False)
    b16 = gradient_statistics(tiny(dtype=torch.bfloat16, device='cuda'), trip, trip, batch_size=3, show_progress=False)
    for k in cpu.names:
        assert gpu.fisher_dom[k].device.type == 'cuda'
        assert close(gpu.fisher_dom[k].cpu(), cpu.fisher_dom[k]) < 1e-4
        assert close(b16.fisher_dom[k].cpu(), cpu.fisher_dom[k]) < 0.1


@cuda
@pytest.mark.parametrize('method', ['obd-kfac', 'gaprune', 'sparsegpt'])
def test_cuda_prune_run(tmp_path, method):
    "prune_run on the GPU in bf16: the folder reloads on the CPU with the mask's zeros."
    enc, mask, rep = prune_run(RunConfig(method=method, n_calib=8, pool=100, device='cuda', dtype='bfloat16'),
                               out=tmp_path/'run', show_progress=False)
    assert next(enc.parameters()).device.type == 'cuda' and rep['config']['device'] == 'cuda'
    back = Encoder.from_pretrained(tmp_path/'run')
    for k, m in mask.items(): assert int((back.get_submodule(k).weight[~m.cpu()] != 0).sum()) == 0


@cuda
@pytest.mark.parametrize('recovery', ['contrastive', 'distill+contrastive'])
def test_cuda_slim_run(tmp_path, recovery):
    "Coarse-to-fine slimming on the GPU: gates, removal and fine-tuning (contrastive, or learning the dense model's embeddings too) run there; the folder reloads on the CPU."
    enc, rep = slim_run(SlimConfig(keep=0.7, gate_steps=3, finetune_steps=2, batch_size=4, recovery=recovery, device='cuda'), out=tmp_path/'slim',
                        show_progress=False)
    assert next(enc.parameters()).device.type == 'cuda' and rep['config']['recovery'] == recovery
    assert Encoder.from_pretrained(tmp_path/'slim').encode(['a question'], kind='query').shape[0] == 1


@cuda
def test_cuda_statistics_in_groups(tmp_path):
    "--stats-groups on the GPU: the groups' statistics are read back to the model's device, the mask is the one-pass mask."
    cfg = dict(method='obd-kfac', n_calib=8, pool=100, device='cuda')
    _, one, _ = prune_run(RunConfig(**cfg), out=tmp_path/'one', show_progress=False)
    _, grouped, _ = prune_run(RunConfig(**cfg, stats_groups=2), out=tmp_path/'grouped', show_progress=False)
    assert all(torch.equal(one[k], grouped[k]) for k in one)
