"""Tests for `gaprune_nb.layer_drop` and `gaprune_nb.l3prune` beyond the notebooks: every drop kind on every
architecture on its own, wrappers, padding / batching invariance of the importance, and the error paths."""
import copy, json, shutil

import pytest
import torch
import transformers
from transformers import AutoModel, AutoModelForCausalLM

from gaprune_nb.core import Encoder
from gaprune_nb.arch import find_layers
from gaprune_nb.heads import head_layout, kept_heads, remove_heads
from gaprune_nb.fixtures import TINY_ARCHS, tiny_model
from gaprune_nb.l3prune import l3prune_configs, l3prune_losses, layer_embeddings, truncate
from gaprune_nb.layer_drop import (SUBLAYERS, drop_order, drop_plan, drop_sublayers, dropped_sublayers,
                                   effir_importance, restore_dropped)

transformers.logging.set_verbosity_error()
transformers.logging.disable_progress_bar()
TEXTS = ['Net revenue rose 12% in fiscal 2023.', 'What drives operating margin?', 'ok',
         'Cash flow from operations was negative this year.']
POST_LN = ('bert', 'mpnet')


def tiny(arch, n_layers=4, seed=0):
    m, tok = tiny_model(arch, seed)
    d = {k: v for k, v in m.config.to_dict().items() if k != 'layer_types'}
    torch.manual_seed(seed)
    tok.padding_side = 'right'
    return AutoModel.from_config(type(m.config).from_dict({**d, 'num_hidden_layers': n_layers})).eval(), tok


def n_params(m): return sum(p.numel() for p in m.parameters())


def embed(m, tok, arch):
    return Encoder(m, tok, pooling='cls' if arch in POST_LN else 'last').encode(TEXTS)


def silence(m, arch, kind, i, post_ln_skip):
    "Reference without layer_drop code: zero the branch's output projection, or hook the module to return its input."
    l = find_layers(m)[i]
    if kind == 'block' or (arch in POST_LN and post_ln_skip == 'identity'):
        mod, arg = (l.layer, 0) if kind == 'block' else (l.attn, 0) if kind == 'attn' else (l.layer.output, 1)
        def hook(_, args, kwargs, out):
            x = args[arg] if args else kwargs['hidden_states']
            return (x, *out[1:]) if isinstance(out, tuple) else x
        return mod.register_forward_hook(hook, with_kwargs=True)
    a = l.attn
    lin = l.down if kind == 'mlp' else a.output.dense if arch == 'bert' else a.attn.o if arch == 'mpnet' else a.o_proj
    with torch.no_grad():
        lin.weight.zero_()
        if lin.bias is not None: lin.bias.zero_()


CASES = [(arch, kind, skip) for arch in TINY_ARCHS for kind in ('attn', 'mlp', 'block')
         for skip in (('identity', 'norm') if arch in POST_LN and kind != 'block' else ('identity',))]


@pytest.mark.parametrize('arch,kind,skip', CASES)
def test_drop_matches_reference_and_round_trips(arch, kind, skip, tmp_path):
    m, tok = tiny(arch)
    ref_m = copy.deepcopy(m)
    silence(ref_m, arch, kind, 1, skip)
    ref = embed(ref_m, tok, arch)
    l, sub = find_layers(m)[1], SUBLAYERS[arch]
    count = lambda mods: sum(p.numel() for x in mods for p in x.parameters())
    if kind == 'block': want = count([l.layer])
    else:
        mods = [l.attn] if kind == 'attn' else [l.layer.get_submodule(p) for p in sub.mlp_parts]
        want = count(mods + [l.layer.get_submodule(n) for n in (sub.attn_norms if kind == 'attn' else sub.mlp_norms)])
        if skip == 'norm': want -= count([l.layer.get_submodule(sub.attn_sum if kind == 'attn' else sub.mlp_sum)])
    before = n_params(m)
    Encoder(m, tok).save_pretrained(tmp_path/'full')
    drop_sublayers(m, **{('blocks' if kind == 'block' else kind): [1]}, post_ln_skip=skip)
    assert before - n_params(m) == want > 0
    got = embed(m, tok, arch)
    torch.testing.assert_close(torch.tensor(got), torch.tensor(ref), atol=1e-5, rtol=0)
    Encoder(m, tok).save_pretrained(tmp_path/'dropped')
    if kind == 'block': back = restore_dropped(AutoModel.from_pretrained(tmp_path/'dropped'))  # fewer layers: a plain config says it
    else:
        with pytest.raises(ValueError, match='trust_remote_code=True'): AutoModel.from_pretrained(tmp_path/'dropped')  # refused, naming the fix
        back = AutoModel.from_pretrained(tmp_path/'dropped', trust_remote_code=True)
        old = tmp_path/'old'; shutil.copytree(tmp_path/'dropped', old)  # a folder of an older version: the base model type, the hook repairs it
        cj = json.loads((old/'config.json').read_text())
        (old/'config.json').write_text(json.dumps(dict(cj, model_type=m.config.model_type, auto_map={'AutoModel': cj['auto_map']['AutoModel']})))
        assert (embed(restore_dropped(AutoModel.from_pretrained(old)), tok, arch) == got).all()
    assert (embed(back, tok, arch) == got).all() and n_params(back) == n_params(m)
    assert back.config.num_hidden_layers == (3 if kind == 'block' else 4)
    size = lambda d: (tmp_path/d/'model.safetensors').stat().st_size
    assert size('dropped') < size('full')


