"The `gaprune` console script, run as users run it: `main` with the arguments, its own environment, output and exit code (conftest)."
import argparse, json, os
from dataclasses import fields
import numpy as np, pytest, torch
from sentence_transformers import SentenceTransformer
from transformers import AutoModel

from conftest import gaprune as _gaprune, one_line_error
from gaprune_nb.cli import _config, _from_args, build_parser, main
from gaprune_nb.core import Encoder
from gaprune_nb.arch import mlp_linears
from gaprune_nb.fixtures import default_model
from gaprune_nb.options import SlimConfig
from gaprune_nb.registry import DAIConfig, OBDConfig
from gaprune_nb.pipeline import RunConfig, prune_run

ENV = {**os.environ, 'OMP_NUM_THREADS': '1', 'HF_HUB_OFFLINE': '1'}
TEXTS = ['What was the operating margin in 2022?', 'Revenue grew 8% year over year.', 'Net income fell.']


def gaprune(*args): return _gaprune(*args, env=ENV)  # with the data folder of $GAPRUNE_DATA


def test_bad_arguments_exit_with_usage():
    with pytest.raises(SystemExit): build_parser().parse_args(['demo', '--domain', 'my law'])
    with pytest.raises(SystemExit): build_parser().parse_args(['prune', '--method', 'snip', '--out', 'x'])
    with pytest.raises(SystemExit): build_parser().parse_args([])
    r = gaprune('demo', '--domain', 'my law')
    assert r.returncode == 2 and "argument --domain: domain must be a name of letters" in r.stderr


def flags(cmd) -> dict:
    "{field name: argparse action} of the subcommand `cmd`."
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)).choices[cmd]
    return {a.dest: a for a in sub._actions}


@pytest.mark.parametrize('cmd,cls', [('prune', RunConfig), ('prune', DAIConfig), ('prune', OBDConfig), ('run', RunConfig), ('run', DAIConfig), ('run', OBDConfig),
                                     ('slim', SlimConfig)])
def test_every_config_field_is_a_flag_with_the_fields_default(cmd, cls):
    "A field without a flag, or a flag whose default is not the field's, fails here (`RunConfig.score` is the flags of each method family's settings)."
    have = flags(cmd)
    for f in fields(cls):
        if f.name == 'score': continue
        assert f.name in have, f"{cls.__name__}.{f.name} has no flag in gaprune {cmd}"
        assert have[f.name].default == f.default, (cmd, f.name, have[f.name].default, f.default)
        assert have[f.name].help and '(default' in have[f.name].help, (cmd, f.name)  # documented, with its default ('(default X)' or '(default: words)')
        assert not have[f.name].help.startswith(' (default'), (cmd, f.name)  # its comment, inherited ones too (`ModelConfig`)


def test_prune_help_lists_the_common_flags_and_each_method_its_own(capsys):
    """`gaprune prune --help`: a handful of flags and the methods (the default's alias said); `--method obd-kfac --help`
    adds that family's settings only; `--help-all` every flag. Every flag still parses whatever the help lists."""
    def shown(*argv):
        with pytest.raises(SystemExit): main(list(argv))
        return capsys.readouterr().out
    brief, obd, full = shown('prune', '--help'), shown('prune', '--method', 'obd-kfac', '--help'), shown('run', '--help-all')
    assert "'gaprune' is an alias of 'wanda-row', the default" in brief and 'wanda-row' in brief and 'alias gaprune' in brief
    assert all(m in brief for m in ('obd-kfac', 'sparsegpt', 'gaprune-paper')) and '--lam' not in brief and '--n-calib' not in brief
    assert sum(l.lstrip().startswith('--') for l in brief.splitlines()) <= 14  # a handful
    assert 'settings of obd, obd-kfac, balanced' in obd and '--lam' in obd and '--first-order' in obd and '--alpha' not in obd
    assert all(f in full for f in ('--alpha', '--lam', '--n-calib', '--stats-groups', '--checkpoint-every', '--general'))
    assert _config(build_parser(None).parse_args(['prune', '--out', 'x', '--n-calib', '4', '--pool', '9'])).n_calib == 4


