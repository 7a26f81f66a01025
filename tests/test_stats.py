"""Tests for `gaprune_nb.fisher` / `.stats_io` / `.alignment` that need a process boundary or every architecture:
resume after SIGKILL, the brute-force check on each tiny architecture, manifest refusal and crash leftovers."""
import json, os, signal, subprocess, sys, textwrap, time

import pytest
import torch
from datasets import Dataset

from gaprune_nb.core import Encoder, info_nce
from gaprune_nb.fisher import STAT_FIELDS, GradientStats, gradient_statistics, scored_linears
from gaprune_nb.alignment import gradient_alignment
from gaprune_nb.stats_io import StatsMismatch, read_dir, write_atomic
from gaprune_nb.fixtures import TINY_ARCHS, tiny_model

TEXTS = ["what is a bond", "define the equity risk premium of a small company", "how are dividends taxed", "ebitda",
         "a bond is a loan to an issuer", "the extra return investors demand over the risk free rate",
         "qualified dividends are taxed at capital gains rates", "earnings before interest taxes depreciation",
         "the weather is nice today", "cats sleep", "paris is in france and has many museums", "a recipe for bread"]

# The data, model and call shared by this process and the subprocess that is killed (same code, same result).
SETUP = textwrap.dedent('''
    from datasets import Dataset
    from gaprune_nb.core import Encoder
    from gaprune_nb.fixtures import tiny_model
    T = {texts!r}
    GEN = Dataset.from_dict(dict(query=T[:4]*3, positive=T[4:8]*3, negative=T[8:]*3))
    DOM = Dataset.from_dict(dict(query=T[1:4]*3, positive=T[5:8]*3, negative=T[9:]*3))
    ENC = Encoder(*tiny_model('bert', seed=2))
    KW = dict(batch_size=2, domain_name='toy', show_progress=False, checkpoint_every=1)
''').format(texts=TEXTS)

def _setup():
    ns = {}
    exec(SETUP, ns)
    return ns['ENC'], ns['GEN'], ns['DOM'], ns['KW']

def _equal(a: GradientStats, b: GradientStats):
    return all(torch.equal(getattr(a, f)[k], getattr(b, f)[k]) for f in STAT_FIELDS for k in a.names) \
        and (a.n_gen, a.n_dom, a.n_batches) == (b.n_gen, b.n_dom, b.n_batches)


def test_resume_after_sigkill_is_bit_identical(tmp_path):
    "Kill a subprocess mid-run (SIGKILL, after its 3rd checkpoint); the rerun resumes and matches an uninterrupted run."
    ck, flag = tmp_path/'ckpt', tmp_path/'stopped'
    script = SETUP + textwrap.dedent(f'''
        import time
        from pathlib import Path
        from gaprune_nb.fisher import gradient_statistics
        def on_step(step):
            if step == 3:
                Path({str(flag)!r}).touch()
                time.sleep(600)  # wait to be killed
        gradient_statistics(ENC, GEN, DOM, checkpoint_dir={str(ck)!r}, on_step=on_step, **KW)
    ''')
    proc = subprocess.Popen([sys.executable, '-c', script], env={**os.environ, 'OMP_NUM_THREADS': os.environ.get('OMP_NUM_THREADS', '1')})
    try:
        t0 = time.time()
        while not flag.exists():
            assert proc.poll() is None, f"subprocess exited early with code {proc.returncode}"
            assert time.time() - t0 < 300, "subprocess did not reach step 3"
            time.sleep(0.2)
    finally:
        proc.send_signal(signal.SIGKILL); proc.wait()
    assert proc.returncode == -signal.SIGKILL
    assert json.loads((ck/'manifest.json').read_text())['step'] == 3

    enc, gen, dom, kw = _setup()
    steps = []
    resumed = gradient_statistics(enc, gen, dom, checkpoint_dir=ck, on_step=steps.append, **kw)
    assert steps == [4, 5, 6]
    full = gradient_statistics(enc, gen, dom, **{**kw, 'checkpoint_every': 20})
    assert _equal(resumed, full)


def test_interrupt_between_checkpoints(tmp_path):
    "With checkpoints every 4 steps (of 6), a stop after step 5 resumes from step 4 (recomputing 5), still bit-identical."
    enc, gen, dom, kw = _setup()
    kw = {**kw, 'checkpoint_every': 4}
    def boom(step):
        if step == 5: raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt): gradient_statistics(enc, gen, dom, checkpoint_dir=tmp_path, on_step=boom, **kw)
    assert json.loads((tmp_path/'manifest.json').read_text())['step'] == 4
    steps = []
    resumed = gradient_statistics(enc, gen, dom, checkpoint_dir=tmp_path, on_step=steps.append, **kw)
    assert steps == [5, 6]
    assert _equal(resumed, gradient_statistics(enc, gen, dom, **kw))
    assert all(p.requires_grad for p in enc.parameters())  # flags restored after the interruption too


