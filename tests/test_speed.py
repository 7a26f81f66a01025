"Issue 33: `slim --speedup` and `--layers` end to end on tiny models (what is removed, the report, the folder), and the settings' checks; speed itself is measured by bench/frontier.py, never asserted here."
import copy, dataclasses, json
import pytest
import torch
from sentence_transformers import SentenceTransformer

from gaprune_nb.arch import find_layers
from gaprune_nb.heads import head_layout, kept_heads
from gaprune_nb.core import Encoder
from gaprune_nb.fixtures import tiny_model
from gaprune_nb.options import SlimConfig
from gaprune_nb.slim_pipeline import slim_run
from gaprune_nb.speed import apply_plan, plan_removal, unit_scores, usable_cores, UnitCosts

TEXTS = ['a short text', 'and a longer one, with more words']

@pytest.fixture
def calm(monkeypatch):
    "Timings mocked: the machine's real load (another process beside the tests) must not add a busy re-time to the mocked draws."
    import gaprune_nb.speed as speed
    from contextlib import contextmanager
    @contextmanager
    def quiet_now(out): yield out; out['others'] = 0.0
    monkeypatch.setattr(speed, 'others_busy', quiet_now)


def test_speed_settings_are_checked():
    with pytest.raises(ValueError, match='not both'): SlimConfig(speedup=2, keep=0.5)
    with pytest.raises(ValueError, match='not both'): SlimConfig(speedup=2, drop_mlp=1)
    with pytest.raises(ValueError, match='leave --scorer unset'): SlimConfig(speedup=2, scorer='magnitude')
    with pytest.raises(ValueError, match='above 1'): SlimConfig(speedup=0.5)
    with pytest.raises(ValueError, match="'small' or 'large'"): SlimConfig(layers='half')
    with pytest.raises(ValueError, match="per-time"): SlimConfig(speedup=2, rank='fastest')
    with pytest.raises(ValueError, match="speed_refine must be an integer >= 0"): SlimConfig(speedup=2, speed_refine=-1)
    with pytest.raises(ValueError, match="speed_of must be one of"): SlimConfig(speedup=2, speed_of='int8')
    with pytest.raises(ValueError, match="give --speedup too"): SlimConfig(speed_of='onnx-int8')
    with pytest.raises(ValueError, match="--device cpu"): SlimConfig(speedup=2, speed_of='onnx-int8', device='cuda')
    c = SlimConfig(speedup=2)
    assert (c.keep, c.scorer) == (1.0, 'contribution') and SlimConfig().keep == 0.6 and SlimConfig().scorer == 'gates'

@pytest.mark.parametrize('arch', ['bert', 'mpnet', 'qwen3'])
def test_slim_to_a_speedup_saves_a_folder_that_serves(arch, tmp_path):
    "A --speedup run removes heads and neurons by its plan, records what it measured, and its folder reloads to the same embeddings (ours, sentence-transformers)."
    m, tok = tiny_model(arch)
    enc = Encoder(m, tok, pooling='mean')
    cfg = SlimConfig(domain='finance', speedup=1.3, finetune_steps=1, batch_size=2, n_calib=8, speed_tokens=16, speed_batch=4, threads=1)
    enc, rep = slim_run(cfg, out=tmp_path/'slim', encoder=enc, show_progress=False)
    r = json.loads((tmp_path/'slim'/'slim_report.json').read_text())
    assert r['config']['speedup'] == 1.3 and r['speed']['threads'] == 1 and r['speed']['tokens'] == 16
    assert {'batch_speedup', 'single_speedup', 'flops', 'flops_dense'} <= set(r['speed']) and r['speed']['flops'] < r['speed']['flops_dense']
    assert r['speed_plan']['tries'] and r['params_kept'] < 1
    back = Encoder.from_pretrained(tmp_path/'slim', pooling='mean')
    assert kept_heads(back.model) == kept_heads(enc.model)
    torch.testing.assert_close(torch.as_tensor(back.encode(TEXTS)), torch.as_tensor(enc.encode(TEXTS)), atol=1e-5, rtol=0)
    st = SentenceTransformer(str(tmp_path/'slim'), trust_remote_code=True, device='cpu')
    ids = tok(TEXTS, return_tensors='pt', padding=True)
    on = {k: v.to(st.device) for k, v in ids.items()}  # sentence-transformers picks a GPU where there is one
    with torch.no_grad(): torch.testing.assert_close(st[0].auto_model(**on).last_hidden_state.cpu(), enc.model(**ids).last_hidden_state, atol=1e-5, rtol=0)

