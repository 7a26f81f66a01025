"Tests for `gaprune_nb.retraining` beyond the notebook's: key forms, input forms, schedule, partial masks, loaders, devices."
import copy, math

import numpy as np
import pandas as pd
import pytest
import torch

from gaprune_nb.core import Encoder
from gaprune_nb.arch import mlp_linears
from gaprune_nb.data import load_triplets
from gaprune_nb.fixtures import tiny_model
from gaprune_nb.retraining import RetrainConfig, evaluate_triplets, merge_lora, retrain

TEXTS = ['What was net revenue in 2023?', 'Operating margin rose to 21%.', 'The board approved a dividend.']


@pytest.fixture(scope='module')
def train():
    return load_triplets('finance/fin_qa10k', limit=24)


def setup(arch='bert', seed=0, p=0.5):
    m, tok = tiny_model(arch, seed)
    enc = Encoder(m, tok, pooling='mean' if arch in ('bert', 'mpnet') else 'last', max_length=48)
    g = torch.Generator().manual_seed(seed)
    return enc, {k: torch.rand(l.weight.shape, generator=g) > p for k, l in mlp_linears(enc).items()}


def cfg(**kw):
    return RetrainConfig(**{'lr': 1e-3, 'batch_size': 8, 'progress': False, **kw})


def assert_kept(before, after, mask, moved=True):
    "Pruned weights exactly zero in `after`; kept ones moved (or not) relative to `before`."
    for k, m in mask.items():
        w0, w1 = before.get_submodule(k).weight, after.get_submodule(k).weight
        assert int((w1[~m] != 0).sum()) == 0, k
        changed = (w1[m] != w0[m]).float().mean().item()
        assert (changed > 0.99) if moved else (changed == 0), (k, changed)


def weights(enc):
    return {k: v.detach().clone() for k, v in enc.state_dict().items()}


def test_keys_on_bare_model_and_inplace(train):
    "Mask keys computed on `encoder.model` work too; `inplace=True` trains and returns the very same encoder."
    enc, mask = setup()
    before = copy.deepcopy(enc)
    bare = {k.removeprefix('model.'): v for k, v in mask.items()}
    out = retrain(enc, train, steps=2, mask=bare, config=cfg(method='full'), inplace=True)
    assert out is enc
    assert_kept(before, enc, mask)


@pytest.mark.parametrize('method', ['full', 'lora'])
def test_input_forms_agree(train, method):
    "A Dataset, a DataFrame, a dict of lists and a list of dicts are the same triplets: identical results."
    enc, mask = setup()
    rows = [dict(query=r['query'], positive=r['positive'], negative=r['negative']) for r in train]
    forms = [train, pd.DataFrame(rows), {c: train[c] for c in train.column_names}, rows]
    outs = [retrain(enc, f, steps=2, mask=mask, config=cfg(method=method)).encode(TEXTS) for f in forms]
    for o in outs[1:]: assert (o == outs[0]).all()


def test_schedule_and_history(train):
    "History has one entry per step; lr warms up linearly from 0 to its peak, then decays linearly towards 0."
    enc, _ = setup()
    hist, steps, peak = [], 10, 1e-3
    retrain(enc, train, steps=steps, config=cfg(method='full', lr=peak, warmup_ratio=0.2), history=hist)
    assert [h['step'] for h in hist] == list(range(steps))
    warm = math.ceil(0.2*steps)
    expect = [peak*s/warm if s < warm else peak*(steps - s)/(steps - warm) for s in range(steps)]
    assert [h['lr'] for h in hist] == pytest.approx(expect)
    assert all(h['grad_norm'] > 0 and math.isfinite(h['loss']) for h in hist)


def test_clipping_bounds_update(train):
    "With a tiny clip norm, the reported norm is the one before clipping, and the mask is kept."
    enc, mask = setup()
    hist = []
    out = retrain(enc, train, steps=2, mask=mask, config=cfg(method='full', max_grad_norm=1e-6), history=hist)
    assert hist[0]['grad_norm'] > 1e-6
    assert_kept(enc, out, mask)