def test_causal_lm_wrapper(tmp_path):
    "A `...ForCausalLM` is dropped through its base model; it saves and reloads with its LM head, logits unchanged."
    m, tok = tiny('qwen3')
    lm = AutoModelForCausalLM.from_config(m.config).eval()
    drop_sublayers(lm, attn=[0], mlp=[2], blocks=[3])
    ids = tok(TEXTS[:1], return_tensors='pt')
    logits = lm(**ids).logits
    lm.save_pretrained(tmp_path)
    back = restore_dropped(AutoModelForCausalLM.from_pretrained(tmp_path)).eval()
    assert back.config.num_hidden_layers == 3 and dropped_sublayers(back) == {'attn': [0], 'mlp': [2]}
    torch.testing.assert_close(back(**ids).logits, logits, atol=1e-6, rtol=0)


def test_drops_compose_and_renumber():
    "Sub-layer drops recorded before a block drop follow their layers to the new indices."
    m, tok = tiny('gemma3_text', n_layers=6)
    types = list(m.config.layer_types)
    drop_sublayers(m, attn=[4], mlp=[1, 5])
    drop_sublayers(m, blocks=[0, 2])
    assert dropped_sublayers(m) == {'attn': [2], 'mlp': [0, 3]}
    assert m.config.layer_types == [types[i] for i in (1, 3, 4, 5)] and m.config.num_hidden_layers == 4
    assert [l.self_attn.layer_idx for l in m.layers if hasattr(l.self_attn, 'layer_idx')] == [0, 1, 3]
    drop_sublayers(m, blocks=[0, 2])   # removes both layers that had a recorded drop of one kind
    assert dropped_sublayers(m) == {'attn': [], 'mlp': [1]}


def test_restore_is_idempotent_and_noop_without_drops():
    m, _ = tiny('llama')
    n0 = n_params(m)
    restore_dropped(m)
    assert n_params(m) == n0 and dropped_sublayers(m) == {'attn': [], 'mlp': []}
    drop_sublayers(m, mlp=[1])
    n1 = n_params(m)
    restore_dropped(m); drop_sublayers(m, mlp=[1])
    assert n_params(m) == n1


def test_errors():
    m, _ = tiny('bert')
    with pytest.raises(IndexError, match='out of range'): drop_sublayers(m, attn=[4])
    with pytest.raises(IndexError, match='out of range'): drop_sublayers(m, blocks=[-1])
    with pytest.raises(ValueError, match='keep at least one'): drop_sublayers(m, blocks=range(4))
    with pytest.raises(ValueError, match="'identity' or 'norm'"): drop_sublayers(m, mlp=[0], post_ln_skip='zero')
    drop_sublayers(m, mlp=[0], post_ln_skip='norm')
    with pytest.raises(ValueError, match='same'): drop_sublayers(m, attn=[0])
    with pytest.raises(ValueError, match='model_type'): drop_sublayers(torch.nn.Linear(2, 2), mlp=[0])
    with pytest.raises(ValueError, match='1..4'): truncate(m, 5)


@pytest.mark.parametrize('arch', ['bert', 'llama', 'gemma3_text'])
def test_importance_ignores_padding_and_batching(arch):
    "Token-weighted means over real tokens: the batch size and the padding side do not change the importance."
    m, tok = tiny(arch)
    enc = Encoder(m, tok)
    a = effir_importance(enc, TEXTS, batch_size=1).importance
    b = effir_importance(enc, TEXTS, batch_size=4).importance
    tok.padding_side = 'left'
    c = effir_importance(enc, TEXTS, batch_size=4).importance
    torch.testing.assert_close(torch.tensor(a.values), torch.tensor(b.values), atol=1e-5, rtol=0)
    torch.testing.assert_close(torch.tensor(a.values), torch.tensor(c.values), atol=1e-4, rtol=0)
    assert not m.training  # the model's own eval mode survives