def test_layers_keeps_the_first_n(tmp_path):
    m, tok = tiny_model('bert')
    cfg = SlimConfig(domain='finance', layers='1', keep=1.0, scorer='contribution', finetune='none', n_calib=8, speed_tokens=8, speed_batch=2, threads=1)
    enc, rep = slim_run(cfg, encoder=Encoder(m, tok, pooling='mean'), show_progress=False)
    assert rep['layers'] == 1 and len(find_layers(enc.model)) == 1

def test_plan_drops_a_sublayer_whose_last_unit_goes():
    m, tok = tiny_model('llama')
    enc = Encoder(m, tok, pooling='mean')
    sc = unit_scores(enc, TEXTS)
    sc[('attn', 0)] = torch.zeros_like(sc[('attn', 0)])  # nothing in layer 0's attention matters
    costs = UnitCosts(neuron=1., head=1., mlp=1., attn=1., dense=1e6, tokens=8, batch=1, threads=1)
    keep = plan_removal(sc, costs, save=head_layout(m)[0] + 1, rule='importance')
    assert not keep[('attn', 0)].any()
    apply_plan(enc, keep)
    assert 0 in enc.model.config.gaprune_dropped['attn'] and 'o' not in find_layers(enc.model)[0].modules

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason='needs a CUDA device')

@cuda
@pytest.mark.parametrize('arch', ['bert', 'mpnet', 'qwen3'])
def test_cuda_heads_and_speed_plan(arch, tmp_path):
    "On the GPU: unit importance equals the CPU's, a plan with heads and neurons removed equals the masked model, a --speedup run (planned for a batch and one text, `speed_at='both'`) saves a folder that reloads on the CPU."
    m, tok = tiny_model(arch)
    cpu = Encoder(m, tok, pooling='mean')
    gpu = Encoder(copy.deepcopy(m).cuda(), tok, pooling='mean')
    sc_cpu, sc_gpu = unit_scores(cpu, TEXTS), unit_scores(gpu, TEXTS)
    for k in sc_cpu: torch.testing.assert_close(sc_gpu[k], sc_cpu[k], atol=1e-4, rtol=1e-4)
    costs = UnitCosts(neuron=1., head=4., mlp=2., attn=2., dense=1e9, tokens=8, batch=1, threads=1)
    keep = plan_removal(sc_cpu, costs, save=sum(len(v) for v in sc_cpu.values()) * 1.2)
    apply_plan(cpu, keep); apply_plan(gpu, keep)
    ids = tok(TEXTS, return_tensors='pt', padding=True)
    with torch.no_grad():
        torch.testing.assert_close(gpu.model(**{k: v.cuda() for k, v in ids.items()}).last_hidden_state.cpu(), cpu.model(**ids).last_hidden_state, atol=1e-4, rtol=1e-4)
    m2, _ = tiny_model(arch)
    enc, rep = slim_run(SlimConfig(domain='finance', speedup=1.3, finetune_steps=1, batch_size=2, n_calib=8, speed_tokens=16, speed_batch=4, speed_at='both', device='cuda'),
                        out=tmp_path/'slim', encoder=Encoder(m2.cuda(), tok, pooling='mean'), show_progress=False)
    assert next(enc.parameters()).device.type == 'cuda' and rep['speed']['batch_speedup'] > 0 and rep['speed']['single_speedup'] > 0
    assert all('measured_one' in t and 'measured_batch' in t for t in rep['speed_plan']['tries']), rep['speed_plan']
    back = Encoder.from_pretrained(tmp_path/'slim', pooling='mean')
    torch.testing.assert_close(torch.as_tensor(back.encode(TEXTS)), torch.as_tensor(enc.encode(TEXTS)), atol=1e-4, rtol=1e-4)