def test_masked_module_outside_lora_targets(train):
    "LoRA on attention only: the masked MLP weights are frozen, so they stay zero and the kept ones do not move."
    enc, mask = setup()
    out = retrain(enc, train, steps=2, mask=mask, config=cfg(method='lora', targets='attn'))
    pruned = copy.deepcopy(enc)
    with torch.no_grad():
        for k, m in mask.items(): pruned.get_submodule(k).weight.mul_(m)
    assert_kept(pruned, out, mask, moved=False)
    q = out.get_submodule('model.encoder.layer.0.attention.self.query').weight
    assert (q != enc.get_submodule('model.encoder.layer.0.attention.self.query').weight).any()


def test_partial_mask_and_frozen_flags(train):
    "A mask on some modules only; `requires_grad` flags come back as they were (also for full fine-tuning)."
    enc, mask = setup()
    one = dict(list(mask.items())[:1])
    enc.model.embeddings.requires_grad_(False)
    flags = {n: p.requires_grad for n, p in enc.named_parameters()}
    for method in ('full', 'lora'):
        out = retrain(enc, train, steps=2, mask=one, config=cfg(method=method))
        assert_kept(enc, out, one)
        assert {n: p.requires_grad for n, p in out.named_parameters()} == flags


@pytest.mark.parametrize('arch', ['qwen3', 'gemma3_text', 'mpnet'])
def test_other_architectures(train, arch):
    "LoRA (masked delta) and full fine-tuning keep the mask on more architectures, and lower the training loss."
    enc, mask = setup(arch)
    pruned = copy.deepcopy(enc)
    with torch.no_grad():
        for k, m in mask.items(): pruned.get_submodule(k).weight.mul_(m)
    base = evaluate_triplets(pruned, train)['loss']
    for method, lr in (('full', 1e-3), ('lora', 1e-2)):
        out = retrain(enc, train, steps=6, mask=mask, config=cfg(method=method, lr=lr))
        assert_kept(enc, out, mask)
        assert evaluate_triplets(out, train)['loss'] < base, (arch, method)


def test_merge_lora_errors_and_unmerged_state(train):
    "`merge_lora` refuses a plain model; an unmerged LoRA encoder trains only adapter parameters."
    enc, mask = setup()
    with pytest.raises(ValueError, match='not a peft PeftModel'): merge_lora(enc)
    un = retrain(enc, train, steps=1, mask=mask, config=cfg(merge=False))
    from peft import PeftModel
    assert isinstance(un.model, PeftModel)
    merged = merge_lora(un, mask)
    assert type(merged.model) is type(enc.model)


def test_sentence_transformers_loads_retrained(train, tmp_path):
    "The saved folder of a retrained encoder loads with SentenceTransformer: same embeddings, pruned weights zero."
    from sentence_transformers import SentenceTransformer
    enc, mask = setup()
    out = retrain(enc, train, steps=2, mask=mask, config=cfg())
    out.save_pretrained(tmp_path)
    st = SentenceTransformer(str(tmp_path), device='cpu')
    assert st.encode(TEXTS) == pytest.approx(out.encode(TEXTS), abs=1e-5)
    for k, m in mask.items():
        assert int((st[0].auto_model.get_submodule(k.removeprefix('model.')).weight[~m] != 0).sum()) == 0


def test_bad_config_and_batches(train):
    with pytest.raises(ValueError, match='batch_size must be >= 1'): RetrainConfig(batch_size=0)
    with pytest.raises(ValueError, match='warmup_ratio'): RetrainConfig(warmup_ratio=2)
    with pytest.raises(ValueError, match='triplets is empty'): retrain(setup()[0], [], steps=1)
    with pytest.raises(ValueError, match='non-empty mask dict'): retrain(setup()[0], train, steps=1, mask=[1])
    dup = [dict(query=f'q{i}', positive='same', negative=f'n{i}') for i in range(4)]
    with pytest.raises(ValueError, match='without a repeated document'):
        retrain(setup()[0], dup, steps=1, config=cfg(batch_size=2))
    retrain(setup()[0], dup, steps=1, config=cfg(batch_size=2, no_duplicates=False))  # allowed when asked