def test_no_options_give_the_default_config_and_flags_reach_it():
    """`prune` / `run` with only --out make `RunConfig()`, `slim` `SlimConfig()`: the CLI sets no field itself. Flags reach
    their fields; `--pool 0` and `none` mean None (all triplets), as RunConfig reads them."""
    parse = build_parser().parse_args
    for cmd in ('prune', 'run'): assert _config(parse([cmd, '--out', 'x'])) == RunConfig()
    assert _from_args(SlimConfig, parse(['slim', '--out', 'x'])) == SlimConfig()
    cfg = _config(parse(['prune', '--out', 'x', '--pool', '0', '--max-length', 'none', '--no-balance', '--temperature', '0.1',
                         '--update', 'obs', '--pooling', 'last', '--seed', '3', '--method', 'gaprune-paper', '--beta', '0', '--clamp', '0.8,1.2']))
    assert (cfg.pool, cfg.max_length, cfg.balance, cfg.temperature, cfg.update, cfg.pooling, cfg.seed) == (None, None, False, 0.1, 'obs', 'last', 3)
    assert cfg.score == DAIConfig(beta=0.0, clamp=(0.8, 1.2))
    assert _config(parse(['prune', '--out', 'x', '--method', 'obd-kfac', '--lam', '0.5'])).score == OBDConfig(lam=0.5)
    for args, msg in ((['--beta', '0'], "--beta is a setting of gaprune-paper, not of method 'wanda-row' (it has none)"),
                      (['--method', 'obd', '--alpha', '0'], "--alpha is a setting of gaprune-paper, not of method 'obd' (its settings: --lam")):
        with pytest.raises(ValueError, match=msg.replace('(', r'\(').replace(')', r'\)')): _config(parse(['prune', '--out', 'x', *args]))
    assert _config(parse(['prune', '--out', 'x', '--pool', 'none'])).pool is None
    for cmd in ('prune', 'run'):  # the load settings too: device and dtype reach RunConfig (and so `load_kwargs`)
        c = _config(parse([cmd, '--out', 'x', '--device', 'cpu', '--dtype', 'float32']))
        assert (c.device, c.dtype) == ('cpu', 'float32')
    assert _from_args(SlimConfig, parse(['slim', '--out', 'x', '--max-length', '64'])).max_length == 64
    for bad in (['--temperature', '0'], ['--pool', '-1'], ['--max-length', '0'], ['--pooling', 'max']):
        with pytest.raises(SystemExit): parse(['prune', '--out', 'x', *bad])


def test_eval_batch_size_and_max_length_reach_the_model_and_the_evaluation(monkeypatch, capsys):
    "`gaprune eval --batch-size 4 --max-length 64`: the model is loaded with a 64-token limit and evaluated 4 texts at a time."
    import gaprune_nb.evaluation as ev
    seen = []
    def fake(enc, suite, batch_size=-1, **kw):
        seen.append((enc.max_length, batch_size))
        return ev.Report('m', 'r', {'T': 0.5}, {'T': 'Retrieval'})
    monkeypatch.setattr(ev, 'evaluate', fake)
    main(['eval', '--batch-size', '4', '--max-length', '64'])
    main(['eval'])
    default_limit = Encoder.from_pretrained(default_model(None)).max_length
    assert seen == [(64, 4), (default_limit, -1)]  # unset: the folder's limit, `evaluate`'s own batch size


def test_slim_max_length_sets_the_dense_and_the_slimmed_model(monkeypatch, tmp_path, capsys):
    "`gaprune slim --max-length 64`: both the slimmed model (saved with it) and the dense one it is compared with."
    import gaprune_nb.jobs as jobs
    seen = {}
    monkeypatch.setattr(jobs, 'compare', lambda dense, model, *a, **kw: seen.update(dense=dense.max_length, slimmed=model.max_length) or {})
    main(['slim', '--scorer', 'magnitude', '--keep', '0.9', '--finetune', 'none', '--n-calib', '4', '--max-length', '64',
          '--speed-batch', '2', '--speed-tokens', '16', '--out', str(tmp_path / 'slim')])
    assert seen == dict(dense=64, slimmed=64)
    assert Encoder.from_pretrained(tmp_path / 'slim').max_length == 64 and SlimConfig.from_run(tmp_path / 'slim').max_length == 64