def test_a_plan_on_a_busy_machine_times_on_the_cores_left(tmp_path, capsys):
    "Another process spinning on a core when `slim --speedup` starts timing with every core: it does not wait past `speed_wait`, times on the cores left free (one at least) and says so; every try records the load it met."
    import subprocess, sys
    m, tok = tiny_model('bert')
    n = len(usable_cores())
    cfg = SlimConfig(domain='finance', speedup=1.3, finetune='none', n_calib=8, speed_tokens=16, speed_batch=4, threads=n, speed_wait=0)
    spin = subprocess.Popen([sys.executable, '-c', 'import time\nt = time.time()\nwhile time.time() - t < 120: pass'], start_new_session=True)
    try: enc, rep = slim_run(cfg, encoder=Encoder(m, tok, pooling='mean'), show_progress=False)
    finally: spin.kill()
    s = rep['speed_plan']['settle']
    assert s['others'] >= 0.4 and s['asked'] == n and (s['threads'] < n or not s['quiet']), s
    assert rep['speed_plan']['costs']['threads'] == s['threads'] and all(t['others'] >= 0 for t in rep['speed_plan']['tries'])
    assert s['note'] in capsys.readouterr().err and ('instead of' in s['note'] or 'leave none free' in s['note'])
    assert {'others', 'quiet', 'tokens_why', 'threads_asked'} <= set(rep['speed']) and rep['speed']['tokens_why'] == 'as asked (--speed-tokens)'

def test_a_plan_that_removes_nothing_is_never_taken_for_a_speedup(monkeypatch, calm):
    "Timings that make the dense model look 2x faster than itself (noise on a tiny model) never pass off 'remove nothing' as the speed-up asked for."
    import gaprune_nb.speed as speed
    m, tok = tiny_model('bert')
    enc = Encoder(m, tok, pooling='mean')
    monkeypatch.setattr(speed, 'encode_times', _times(lambda models, *a, **k: {n: 2.0 if n == 'ref' else 1.0 for n in models}))  # every model "twice as fast" as the reference
    costs = UnitCosts(neuron=0.01, head=0.01, mlp=0.01, attn=0.01, dense=1.0, tokens=8, batch=1, threads=1)
    res = speed.slim_to_speedup(enc, unit_scores(enc, TEXTS), 1.3, tokens=8, batch=1, threads=1, costs=costs, reference=copy.deepcopy(enc))
    assert res['tries'][0]['measured'] == 1.0    # the first plan removed nothing: no speed-up, whatever the timing said
    assert res['reached'] and any(not k.all() for k in res['keep'].values())   # it asked for more until something went