def _brute(enc, lin, rows):
    out = {k: [] for k in lin}
    for s in range(len(rows['query'])):
        enc.zero_grad()
        info_nce(enc([rows['query'][s]], 'query'), enc([rows['positive'][s]]), enc([rows['negative'][s]])).backward()
        for k, m in lin.items(): out[k].append(m.weight.grad.detach().clone())
    return {k: torch.stack(v) for k, v in out.items()}

@pytest.mark.parametrize('arch', TINY_ARCHS)
def test_fisher_equals_brute_force_every_arch(arch):
    enc = Encoder(*tiny_model(arch, seed=1), pooling='last' if arch not in ('bert', 'mpnet') else 'mean')
    enc.model.eval()
    rows = dict(query=TEXTS[:3], positive=TEXTS[4:7], negative=TEXTS[8:11])
    ds = Dataset.from_dict(rows)
    st = gradient_statistics(enc, ds, ds, batch_size=3, include_attention=True, show_progress=False)
    lin = scored_linears(enc, include_attention=True)
    ref = _brute(enc, lin, rows)
    for k in lin:
        for got, want in ((st.fisher_dom[k], ref[k].square().mean(0)), (st.grad_gen[k], ref[k].mean(0))):
            assert (got - want).norm() <= 1e-5 * want.norm(), (arch, k)


def test_determinism_and_alignment_range():
    enc, gen, dom, kw = _setup()
    a, b = (gradient_statistics(enc, gen, dom, batch_size=2, show_progress=False) for _ in range(2))
    assert _equal(a, b)
    s = gradient_alignment(a)
    allv = torch.cat([v.flatten() for v in s.values()])
    assert allv.abs().max() <= 1 and (allv < 0).any() and (allv > 0).any() and not allv.isnan().any()
    assert {k: v.shape for k, v in s.items()} == {k: v.shape for k, v in a.fisher_gen.items()}


def test_manifest_refusal_and_leftovers(tmp_path):
    enc, gen, dom, kw = _setup()
    st = gradient_statistics(enc, gen, dom, batch_size=2, show_progress=False)
    st.save(tmp_path/'s')
    (tmp_path/'.s.tmp-0000').mkdir()  # a crashed writer's temporary folder: ignored
    assert _equal(GradientStats.load(tmp_path/'s', model=enc, general=gen, domain=dom), st)
    other = Encoder(*tiny_model('bert', seed=3))
    with pytest.raises(StatsMismatch, match='weights_sha256'): GradientStats.load(tmp_path/'s', model=other)
    with pytest.raises(StatsMismatch, match=r'general data\.sha256'): GradientStats.load(tmp_path/'s', general=dom)
    with torch.no_grad(): next(iter(scored_linears(enc).values())).weight[0, 0] += 1e-3  # any weight change is caught
    with pytest.raises(StatsMismatch, match='weights_sha256'): GradientStats.load(tmp_path/'s', model=enc)
    (tmp_path/'s'/'stats.safetensors').unlink()
    with pytest.raises(FileNotFoundError, match='no stats.safetensors'): GradientStats.load(tmp_path/'s')
    with pytest.raises(FileNotFoundError, match='holds no saved statistics'): GradientStats.load(tmp_path/'nothing')


def test_atomic_replace_keeps_old_on_failure(tmp_path):
    write_atomic(tmp_path/'d', {'a': torch.ones(2)}, {'v': 1})
    with pytest.raises(AttributeError): write_atomic(tmp_path/'d', {'a': 'oops'}, {'v': 2})
    assert read_dir(tmp_path/'d')[1] == {'v': 1} and sorted(os.listdir(tmp_path)) == ['d']
    write_atomic(tmp_path/'d', {'a': torch.zeros(2)}, {'v': 3})
    t, m = read_dir(tmp_path/'d')
    assert m == {'v': 3} and torch.equal(t['a'], torch.zeros(2)) and sorted(os.listdir(tmp_path)) == ['d']


def test_identity_digests_hash_the_bytes_manifests_have_always_recorded():
    "Saved manifests compare these digests: a refactor that changed the hashed bytes would refuse every saved statistic."
    import hashlib
    from types import SimpleNamespace
    from gaprune_nb.stats_io import config_sha256, dataset_sha256
    ds = Dataset.from_dict(dict(query=['é?', 'b'], positive=['c', 'd'], negative=['e', 'f']))
    lines = '["é?", "c", "e"]\n["b", "d", "f"]\n'  # one JSON line per row, non-ASCII kept, ', ' separators
    assert dataset_sha256(ds) == hashlib.sha256(lines.encode()).hexdigest()
    cfg = SimpleNamespace(to_dict=lambda: {'b': 1, 'a': [1, 2], '_name_or_path': 'x', 'transformers_version': 'y'})
    assert config_sha256(SimpleNamespace(config=cfg)) == hashlib.sha256(b'{"a": [1, 2], "b": 1}').hexdigest()