@pytest.mark.skipif(not torch.cuda.is_available(), reason='needs a CUDA device')
@pytest.mark.parametrize('method', ['full', 'lora'])
def test_cuda(train, method):
    "Masks given on the CPU are moved to the model's device; the result is on that device with the mask kept."
    enc, mask = setup('llama')
    enc = enc.to('cuda')
    out = retrain(enc, train, steps=3, mask=mask, config=cfg(method=method))
    assert out.device.type == 'cuda'
    assert_kept(enc, out, {k: v.cuda() for k, v in mask.items()})


# --- recovery by distillation (issue 32 item 3) ---
from gaprune_nb.retraining import Teacher, distill_loss, sentence_embeddings, teacher_targets


def no_dropout(enc):
    for m in enc.modules():
        if isinstance(m, torch.nn.Dropout): m.p = 0.
    return enc


def test_distill_loss_is_sentence_transformers_mseloss(tmp_path):
    "`distill_loss` on our student embeddings equals sentence-transformers' `MSELoss` run by a `SentenceTransformer` on the same folder."
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.losses import MSELoss
    enc, _ = setup()
    teacher = torch.randn(len(TEXTS), enc.dim)
    enc.save_pretrained(tmp_path)
    st = SentenceTransformer(str(tmp_path), device='cpu').eval()
    ref = MSELoss(st)([st.tokenize(TEXTS)], teacher)
    with torch.no_grad(): ours = distill_loss(sentence_embeddings(enc.eval(), TEXTS), teacher)
    assert ours.item() == pytest.approx(ref.item(), rel=1e-5)
    assert float(distill_loss(teacher, teacher)) == 0


def test_self_distillation_keeps_model(train):
    "Distilling an unchanged model from itself: loss ~0 and weights ~unchanged, while a contrastive run moves them."
    enc = no_dropout(setup()[0])
    texts = list(train['query']) + list(train['positive'])
    teacher = teacher_targets(enc, texts)
    hist = []
    out = retrain(enc, None, steps=4, config=cfg(method='full', lr=2e-5, loss='distill'), teacher=teacher, history=hist)
    assert max(h['loss'] for h in hist) < 1e-6, hist  # float noise only (an MSE of 1e-6 is a cosine of ~0.9998)
    moved = lambda e: torch.cat([(a - b).abs().flatten() for a, b in zip(e.parameters(), enc.parameters())]).mean().item()
    contrastive = retrain(enc, train, steps=4, config=cfg(method='full', lr=2e-5))
    assert moved(out) < 0.1 * moved(contrastive), (moved(out), moved(contrastive))
    # embeddings: Adam takes steps of about lr even on float-noise gradients, so "unchanged" is relative to what a real
    # loss does in the same steps (an absolute 1e-4 held on one CPU and not on another)
    drift = lambda e: np.abs(np.asarray(e.encode(TEXTS)) - np.asarray(enc.encode(TEXTS))).max()
    assert drift(out) < 0.25 * drift(contrastive), (drift(out), drift(contrastive))


@pytest.mark.parametrize('method', ['full', 'lora'])
def test_perturbed_model_moves_back_to_teacher(train, method):
    "A perturbed copy distilled from the original: the loss falls and its embeddings get closer to the teacher's."
    enc = no_dropout(setup()[0])
    texts = list(train['query']) + list(train['positive']) + list(train['negative'])
    teacher = teacher_targets(enc, texts)
    bad = copy.deepcopy(enc)
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for p in bad.model.parameters(): p.add_(0.05 * torch.randn(p.shape, generator=g))
    gap = lambda e: distill_loss(torch.as_tensor(e.encode(teacher.texts)), teacher.embeddings).item()
    hist = []
    fixed = retrain(bad, None, steps=12, config=cfg(method=method, loss='distill', lr=1e-3 if method == 'full' else 1e-2), teacher=teacher, history=hist)
    assert sum(h['loss'] for h in hist[-3:]) < 0.6 * sum(h['loss'] for h in hist[:3]), [h['loss'] for h in hist]
    assert gap(fixed) < 0.6 * gap(bad), (gap(fixed), gap(bad))