def test_missing_data_folder_is_a_clear_error_and_nothing_is_written(tmp_path):
    r = gaprune('prune', '--method', 'gaprune', '--out', str(tmp_path / 'run'), '--data', str(tmp_path / 'nowhere'))
    assert r.returncode == 1 and 'nowhere' in r.stderr and 'Traceback' not in r.stderr
    assert list(tmp_path.iterdir()) == []


def test_demo_runs_on_real_model_and_data():
    r = gaprune('demo', '-n', '8')
    assert r.returncode == 0, r.stderr
    assert 'positive ranked above hard negative' in r.stdout and 'encoder.layer.0.intermediate.dense' in r.stdout


@pytest.mark.parametrize('method,sparsity', [('gaprune', 0.5), ('wanda', 0.3)])
def test_prune_reloads_everywhere_with_in_memory_embeddings(tmp_path, method, sparsity):
    "CLI prune -> transformers and sentence-transformers reload == the in-memory pruned model; exact sparsity."
    out = tmp_path / 'run'
    r = gaprune('prune', '--method', method, '--sparsity', str(sparsity), '--n-calib', '8', '--pool', '200', '--out', str(out))
    assert r.returncode == 0, r.stderr
    mem, mask, rep = prune_run(RunConfig(method=method, sparsity=sparsity, n_calib=8, pool=200), show_progress=False)
    ref = mem.encode(TEXTS)
    np.testing.assert_array_equal(Encoder.from_pretrained(out).encode(TEXTS), ref)
    np.testing.assert_allclose(SentenceTransformer(str(out), device='cpu').encode(TEXTS), ref, atol=1e-6)
    raw = AutoModel.from_pretrained(out)
    lin = mlp_linears(raw)
    zeros = sum(int((m.weight == 0).sum()) for m in lin.values()); total = sum(m.weight.numel() for m in lin.values())
    assert zeros == round(sparsity * total)
    saved = json.loads((out / 'gaprune_report.json').read_text())
    assert saved['sparsity'] == pytest.approx(sparsity) and saved['config']['method'] == method
    assert (out / 'mask.safetensors').exists() and (out / 'gaprune_report.md').exists()


def test_eval_tiny_suite(tmp_path):
    r = gaprune('eval', '--suite', 'general', '--limit', 'tiny', '--json', str(tmp_path / 'r.json'))
    assert r.returncode == 0, r.stderr
    rep = json.loads((tmp_path / 'r.json').read_text())
    assert set(rep['types'].values()) == {'Retrieval', 'STS'} and all(0 <= v <= 1 for v in rep['scores'].values())


def test_decoder_folder_gets_last_token_pooling_and_dtype_from_the_cli(tmp_path):
    "A decoder saved without a pooling config: --pooling last and --dtype reach the model and the report."
    from gaprune_nb.fixtures import tiny_model
    m, tok = tiny_model('llama')
    m.save_pretrained(tmp_path / 'llama'); tok.save_pretrained(tmp_path / 'llama')
    out = tmp_path / 'run'
    r = gaprune('prune', '--model', tmp_path / 'llama', '--method', 'magnitude', '--pooling', 'last', '--dtype', 'bfloat16',
                '--out', out)
    assert r.returncode == 0, r.stderr[-2000:]
    rep = json.loads((out / 'gaprune_report.json').read_text())
    assert rep['encoder']['pooling'] == 'last' and rep['config']['dtype'] == 'bfloat16'
    from safetensors import safe_open
    with safe_open(str(out / 'model.safetensors'), 'pt') as f: dtypes = {f.get_slice(k).get_dtype() for k in f.keys()}
    assert dtypes == {'BF16'} and Encoder.from_pretrained(out).pooling == 'last'  # saved in bfloat16, reloads with last