def test_one_slow_timing_does_not_turn_back_a_plan_fast_enough(monkeypatch, calm):
    "Each plan is judged by the median of `pairs` timings: one low draw (a pair's ratio varies by up to 14%, results/frontier/pairs.txt) no longer sends the search on to remove more."
    import gaprune_nb.speed as speed
    m, tok = tiny_model('bert')
    costs = UnitCosts(neuron=0.01, head=0.01, mlp=0.01, attn=0.01, dense=1.0, tokens=8, batch=1, threads=1)
    def plan(pairs):
        draws = iter([1.0, 1.36, 1.36] + [1.36] * 30)    # the first pair ever timed is a low draw; the plan runs at 1.36x, inside [1.3 * 1.03, 1.3 * 1.12]
        monkeypatch.setattr(speed, 'encode_times', _times(lambda models, *a, **k: {n: 1.0 if n == 'ref' else 1 / next(draws) for n in models}))
        enc = Encoder(copy.deepcopy(m), tok, pooling='mean')
        res = speed.slim_to_speedup(enc, unit_scores(enc, TEXTS), 1.3, tokens=8, batch=1, threads=1, costs=costs, pairs=pairs)
        return res, sum(k.sum().item() for k in res['keep'].values())
    (one, kept1), (three, kept3) = plan(1), plan(3)
    assert len(one['tries']) == 2 and one['tries'][0]['measured'] == 1.0   # one pair: the low draw turned the first plan back
    assert len(three['tries']) == 1 and three['tries'][0]['draws'] == [1.0, 1.36, 1.36] and three['tries'][0]['measured'] == 1.36
    assert kept3 > kept1                                   # so it kept more of the model for the same measured speed
    with pytest.raises(ValueError, match='at least 1'): speed.slim_to_speedup(Encoder(m, tok, pooling='mean'), {}, 1.3, costs=costs, pairs=0)

def test_refine_looks_for_less_removal_inside_the_window(monkeypatch, calm):
    "With `refine`, a plan that lands inside the window is not taken at once: the search asks for less and keeps the least removal still measured at the target."
    import gaprune_nb.speed as speed
    m, tok = tiny_model('bert')
    costs = UnitCosts(neuron=0.01, head=0.01, mlp=0.01, attn=0.01, dense=1.0, tokens=8, batch=1, threads=1)
    n0 = sum(p.numel() for p in m.parameters())
    flat = lambda slim: 1.0 + 0.36 * min((1 - sum(p.numel() for p in slim.model.parameters()) / n0) / 0.001, 1.0)  # 1.36x once 0.1% of the parameters (mostly embeddings) are gone: flat past it
    monkeypatch.setattr(speed, 'encode_times', _times(lambda models, *a, **k: {n: 1.0 if n == 'ref' else 1 / flat(m) for n, m in models.items()}))
    def plan(refine):
        enc = Encoder(copy.deepcopy(m), tok, pooling='mean')
        res = speed.slim_to_speedup(enc, unit_scores(enc, TEXTS), 1.3, tokens=8, batch=1, threads=1, costs=costs, refine=refine)
        return res, sum(p.numel() for p in enc.model.parameters())
    (once, n_once), (refined, n_refined) = plan(0), plan(2)
    assert once['reached'] and refined['reached'] and refined['measured'] >= 1.3 * 1.03
    assert len(refined['tries']) > len(once['tries']) and n_refined > n_once, (once['tries'], refined['tries'])   # it kept more of the model

def test_speed_refine_reaches_the_planner(monkeypatch, calm):
    "`SlimConfig(speed_refine=N, speed_at=...)` (`--speed-refine N --speed-at both`) are the planner's `refine` and `at`, and the report records them (and both speed-ups of every try)."
    import gaprune_nb.slim_pipeline as sp
    seen, real = [], sp.slim_to_speedup
    monkeypatch.setattr(sp, 'slim_to_speedup', lambda *a, **k: seen.append((k.get('refine'), k.get('at'))) or real(*a, **k))
    m, tok = tiny_model('bert')
    cfg = SlimConfig(domain='finance', speedup=1.3, speed_refine=2, speed_at='both', finetune='none', n_calib=8, speed_tokens=8, speed_batch=2, threads=1)
    _, rep = slim_run(cfg, encoder=Encoder(m, tok, pooling='mean'), show_progress=False)
    assert seen == [(2, 'both')] and rep['config']['speed_refine'] == 2 and rep['config']['speed_at'] == 'both'
    assert all({'measured_batch', 'measured_one'} <= set(t) for t in rep['speed_plan']['tries'])

def _times(fake):
    "A stand-in for `encode_times` from one that gives each model's seconds: lists of one round where every round is asked for (`pair_speedup`)."
    return lambda models, *a, per_round=False, **k: {n: [v] if per_round else v for n, v in fake(models, *a, **k).items()}

