"LLM embedders end to end through the `gaprune` command, as users run it: a Gemma3 bidirectional embedder with a sentence-transformers head (Dense layers, prompts), Qwen2 / Qwen3 decoders with last-token pooling, and the real SmolLM2-135M decoder on the CI-sized suite."
import json, os

import pytest
import torch
from torch import nn

from conftest import gaprune as _gaprune
from gaprune_nb.core import Encoder
from gaprune_nb.arch import mlp_linears
from gaprune_nb.fixtures import FixtureMissing, smollm2_path, tiny_model

PROMPTS = {'query': 'task: search result | query: ', 'document': 'title: none | text: ', 'classification': 'task: classify | '}
TEXTS = ['a bond is a loan to an issuer', 'what is an ester?', 'net revenue rose 4% in 2023']


def gaprune(*args): return _gaprune(*args, env=dict(os.environ))  # with the data folder of $GAPRUNE_DATA


def st_folder(arch, path):
    "A sentence-transformers folder: tiny random `arch`, pooling, Dense -> Dense -> Normalize, three prompts."
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Dense, Normalize, Pooling, Transformer
    m, tok = tiny_model(arch)
    if arch == 'gemma3_text': m.config.use_bidirectional_attention = True  # EmbeddingGemma's attention
    m.save_pretrained(path/'base'); tok.save_pretrained(path/'base')
    torch.manual_seed(0)
    pooling = 'mean' if arch == 'gemma3_text' else 'lasttoken'
    st = SentenceTransformer(modules=[Transformer(str(path/'base')), Pooling(32, pooling), Dense(32, 24),
                                      Dense(24, 16, activation_function=nn.Identity()), Normalize()], prompts=PROMPTS, device='cpu')
    st.save(str(path/'st'))
    return path/'st'


@pytest.mark.parametrize('arch', ['gemma3_text', 'qwen2', 'qwen3'])
def test_llm_embedder_prune_save_reload_evaluate(tmp_path, arch):
    "gaprune run (OBD-K-FAC statistics, tiny suite) -> the folder reloads in HF and sentence-transformers, head and prompts kept."
    from sentence_transformers import SentenceTransformer
    from transformers import AutoModel
    src = st_folder(arch, tmp_path)
    dense = SentenceTransformer(str(src), device='cpu')
    enc0 = Encoder.from_pretrained(src)
    assert torch.allclose(torch.as_tensor(enc0.encode(TEXTS, 'query')), torch.as_tensor(dense.encode(TEXTS, prompt_name='query')), atol=1e-5)
    out = tmp_path/'run'
    r = gaprune('run', '--model', src, '--method', 'obd-kfac', '--n-calib', 4, '--pool', 40, '--limit', 'tiny', '--out', out)
    assert r.returncode == 0, r.stderr[-3000:]
    rep = json.loads((out/'gaprune_report.json').read_text())
    assert 'evaluation' in rep and abs(rep['sparsity'] - 0.5) < 1e-6
    st = SentenceTransformer(str(out), device='cpu')
    assert st.prompts == dense.prompts and [type(m).__name__ for m in st] == ['Transformer', 'Pooling', 'Dense', 'Dense', 'Normalize']
    enc = Encoder.from_pretrained(out)
    for kind in ('query', 'document'):
        assert torch.allclose(torch.as_tensor(enc.encode(TEXTS, kind)), torch.as_tensor(st.encode(TEXTS, prompt_name=kind)), atol=1e-5)
    hf = AutoModel.from_pretrained(out)  # the bare transformer, pruned: half its MLP weights are zero
    zeros = sum(int((l.weight == 0).sum()) for l in mlp_linears(hf).values())
    assert zeros == sum(l.weight.numel() for l in mlp_linears(hf).values()) // 2


def test_smollm2_prune_last_token(tmp_path):
    "The real SmolLM2-135M decoder is pruned by the command with last-token pooling and reloads as it was saved (the evaluation"
    " of decoders through `gaprune run` is tested above on the tiny Qwen and Gemma embedders: the same code, in seconds)."
    try: src = smollm2_path()
    except FixtureMissing as e: pytest.skip(str(e))
    out = tmp_path/'run'
    r = gaprune('prune', '--model', src, '--pooling', 'last', '--n-calib', 8, '--pool', 64, '--out', out)
    assert r.returncode == 0, r.stderr[-3000:]
    rep = json.loads((out/'gaprune_report.json').read_text())
    assert rep['encoder']['pooling'] == 'last' and rep['method'] == 'wanda-row' and abs(rep['sparsity'] - 0.5) < 1e-3
    enc = Encoder.from_pretrained(out)
    assert enc.pooling == 'last'
    zeros = sum(int((l.weight == 0).sum()) for l in mlp_linears(enc).values())
    assert zeros == sum(l.weight.numel() for l in mlp_linears(enc).values()) // 2 and enc.encode(TEXTS).shape[0] == len(TEXTS)