def prune_ok(out, *args) -> RunConfig:
    "`gaprune prune ARGS --out OUT` on 8 calibration triplets from a 200-triplet pool: it must succeed; its config, reloaded."
    r = gaprune('prune', *args, '--n-calib', '8', '--pool', '200', '--out', out)
    assert r.returncode == 0, r.stderr[-2000:]
    return RunConfig.from_run(out)


def test_score_settings_are_flags_recorded_in_the_report_and_reproduce_the_mask(tmp_path, bert, data):
    "The DAI's settings are flags of `gaprune prune`; the run records its method's config and RunConfig.from_run reproduces the mask."
    from gaprune_nb.masks import load_mask
    out = tmp_path / 'run'
    cfg = prune_ok(out, '--model', bert, '--data', data, '--method', 'gaprune-paper', '--beta', '0', '--normalize', 'rms', '--clamp', '0.8,1.2', '--batch-size', '4', '--max-length', '64')
    score = json.loads((out / 'gaprune_report.json').read_text())['config']['score']
    assert score['beta'] == 0 and score['normalize'] == 'rms' and score['clamp'] == [0.8, 1.2] and set(score) == {f.name for f in fields(DAIConfig)}
    assert cfg.score.beta == 0 and cfg.score.clamp == (0.8, 1.2)
    _, mask, _ = prune_run(cfg, show_progress=False)
    saved = load_mask(out / 'mask.safetensors')
    assert mask.keys() == saved.keys() and all(torch.equal(mask[k], saved[k]) for k in mask)


def test_recompute_is_a_flag_and_gives_the_same_statistics(tmp_path, bert, data):
    "`--recompute N` (GradCache-style statistics, one pass of N texts held at a time): recorded, reproducible, same statistics."
    from gaprune_nb.fisher import GradientStats
    out = tmp_path / 'run'
    cfg = prune_ok(out, '--model', bert, '--data', data, '--method', 'obd-kfac', '--recompute', '2', '--max-length', '64')
    assert cfg.recompute == 2
    cfg.recompute = 0
    prune_run(cfg, out=tmp_path / 'plain', show_progress=False)
    low, plain = GradientStats.load(out / 'stats'), GradientStats.load(tmp_path / 'plain' / 'stats')
    for f in ('fisher_gen', 'fisher_dom'):
        for k, v in getattr(plain, f).items():
            w = getattr(low, f)[k]
            assert (w - v).norm() <= 1e-5 * v.norm(), (f, k)
    with pytest.raises(ValueError, match='recompute'): RunConfig(recompute=-1)
    assert gaprune('prune', '--recompute', '-1', '--out', tmp_path / 'x').returncode == 2


def test_stats_groups_give_the_same_statistics_and_mask(tmp_path, bert, data):
    "`--stats-groups K` (statistics of 1/K of the matrices per pass, kept on disk, read lazily): same statistics, same mask."
    from gaprune_nb.fisher import GradientStats
    from gaprune_nb.masks import load_mask
    out = tmp_path / 'run'
    tiny = ('--model', bert, '--data', data)  # a tiny BERT and data folder: the same code paths in seconds
    cfg = prune_ok(out, *tiny, '--method', 'gaprune-paper', '--stats-groups', '3', '--batch-size', '4', '--max-length', '64')
    assert cfg.stats_groups == 3
    assert sorted(p.name for p in (out / 'stats').glob('*.safetensors')) == [f'stats-0000{i}-of-00003.safetensors' for i in (1, 2, 3)]
    assert not (tmp_path / 'run.partial').exists()
    cfg.stats_groups = 1
    prune_run(cfg, out=tmp_path / 'plain', show_progress=False)
    grouped, plain = GradientStats.load(out / 'stats'), GradientStats.load(tmp_path / 'plain' / 'stats')
    assert grouped.names == plain.names and grouped.fields == plain.fields
    for f in plain.fields:
        for k, v in getattr(plain, f).items(): assert torch.equal(getattr(grouped, f)[k], v), (f, k)
    a, b = load_mask(out / 'mask.safetensors'), load_mask(tmp_path / 'plain' / 'mask.safetensors')
    assert all(torch.equal(a[k], b[k]) for k in b)
    # the sharded folder reused with --stats (read matrix by matrix): the same mask again
    prune_ok(tmp_path / 'reused', *tiny, '--method', 'gaprune-paper', '--batch-size', '4', '--max-length', '64', '--stats', out / 'stats')
    c = load_mask(tmp_path / 'reused' / 'mask.safetensors')
    assert all(torch.equal(c[k], b[k]) for k in b)
    with pytest.raises(ValueError, match='stats_groups'): RunConfig(stats_groups=0)
    with pytest.raises(ValueError, match='stats_groups > 1 keeps'): prune_run(RunConfig(method='obd-kfac', stats_groups=2))
    assert gaprune('prune', '--stats-groups', '0', '--out', tmp_path / 'x').returncode == 2