def _units(mod) -> int:
    "MLP neurons and attention heads a tiny model has left."
    return sum(l.down.in_features if 'down' in l.modules else 0 for l in find_layers(mod)) + \
        sum((len(h) if h is not None else head_layout(mod)[0]) if 'o' in l.modules else 0 for l, h in zip(find_layers(mod), kept_heads(mod)))

def test_the_secant_corrects_a_smooth_miss_in_fewer_tries(monkeypatch, calm):
    "A machine that gives back only 40% of what the linear cost model predicts (as mpnet's did, more so the further a plan goes): the secant step (`correct='secant'`) reaches the window in a few tries, the ratio step (the default) creeps up on it."
    import gaprune_nb.speed as speed
    m, tok = tiny_model('bert')
    costs = UnitCosts(neuron=0.006, head=0.006, mlp=0., attn=0., dense=1.0, tokens=8, batch=1, threads=1)
    n0 = _units(m)
    seconds = lambda mod: 1.0 - 0.4 * 0.006 * (n0 - _units(mod))   # each removed unit saves 40% of its modelled cost
    monkeypatch.setattr(speed, 'encode_times', _times(lambda models, *a, **k: {n: 1.0 if n == 'ref' else seconds(e.model) for n, e in models.items()}))
    def plan(correct):
        enc = Encoder(copy.deepcopy(m), tok, pooling='mean')
        return speed.slim_to_speedup(enc, unit_scores(enc, TEXTS), 1.3, tokens=8, batch=1, threads=1, costs=costs, correct=correct, max_ask=3)  # (a machine this far from the cost model needs asks past the default cap)
    sec, ratio = plan('secant'), plan('ratio')
    assert sec['reached'] and 1.3 * 1.03 <= sec['measured'] <= 1.3 * 1.12 and len(sec['tries']) <= 4, sec['tries']
    assert len(ratio['tries']) > len(sec['tries']), ratio['tries']
    with pytest.raises(ValueError, match="'ratio', 'secant'"): speed.slim_to_speedup(Encoder(m, tok, pooling='mean'), {}, 1.3, costs=costs, correct='newton')

def test_speed_at_both_judges_a_plan_by_the_slower_of_batch_and_one_text(monkeypatch, calm):
    "`at='both'`: a plan counts only when one text (latency) reaches the target too; on a machine where one text gains half of what a batch gains, the batch plan leaves one text short, the 'both' plan does not (it removes more), and each try records both speed-ups."
    import gaprune_nb.speed as speed
    m, tok = tiny_model('bert')
    costs = UnitCosts(neuron=0.01, head=0.01, mlp=0.01, attn=0.01, dense=1.0, tokens=8, batch=1, threads=1)
    n0 = sum(p.numel() for p in m.parameters())
    saved = lambda slim: (1 - sum(p.numel() for p in slim.model.parameters()) / n0) / 0.0065  # about the share of time the cost model says a plan saves (this tiny model's parameters are mostly embeddings)
    fake = lambda models, tokens, batch, *a, **k: {n: 1.0 if n == 'ref' else 1 - saved(x) * (1 if batch > 1 else 0.5) for n, x in models.items()}
    monkeypatch.setattr(speed, 'encode_times', _times(fake))
    dense = Encoder(copy.deepcopy(m), tok, pooling='mean')
    def plan(at):
        enc = Encoder(copy.deepcopy(m), tok, pooling='mean')
        res = speed.slim_to_speedup(enc, unit_scores(enc, TEXTS), 1.3, tokens=8, batch=4, threads=1, costs=costs, at=at)
        return res, speed.judged_speedup(dense, enc, 8, 4, 1, 'both')
    (b, got_b), (both, got_both) = plan('batch'), plan('both')
    assert b['reached'] and both['reached'] and got_b['batch'] >= 1.3 > got_b['one'] and min(got_both.values()) >= 1.3, (got_b, got_both)
    assert all(t['measured'] == pytest.approx(min(t['measured_batch'], t['measured_one']), abs=1e-3) for t in both['tries']) and 'measured_one' not in b['tries'][-1]
    with pytest.raises(ValueError, match="at must be one of"): speed.slim_to_speedup(Encoder(copy.deepcopy(m), tok, pooling='mean'), {}, 1.3, at='latency', costs=costs)
    with pytest.raises(ValueError, match="speed_at must be one of"): SlimConfig(speedup=2, speed_at='latency')