def test_importance_and_plans_after_drop():
    m, tok = tiny('qwen2')
    enc = Encoder(m, tok)
    drop_sublayers(m, **drop_plan(effir_importance(enc, TEXTS), n_mlp=2))
    imp = effir_importance(enc, TEXTS)
    assert imp.query("kind == 'mlp'").importance.isna().sum() == 2
    assert len(drop_order(imp, 'mlp')) == 2
    with pytest.raises(ValueError, match='2 are left'): drop_plan(imp, n_mlp=3)
    with pytest.raises(ValueError, match='calibration'): effir_importance(enc, [])


def test_l3prune_losses_inputs():
    m, tok = tiny('llama')
    enc = Encoder(m, tok, pooling='mean')
    trip = dict(query=TEXTS, positive=TEXTS[::-1])
    losses = l3prune_losses(enc, trip, batch_size=2, in_batch=False)
    assert list(losses.n_layers) == [1, 2, 3, 4] and losses.loss.notna().all()
    assert layer_embeddings(enc, TEXTS).shape == (4, 4, 32)
    # without in-batch negatives the loss of a triplet does not depend on the batch it is in
    other = l3prune_losses(enc, trip, batch_size=3, in_batch=False)
    torch.testing.assert_close(torch.tensor(losses.loss.values), torch.tensor(other.loss.values), atol=1e-5, rtol=0)
    with pytest.raises(ValueError, match="'query' and 'positive'"): l3prune_losses(enc, dict(query=TEXTS))
    s = losses.loss.values
    assert l3prune_configs(losses) == {'small': 1 + int(s[:2].argmin()), 'large': 3 + int(s[2:].argmin())}


def test_restore_accepts_any_architecture_without_drops():
    "`Encoder.from_pretrained` may call `restore_dropped` on every model it loads, supported by layer_drop or not."
    from transformers import GPT2Config
    m = AutoModel.from_config(GPT2Config(n_layer=1, n_embd=8, n_head=2, vocab_size=10))
    assert restore_dropped(m) is m


@pytest.mark.parametrize('arch', TINY_ARCHS)
def test_slimmed_folder_serves_as_its_card_says(arch, tmp_path, monkeypatch):
    "Issue 33 item 4: `SentenceTransformer(folder)` on a slimmed folder is refused naming the fix, and the load line of the folder's README.md gives the same embeddings."
    import re
    from sentence_transformers import SentenceTransformer
    from gaprune_nb.slimming import remove_neurons
    m, tok = tiny(arch)
    enc = Encoder(m, tok, pooling='mean' if arch in ('bert', 'mpnet') else 'last')
    drop_sublayers(m, mlp=[0])
    remove_neurons(enc, {l.index: torch.arange(l.down.in_features) % 3 != 0 for l in find_layers(m) if 'down' in l.modules})
    remove_heads(enc, {1: torch.arange(head_layout(m)[0]) % 2 == 1})  # non-uniform head counts too
    if arch == 'bert': drop_sublayers(m, mlp=[1])  # an MLP dropped after its neurons were removed: its width goes with it
    enc.save_pretrained(tmp_path/'slim')
    loaded = Encoder.from_pretrained(tmp_path/'slim', pooling=enc.pooling)  # and our own loader
    assert kept_heads(loaded.model) == kept_heads(m) and [l.q.out_features for l in find_layers(loaded.model)] == [l.q.out_features for l in find_layers(m)]
    with pytest.raises(ValueError, match=r'trust_remote_code=True'):
        SentenceTransformer(str(tmp_path/'slim'), device='cpu')
    card = (tmp_path/'slim'/'README.md').read_text()
    code = re.search(r'```python\n(.*?)```', card, re.S).group(1)
    assert "SentenceTransformer('slim', trust_remote_code=True)" in code and 'MLP widths' in card and 'attention heads per layer' in card
    ns = {}; monkeypatch.chdir(tmp_path)  # the card names the folder by its name: run beside it
    exec(code, ns)
    texts = ['a short text', 'and a longer one, with more words']
    ids = tok(texts, return_tensors='pt', padding=True)
    on = {k: v.to(ns['model'].device) for k, v in ids.items()}  # sentence-transformers picks a GPU where there is one
    with torch.no_grad(): torch.testing.assert_close(ns['model'][0].auto_model(**on).last_hidden_state.cpu(), m(**ids).last_hidden_state, atol=1e-5, rtol=0)
    if arch == 'qwen2': return  # the tiny qwen2 tokenizer tokenizes differently once saved and reloaded (dense too): the model is compared above
    torch.testing.assert_close(torch.tensor(ns['model'].encode(texts)), torch.nn.functional.normalize(torch.as_tensor(enc.encode(texts)), dim=-1), atol=1e-5, rtol=0)