def test_slim_speedup_with_export_writes_a_folder_sentence_transformers_loads(bert, data, tmp_path, monkeypatch):
    "`gaprune slim --speedup 1.3 --speed-at both --export onnx-int8 --export onnx-int8-tensor` on a tiny BERT: the speed-ups it measured (each plan for a batch and one text) in the report, the int8 graph in the ONNX layout, timed against dense into the report and card, and the card's line loads it."
    import re
    from sentence_transformers import SentenceTransformer
    out = tmp_path / 'slim'
    r = gaprune('slim', '--model', bert, '--data', data, '--speedup', '1.3', '--finetune-steps', '1', '--batch-size', '2', '--n-calib', '8',
                '--speed-tokens', '16', '--speed-batch', '4', '--speed-at', 'both', '--threads', '1', '--no-eval', '--export', 'onnx-int8',
                '--export', 'onnx-int8-tensor', '--out', out)
    assert r.returncode == 0 or r.returncode == 3 and 'not reached' in r.stderr, r.stderr[-2000:]   # 3: a tiny model's plan on a busy test machine may stop short; the folder is complete either way
    rep = json.loads((out / 'slim_report.json').read_text())
    assert rep['config']['speedup'] == 1.3 and rep['speed']['batch_speedup'] > 0 and (out / 'onnx' / 'model_qint8_avx512_vnni.onnx').is_file()
    assert rep['config']['speed_at'] == 'both' and all(t['measured_one'] > 0 and t['measured_batch'] > 0 for t in rep['speed_plan']['tries'])
    g = rep['onnx']['onnx-int8']   # the int8 graph timed against the dense model, as the PyTorch model was: in the report, the card and the output
    assert list(rep['onnx']) == ['onnx-int8', 'onnx-int8-tensor'] and (g['tokens'], g['batch'], g['threads']) == (16, 4, 1) and g['runtime'].startswith('onnxruntime')
    card = (out / 'README.md').read_text()   # a figure is written there only if it holds (timed quiet, the dense model's time beside it agreeing with its own)
    assert (f"`model_qint8_per_tensor.onnx`: **{rep['onnx']['onnx-int8-tensor']['batch_speedup']:.2f}×**" in card) == (not rep['onnx']['onnx-int8-tensor']['doubt'])
    assert g['batch_speedup'] == g['batch_seconds']['dense'] / g['batch_seconds']['graph'] and g['single_speedup'] > 0
    assert (f"`model_qint8_avx512_vnni.onnx`: **{g['batch_speedup']:.2f}×**" in card) == (not g['doubt'])
    assert f"onnx-int8: {out / 'onnx' / 'model_qint8_avx512_vnni.onnx'}; speed-up measured here in onnxruntime" in r.stdout
    bad = gaprune('slim', '--speedup', '2', '--speed-at', 'fast', '--out', tmp_path / 'bad')
    assert bad.returncode == 2 and "'both'" in bad.stderr and not (tmp_path / 'bad').exists()
    line = re.search(r'^model = (SentenceTransformer\(.*backend="onnx".*\))  # int8', (out / 'README.md').read_text(), re.M).group(1)
    monkeypatch.chdir(tmp_path)  # the card names the folder by its name: run beside it
    st = eval(line, {'SentenceTransformer': SentenceTransformer})
    pt = SentenceTransformer(str(out), trust_remote_code=True, device='cpu')
    a, b = st.encode(['a short text', 'another one']), pt.encode(['a short text', 'another one'])
    assert (a * b).sum(1).min() > 0.98