def test_a_judge_plans_for_the_speed_of_another_form():
    "`judge` (e.g. `onnx_speed.graph_judge`: an int8 graph's speed): the form is measured first as it is; a target it reaches removes nothing; above it the cost model is asked only for the rest (target / that gain) and the plan lands in the window, judged by the judge alone."
    import gaprune_nb.speed as speed
    m, tok = tiny_model('bert')
    costs = UnitCosts(neuron=0.006, head=0.006, mlp=0., attn=0., dense=1.0, tokens=8, batch=1, threads=1)
    n0, seen = _units(m), []
    def judge(ref, model, tokens, batch, threads, at):   # a graph 2.5x as fast as PyTorch, which gains what the cost model predicts
        seen.append(_units(model.model)); return {'batch': 2.5 / (1.0 - 0.006 * (n0 - _units(model.model)))}
    def plan(target):
        enc = Encoder(copy.deepcopy(m), tok, pooling='mean')
        return speed.slim_to_speedup(enc, unit_scores(enc, TEXTS), target, tokens=8, batch=1, threads=1, costs=costs, judge=judge), enc
    (same, e1), (more, e2) = plan(2.0), plan(3.0)
    assert same['reached'] and same['keep'] == {} and len(same['tries']) == 1 and same['tries'][0]['nothing_removed'] and _units(e1.model) == n0
    t = more['tries']
    assert t[0]['nothing_removed'] and t[0]['measured'] == pytest.approx(2.5) and t[1]['asked'] == pytest.approx(3.0 / 2.5)
    assert more['reached'] and 3.0 * 1.03 <= more['measured'] <= 3.0 * 1.12 and _units(e2.model) < n0 and len(t) <= 4, t
    assert len(seen) == sum(len(x['draws']) for x in same['tries'] + t)   # every measurement was the judge's (none of PyTorch's; a shortfall timed beside other work is timed twice)

def test_the_allocator_a_timing_ran_under_is_recorded(monkeypatch):
    "`allocator` names a preloaded jemalloc / tcmalloc, else the C library's malloc with what `steady_allocator` set or else its MALLOC_* settings (they move batch speed-ups by about 20%), and `measure_speedup` records it. (That the setting keeps freed memory is checked in fresh processes in 07c.)"
    from gaprune_nb import speed
    from gaprune_nb.speed import allocator, measure_speedup
    for k in [k for k in __import__('os').environ if k.startswith('MALLOC_') or k == 'LD_PRELOAD']: monkeypatch.delenv(k)
    monkeypatch.setattr(speed, '_kept', '')   # as in a process that did not set it
    assert allocator().endswith('malloc (defaults)')
    monkeypatch.setenv('MALLOC_MMAP_THRESHOLD_', '33554432')
    assert allocator().endswith('malloc (MALLOC_MMAP_THRESHOLD_=33554432)')
    monkeypatch.setattr(speed, '_kept', 'M_MMAP_MAX=0 M_TRIM_THRESHOLD=1073741824')
    assert allocator().endswith('malloc (kept: M_MMAP_MAX=0 M_TRIM_THRESHOLD=1073741824)')
    monkeypatch.setattr(speed, '_kept', None)   # not asked yet: a timing asks, and leaves the user's MALLOC_* setting alone
    m, tok = tiny_model('bert')
    enc = Encoder(m, tok, pooling='mean')
    assert measure_speedup(enc, copy.deepcopy(enc), tokens=8, batch=2, threads=1, rounds=1)['allocator'].endswith('(MALLOC_MMAP_THRESHOLD_=33554432)') and speed._kept == ''
    monkeypatch.setenv('LD_PRELOAD', '/usr/lib/x86_64-linux-gnu/libjemalloc.so.2')
    assert allocator() == 'jemalloc'
    assert measure_speedup(enc, copy.deepcopy(enc), tokens=8, batch=2, threads=1, rounds=1)['allocator'] == 'jemalloc'