def test_texts_only_recovery_and_mask(train):
    "Texts only: 'distill' needs no triplets and keeps the mask; the contrastive losses still need triplets; a teacher is required."
    enc, mask = setup()
    teacher = teacher_targets(enc, ['a note on revenue', 'the court ruled', 'a lab report', 'quarterly results'])
    out = retrain(enc, None, steps=3, mask=mask, config=cfg(method='full', loss='distill', batch_size=2), teacher=teacher)
    assert_kept(enc, out, mask)
    out = retrain(enc, None, steps=2, mask=mask, config=cfg(loss='distill', distill='cosine', batch_size=2), teacher=teacher)
    assert_kept(enc, out, mask)
    hist = []
    retrain(enc, train, steps=2, mask=mask, config=cfg(loss='distill+contrastive'), teacher=teacher, history=hist)
    assert {'contrastive', 'distill'} <= set(hist[0])
    with pytest.raises(ValueError, match="needs pairs or triplets"): retrain(enc, None, steps=1, config=cfg(loss='distill+contrastive'), teacher=teacher)
    with pytest.raises(ValueError, match="pass teacher=teacher_targets"): retrain(enc, train, steps=1, config=cfg(loss='distill'))
    with pytest.raises(ValueError, match="4 texts but 3"): Teacher(['a', 'b', 'c', 'd'], torch.zeros(3, 2))


def test_runconfig_retrain_steps_round_trips(tmp_path):
    "`RunConfig` with retrain_steps / recovery survives the report a run writes (`from_run`); an old report without them reads as no recovery."
    import json
    from dataclasses import asdict
    from gaprune_nb.options import RunConfig, SlimConfig
    cfg_ = RunConfig(method='magnitude', retrain_steps=7, recovery='distill')
    (tmp_path/'gaprune_report.json').write_text(json.dumps(dict(config=asdict(cfg_))))
    assert RunConfig.from_run(tmp_path) == cfg_
    old = {k: v for k, v in asdict(cfg_).items() if k not in ('retrain_steps', 'recovery')}
    (tmp_path/'gaprune_report.json').write_text(json.dumps(dict(config=old)))
    back = RunConfig.from_run(tmp_path)
    assert (back.retrain_steps, back.recovery) == (0, None)  # None: by the data's shape (triplets: contrastive, as before)
    s = SlimConfig(recovery='distill+contrastive')
    (tmp_path/'slim_report.json').write_text(json.dumps(dict(config=asdict(s))))
    assert SlimConfig.from_run(tmp_path) == s


def test_cli_prune_and_slim_with_recovery(bert, data, tmp_path):
    "`gaprune prune --retrain-steps --recovery distill` and `gaprune slim --recovery distill`: saved, settings recorded, mask kept, weights moved."
    from conftest import gaprune, prune_args
    from gaprune_nb.masks import load_mask
    from gaprune_nb.options import RunConfig, SlimConfig
    rec = tmp_path/'rec'
    r = gaprune(*prune_args(bert, data, rec, '--retrain-steps', 2, '--recovery', 'distill', method='magnitude'))
    assert r.returncode == 0, r.stderr[-2000:]
    assert 'teacher embeddings for the recovery (distill)' in r.stderr and 'recovery (lora, distill, 2 steps)' in r.stderr
    cfg_ = RunConfig.from_run(rec)
    assert (cfg_.retrain_steps, cfg_.recovery) == (2, 'distill')
    mask = load_mask(rec/'mask.safetensors')
    assert_kept(Encoder.from_pretrained(bert), Encoder.from_pretrained(rec), mask)  # magnitude keeps kept weights as they were: every one moved by the recovery, pruned ones zero
    r = gaprune('slim', '--model', bert, '--data', data, '--scorer', 'magnitude', '--keep', '0.5', '--finetune', 'full',
                '--finetune-steps', 2, '--batch-size', 4, '--recovery', 'distill+contrastive', '--no-eval', '--out', tmp_path/'slim')
    assert r.returncode == 0, r.stderr[-2000:]
    assert SlimConfig.from_run(tmp_path/'slim').recovery == 'distill+contrastive'
    assert 'fine-tune (full, distill+contrastive, 2 steps)' in r.stderr