def test_export_refused_at_once_without_the_onnx_packages(bert, data, tmp_path, monkeypatch):
    "A missing ONNX package stops `--export` before any work, in one line naming the fix."
    import builtins
    real = builtins.__import__
    monkeypatch.setattr(builtins, '__import__', lambda name, *a, **kw: (_ for _ in ()).throw(ImportError(name=name)) if name == 'onnxscript' else real(name, *a, **kw))
    r = gaprune('slim', '--model', bert, '--data', data, '--speedup', '1.3', '--no-eval', '--export', 'onnx', '--out', tmp_path / 'slim')
    assert 'onnxscript is missing' in one_line_error(r) and "gaprune_nb[onnx]" in r.stderr and not (tmp_path / 'slim').exists()
    r = gaprune('slim', '--model', bert, '--data', data, '--speedup', '1.3', '--no-eval', '--speed-of', 'onnx-int8', '--out', tmp_path / 'slim')
    assert '--speed-of onnx-int8 needs the ONNX packages (onnxscript is missing)' in one_line_error(r) and not (tmp_path / 'slim').exists()


def test_slim_speed_of_a_graph_plans_for_that_graph_and_writes_it(bert, data, tmp_path):
    "`gaprune slim --speedup 1.3 --speed-of onnx-int8-tensor`: every try of the plan timed the per-tensor int8 graph (the first the whole model's), and that graph is written and timed into the report without `--export`; bad values are refused in one line, before any work."
    out = tmp_path / 'slim'
    r = gaprune('slim', '--model', bert, '--data', data, '--speedup', '1.3', '--speed-of', 'onnx-int8-tensor', '--finetune-steps', '1', '--batch-size', '2',
                '--n-calib', '8', '--speed-tokens', '16', '--speed-batch', '4', '--threads', '1', '--no-eval', '--out', out)
    assert r.returncode == 0 or r.returncode == 3 and 'not reached' in r.stderr, r.stderr[-2000:]   # 3: a tiny model's plan on a busy test machine may stop short; the folder is complete either way
    rep = json.loads((out / 'slim_report.json').read_text())
    tries = rep['speed_plan']['tries']
    assert rep['config']['speed_of'] == 'onnx-int8-tensor' and tries[0]['nothing_removed'] and tries[0]['asked'] == 1.0 and all(t['measured'] > 0 for t in tries)
    assert list(rep['onnx']) == ['onnx-int8-tensor'] and (out / 'onnx' / 'model_qint8_per_tensor.onnx').is_file() and 'of the onnx-int8-tensor graph' in r.stderr
    for bad, rc, msg in ((['--speedup', '2', '--speed-of', 'int8'], 2, "invalid choice: 'int8'"), (['--speed-of', 'onnx-int8'], 1, 'give --speedup too')):
        b = gaprune('slim', '--model', bert, '--data', data, *bad, '--out', tmp_path / 'bad')
        assert msg in one_line_error(b, rc) and not (tmp_path / 'bad').exists()