def _slow_judge(factor):
    "A `judged_speedup` stand-in for a machine where every plan measures `factor` of what the cost model predicts (a busy, or just slower, machine)."
    import gaprune_nb.speed as speed
    def judge(ref, model, tokens, batch, threads, at, costs=None):
        n0, n = _units(ref.model), _units(model.model)
        return {'batch': 1 + (n0 - n) / n0 * factor}
    return judge

def test_a_slow_timing_never_strips_the_model(monkeypatch, calm):
    "Every plan measures far less than the cost model predicts (as beside a busy process): the asks stop at `max_ask` x the target, the plan is reported not reached with why, and the model keeps most of its units (before, the ratio step kept asking until almost nothing was left)."
    import gaprune_nb.speed as speed
    m, tok = tiny_model('bert')
    costs = UnitCosts(neuron=0.005, head=0.005, mlp=0., attn=0., dense=1.0, tokens=8, batch=1, threads=1)   # this tiny model: 136 units, the ceiling 3.1x
    monkeypatch.setattr(speed, 'judged_speedup', _slow_judge(0.15))
    enc = Encoder(copy.deepcopy(m), tok, pooling='mean'); n0 = _units(enc.model)
    res = speed.slim_to_speedup(enc, unit_scores(enc, TEXTS), 1.5, tokens=8, batch=1, threads=1, costs=costs, max_ask=1.4)
    asked = [t['asked'] for t in res['tries']]
    assert not res['reached'] and res['stopped'] == 'cap' and max(asked) <= 1.5 * 1.4 + 1e-9 and asked[-1] == pytest.approx(1.5 * 1.4), asked
    left = _units(enc.model)
    assert left >= n0 - (1 - 1 / 2.1) / 0.005 - 1, (left, n0)   # at most what 2.1x asks of the cost model went (105 of 136 units)
    bare = Encoder(copy.deepcopy(m), tok, pooling='mean')
    speed.slim_to_speedup(bare, unit_scores(bare, TEXTS), 1.5, tokens=8, batch=1, threads=1, costs=costs, max_ask=100)
    assert _units(bare.model) < left / 2, (_units(bare.model), left)   # uncapped, the same timings strip it to the ceiling

def test_an_unreachable_target_is_refused_before_anything_goes(monkeypatch, calm):
    "A target above what removing every unit gives by the measured unit costs (`--speedup 100`) is refused before any plan is built, and the model is left whole."
    import gaprune_nb.speed as speed
    m, tok = tiny_model('bert')
    costs = UnitCosts(neuron=0.002, head=0.002, mlp=0.01, attn=0.01, dense=1.0, tokens=8, batch=1, threads=1)  # 128 neurons and 8 heads: everything gone leaves 1 - 0.272 - 0.04 of a pass, 1.45x at most
    calls = []
    monkeypatch.setattr(speed, 'judged_speedup', lambda *a: calls.append(1) or {'batch': 1.0})
    enc = Encoder(copy.deepcopy(m), tok, pooling='mean'); n0 = _units(enc.model)
    with pytest.raises(speed.TargetOutOfReach, match=r"--speedup 3 is out of reach here: with every MLP neuron and attention head removed, the unit costs measured here give at most 1\.5x"):
        speed.slim_to_speedup(enc, unit_scores(enc, TEXTS), 3.0, tokens=8, batch=1, threads=1, costs=costs)
    assert calls == [] and _units(enc.model) == n0
    assert speed.slim_to_speedup(copy.deepcopy(enc), unit_scores(enc, TEXTS), 1.2, tokens=8, batch=1, threads=1, costs=costs)['ceiling'] == pytest.approx(1 / 0.688, abs=0.01)