def test_slim_general_triplets_fine_tunes_on_general_rows_too(bert, data, tmp_path, monkeypatch):
    "`gaprune slim --general-triplets 0.5`: the fine-tuning's rows are half general triplets (whole rows), recorded and read back."
    import json
    from conftest import gaprune, one_line_error
    from gaprune_nb import slim_pipeline
    from gaprune_nb.options import SlimConfig
    from gaprune_nb.sources import load_domain
    seen, real = {}, slim_pipeline.retrain
    def spy(enc, rows, *a, **kw):  # the rows the fine-tuning gets
        seen['rows'] = rows
        return real(enc, rows, *a, **kw)
    monkeypatch.setattr(slim_pipeline, 'retrain', spy)
    r = gaprune('slim', '--model', bert, '--data', data, '--scorer', 'magnitude', '--keep', '0.5', '--n-calib', 8, '--finetune-steps', 2, '--batch-size', 4,
                '--general-triplets', 0.5, '--speed-batch', 2, '--no-eval', '--out', tmp_path/'slim')
    assert r.returncode == 0, r.stderr[-2000:]
    general = {tuple(x.values()) for x in load_domain('general', root=data).data}
    rows = [tuple(x[c] for c in ('query', 'positive', 'negative')) for x in seen['rows']]
    assert len(rows) >= 8 and sum(x in general for x in rows) == round(len(rows) * 0.5)  # the domain's training rows, half replaced
    assert SlimConfig.from_run(tmp_path/'slim').general_triplets == 0.5
    assert 'general' in json.loads((tmp_path/'slim'/'slim_report.json').read_text())['data']  # the general side is recorded
    r = gaprune('slim', '--model', bert, '--data', data, '--general-triplets', 0.5, '--recovery', 'distill', '--out', tmp_path/'never')
    assert "recovery 'distill' has none" in one_line_error(r) and not (tmp_path/'never').exists()


def test_slim_general_calib_measures_importance_on_general_texts_too(bert, data, monkeypatch):
    "`SlimConfig(general_calib=0.5)`: half the texts neuron importance is measured on are general ones; the speed is still measured at the domain's length."
    from gaprune_nb import slim_pipeline
    from gaprune_nb.options import SlimConfig
    from gaprune_nb.sources import load_domain
    seen, real = [], slim_pipeline.unit_scores
    def spy(enc, texts, *a, **kw):  # the texts importance is measured on
        seen.append(list(texts))
        return real(enc, texts, *a, **kw)
    monkeypatch.setattr(slim_pipeline, 'unit_scores', spy)
    general = set(load_domain('general', root=data).texts())
    reps = []
    for g in (0.0, 0.5):
        cfg = SlimConfig(model=str(bert), data=str(data), keep=0.5, scorer='contribution', finetune='none', n_calib=8, speed_batch=2, general_calib=g)
        reps.append(slim_pipeline.slim_run(cfg, show_progress=False)[1])
    plain, mixed = seen
    assert not set(plain) & general and len(mixed) == len(plain) and sum(t in general for t in mixed) == round(0.5 * len(plain))
    assert reps[0]['speed']['tokens'] == reps[1]['speed']['tokens']  # measured at the domain's typical length either way
    assert reps[1]['config']['general_calib'] == 0.5 and 'general' in reps[1]['data']