def test_slim_refuses_an_unreachable_speedup_and_exits_non_zero_on_a_missed_one(bert, data, tmp_path, monkeypatch):
    "`slim --speedup 100`: refused in one line once the unit costs are measured, before anything is removed, nothing written (it used to exit 0 with every sub-layer dropped). A target the plans fall short of (every plan measured far below the cost model, as on a busy machine): the model is saved with its report, and the command exits 3 with one line that says by how much, why, where and what to do (it used to exit 0)."
    import gaprune_nb.speed as speed
    common = ('--model', bert, '--data', data, '--finetune', 'none', '--n-calib', '8', '--speed-tokens', '16', '--speed-batch', '4', '--threads', '1', '--speed-wait', '0', '--no-eval')
    r = gaprune('slim', *common, '--speedup', '100', '--out', tmp_path / 'far')
    assert 'error: --speedup 100 is out of reach here' in one_line_error(r) and 'ask for less' in r.stderr and not (tmp_path / 'far').exists()
    monkeypatch.setattr(speed, 'judged_speedup', lambda *a, **k: {'batch': 1.02})   # no plan gets past 1.02x
    monkeypatch.setattr(speed, '_ceiling', lambda *a, **k: 5.0)   # while the cost model calls 1.2x reachable (a slow machine's tiny-BERT costs may give only 1.2x: CI once refused it up front)
    r = gaprune('slim', *common, '--speedup', '1.2', '--out', tmp_path / 'short')
    last = one_line_error(r, 3)
    assert last.startswith('gaprune slim: target 1.2x not reached: the plan measured 1.02x (15% short)') and f"saved in {tmp_path / 'short'} for inspection" in last, last
    rep = json.loads((tmp_path / 'short' / 'slim_report.json').read_text())
    assert rep['speed_plan']['reached'] is False and rep['speed_plan']['stopped'] in ('cap', 'tries') and (tmp_path / 'short' / 'config.json').is_file()
    assert max(t['asked'] for t in rep['speed_plan']['tries']) <= 1.2 * 1.75 + 1e-9


def test_slim_leaves_speeds_that_contradict_each_other_out_of_the_card(bert, data, tmp_path, monkeypatch):
    "A graph's timing whose dense PyTorch time beside it is 50x its own time in the PyTorch measurement of the same run (load inflated it: once a card said 330x for one text) is printed with why, kept in the report with its doubt, and left out of the card."
    import gaprune_nb.onnx_speed as onnx_speed
    real = onnx_speed.onnx_speedup
    def inflated(*a, **k):
        s = real(*a, **k)
        for key in ('batch', 'single'): s[f'{key}_seconds']['dense'] *= 50; s[f'{key}_speedup'] *= 50
        return s | dict(quiet=True)
    monkeypatch.setattr(onnx_speed, 'onnx_speedup', inflated)
    out = tmp_path / 'slim'
    r = gaprune('slim', '--model', bert, '--data', data, '--keep', '0.5', '--scorer', 'magnitude', '--finetune', 'none', '--n-calib', '8', '--speed-tokens', '16', '--speed-batch', '4',
                '--threads', '1', '--no-eval', '--export', 'onnx-int8-tensor', '--out', out)
    assert r.returncode == 0, r.stderr[-2000:]
    s = json.loads((out / 'slim_report.json').read_text())['onnx']['onnx-int8-tensor']
    assert s['doubt'].startswith("the dense model's time beside it") and 'contradicts its time in the PyTorch measurement' in s['doubt']
    assert 'not written into the card: the dense model' in r.stdout and '**' not in (out / 'README.md').read_text().split('Measured when exported')[-1] and 'Measured when exported' not in (out / 'README.md').read_text()


def test_slim_keep_1_is_the_recovery_alone_in_a_plain_folder(bert, data, tmp_path):
    "`slim --keep 1`: no neuron goes and nothing ranks them (no gates trained), so the run is the recovery alone; with `--finetune none` the saved model is the dense one, in a plain folder sentence-transformers loads without remote code, with the dense model's embeddings."
    out = tmp_path / 'keep1'
    r = gaprune('slim', '--model', bert, '--data', data, '--keep', '1', '--finetune', 'none', '--n-calib', '8', '--speed-tokens', '16', '--speed-batch', '4',
                '--threads', '1', '--no-eval', '--out', out)
    assert r.returncode == 0, r.stderr[-2000:]
    rep = json.loads((out / 'slim_report.json').read_text())
    assert rep['params_kept'] == 1.0 and rep['gate_training'] is None, (rep['params_kept'], rep['gate_training'])
    assert not json.loads((out / 'config.json').read_text())['model_type'].startswith('gaprune_')
    texts = ['Net revenue grew by 12% in 2019.', 'How do vaccines work?']
    np.testing.assert_allclose(SentenceTransformer(str(out)).encode(texts), SentenceTransformer(str(bert)).encode(texts), atol=1e-5)