def test_the_measured_floor_bounds_the_ceiling_a_busy_timing_inflates(monkeypatch, calm):
    "Beside busy work the unit costs' differences once said almost nothing was left with every unit gone, so a tiny model's ceiling passed 100x and `--speedup 100` was tried instead of refused. The floor (every sub-layer dropped, timed with the rest) bounds it, and `unit_costs` measures it below the dense model."
    import gaprune_nb.speed as speed
    m, tok = tiny_model('bert')
    enc = Encoder(copy.deepcopy(m), tok, pooling='mean'); scores = unit_scores(enc, TEXTS)
    busy = UnitCosts(neuron=0.007, head=0.05, mlp=0.01, attn=0.01, dense=1.0, tokens=8, batch=1, threads=1)  # 128 neurons, 8 heads: the differences add up to the whole pass
    assert speed._ceiling(scores, busy, ('mlp', 'attn'), 1.0) == pytest.approx(1000)   # what a busy timing gave, without the floor
    floored = dataclasses.replace(busy, floor=0.4)
    assert speed._ceiling(scores, floored, ('mlp', 'attn'), 1.0) == pytest.approx(2.5)
    with pytest.raises(speed.TargetOutOfReach, match=r"give at most 2\.5x"):
        speed.slim_to_speedup(enc, scores, 100.0, tokens=8, batch=1, threads=1, costs=floored)
    c = speed.unit_costs(enc, tokens=8, batch=2, threads=1, rounds=3)
    assert 0 < c.floor < c.dense, c   # the embeddings and the pooling alone: faster than the whole model

def test_a_shortfall_timed_beside_other_work_stops_the_plan(monkeypatch):
    "A plan that falls short while other processes hold the timing's cores is timed once more and, still busy, stops there: the next plan would remove more on a timing their load may have lowered."
    import gaprune_nb.speed as speed
    m, tok = tiny_model('bert')
    costs = UnitCosts(neuron=0.005, head=0.005, mlp=0., attn=0., dense=1.0, tokens=8, batch=1, threads=1)
    monkeypatch.setattr(speed, 'judged_speedup', _slow_judge(0.5))
    from contextlib import contextmanager
    @contextmanager
    def loaded(out): yield out; out['others'] = 9.0   # every timing beside nine busy cores
    monkeypatch.setattr(speed, 'others_busy', loaded)
    enc = Encoder(copy.deepcopy(m), tok, pooling='mean')
    res = speed.slim_to_speedup(enc, unit_scores(enc, TEXTS), 1.5, tokens=8, batch=1, threads=1, costs=costs)
    assert not res['reached'] and res['stopped'] == 'busy' and len(res['tries']) == 1 and len(res['tries'][0]['draws']) == 2 and not res['quiet'], res['tries']

def test_a_noisy_timing_of_the_dense_model_against_itself_never_refuses_a_reachable_target(monkeypatch):
    "`slim --speedup` without `--layers` plans against the model it slims, which before anything goes is the dense model: a busy machine that times dense 3x faster than its identical copy (a CI run: 'at most 0.3x', refused) cannot set the plan's reference time."
    import gaprune_nb.speed as speed
    monkeypatch.setattr(speed, 'pair_speedup', lambda *a, **k: 0.3)   # what the busy machine measured for two identical models
    m, tok = tiny_model('bert')
    cfg = SlimConfig(domain='finance', speedup=1.3, finetune='none', n_calib=8, speed_tokens=16, speed_batch=4, threads=1, speed_wait=0)
    enc, rep = slim_run(cfg, encoder=Encoder(m, tok, pooling='mean'), show_progress=False)
    assert rep['speed_plan']['ceiling'] >= 1 and rep['speed_plan']['tries'], rep['speed_plan']