def test_slim_help_fits_a_screen_with_the_common_groups_first(capsys, monkeypatch):
    "`gaprune slim --help`: at most 50 lines on an 80-column terminal, groups in the order a user needs them (data and domain, target, output and export, recovery, advanced), each common flag one sentence with its default, and the way to the rest (`--help-all`: every flag). `prune` / `run --help` fit too and list `--domain-data` (the README's 'Your domain' flag) and not `--update` / `--stats`. Every flag still parses whatever the help lists."
    monkeypatch.setenv('COLUMNS', '80')  # argparse wraps to the terminal: the count is for a standard one
    def shown(*argv):
        with pytest.raises(SystemExit): main(list(argv))
        return capsys.readouterr().out
    brief, full = shown('slim', '--help'), shown('slim', '--help-all')
    assert len(brief.splitlines()) <= 50, len(brief.splitlines())
    assert max(map(len, brief.splitlines())) <= 80
    heads = [brief.index(h + ':\n') for h in ('data and domain', 'target', 'output and export', 'recovery', 'advanced')]
    assert heads == sorted(heads) and '--help-all' in brief[heads[-1]:]
    assert all(f in brief for f in ('--speedup', '--domain-data', '--export', '--out')) and all(f not in brief for f in ('--gate-lr', '--speed-wait', '--lam'))
    common = [l for l in brief[brief.index('data and domain:'):heads[-1]].splitlines() if l.lstrip().startswith('--')]
    assert len(common) >= 14 and all('(default' in h or '(required)' in h for h in brief[brief.index('data and domain:'):heads[-1]].split('\n  --')[1:])
    assert all(f in full for f in ('--gate-lr', '--speed-wait', '--lam', '--speed-refine', '--n-calib', '--dev', '--limit'))
    for cmd in ('prune', 'run'):
        h = shown(cmd, '--help')
        assert len(h.splitlines()) <= 50 and max(map(len, h.splitlines())) <= 80, (cmd, len(h.splitlines()))
        assert '--domain-data' in h and '--help-all' in h and '--update' not in h and '--stats ' not in h, cmd
    a = build_parser(None).parse_args(['slim', '--out', 'x', '--gate-lr', '0.1', '--speed-wait', '5', '--lam', '0.5', '--speed-refine', '2', '--n-calib', '8',
                                       '--dev', '--limit', 'tiny', '--speedup', '2', '--speed-of', 'onnx-int8', '--recovery', 'distill', '--export', 'onnx', '--no-eval', '--overwrite'])
    assert (a.gate_lr, a.speed_wait, a.lam, a.speed_refine, a.n_calib, a.dev, a.limit, a.speed_of, a.recovery, a.export, a.eval) == \
        (0.1, 5.0, 0.5, 2, 8, True, 'tiny', 'onnx-int8', 'distill', ['onnx'], False)
    assert _from_args(SlimConfig, a).gate_lr == 0.1
    r = build_parser(None).parse_args(['prune', '--out', 'x', '--stats', 's', '--cache', 'c', '--checkpoint-every', '3', '--update', 'obs', '--export', 'onnx-int8'])
    assert (r.stats, r.cache, r.checkpoint_every, r.update, r.export) == ('s', 'c', 3, 'obs', ['onnx-int8'])
    r = build_parser(None).parse_args(['run', '--out', 'x', '--dev', '--limit', '5', '--general', '--n-calib', '4'])
    assert (r.dev, r.limit, r.general, _config(r).n_calib) == (True, 5, True, 4)
