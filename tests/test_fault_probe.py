"""Issue 51 item 3: the defects a fault probe found, each through the real `gaprune` command on the tiny fixtures of
`conftest.py`. Each case asserts the one line the user reads, the exit code, and that nothing was written or lost."""
import json, os, re, shutil, signal, subprocess, sys, time
from pathlib import Path

import pytest

from conftest import ENV, full_tree, gaprune, one_line_error, prune_args, tree, _triplets


def slim_args(bert, data, out, *extra):
    "A quick `gaprune slim` by shares on the tiny model (a few seconds)."
    return ('slim', '--model', bert, '--data', data, '--gate-steps', 2, '--finetune-steps', 1, '--batch-size', 4, '--n-calib', 8,
            '--no-eval', '--out', out, *extra)


# 1. A model folder without tokenizer files is refused up front

def test_model_folder_without_tokenizer_files_is_refused_up_front(tmp_path, bert, data):
    m = shutil.copytree(bert, tmp_path / 'no-tokenizer')
    for f in ('tokenizer.json', 'tokenizer_config.json'): (m / f).unlink()
    before = full_tree(tmp_path)
    r = gaprune(*prune_args(m, data, tmp_path / 'out', method='magnitude'))
    line = one_line_error(r)
    assert f'model folder {m} has no tokenizer files' in line and 'tokenizer.json' in line and 'save_pretrained' in line, line
    assert '== load model' not in r.stderr  # refused before the model loads
    assert full_tree(tmp_path) == before


# 2. Two commands on one --out: a lock in the folder, the second refused naming the first; a stale lock taken over

HOLD = ("import sys, time\nfrom gaprune_nb.outputs import lock_output, output_locks\n"
        "with output_locks():\n    lock_output(sys.argv[1]); print('held', flush=True); time.sleep(600)")


def test_two_runs_on_one_new_out_one_refused_naming_the_other(tmp_path, bert, data):
    "Started at once: one writes the folder, the other is refused (by the lock, naming the first's pid, or as a finished folder)."
    out = tmp_path / 'run'
    args = lambda s: [sys.executable, '-c', 'from gaprune_nb.cli import main; main()', *map(str, prune_args(bert, data, out, '--sparsity', s, method='magnitude'))]
    a, b = (subprocess.Popen(args(s), env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for s in ('0.3', '0.6'))
    (oa, ea), (ob, eb) = a.communicate(timeout=600), b.communicate(timeout=600)
    assert sorted([a.returncode, b.returncode]) == [0, 1], (ea[-1500:], eb[-1500:])
    won, lost, lost_err, lost_out = (a, b, eb, ob) if a.returncode == 0 else (b, a, ea, oa)
    line = lost_err.strip().splitlines()[-1]
    assert f'is in use by another gaprune command (process {won.pid}' in line or 'exists and is not empty' in line, line
    assert 'saved' not in lost_out and 'Traceback' not in lost_err
    rep = json.loads((out / 'gaprune_report.json').read_text())
    assert rep['config']['sparsity'] == (0.3 if won is a else 0.6)
    assert sorted(p.name for p in tmp_path.iterdir()) == ['run'] and not list(out.glob('.gaprune*'))


def test_a_held_lock_refuses_at_once_and_a_dead_ones_is_taken_over(tmp_path, bert, data):
    out = tmp_path / 'run'
    holder = subprocess.Popen([sys.executable, '-c', HOLD, str(out)], env=ENV, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == 'held'
        before = full_tree(tmp_path)
        t0 = time.time()
        r = gaprune(*prune_args(bert, data, out, '--overwrite'))  # fisher-dom: refused before the statistics
        line = one_line_error(r)
        assert f'--out {out} is in use by another gaprune command (process {holder.pid}' in line and 'choose another folder' in line, line
        assert '== load model' not in r.stderr and time.time() - t0 < 60
        assert full_tree(tmp_path) == before  # the holder's folder and lock untouched
    finally:
        holder.send_signal(signal.SIGKILL); holder.wait()
    assert (out / '.gaprune.lock').is_file()  # a kill -9 leaves its lock: stale
    r = gaprune(*prune_args(bert, data, out, method='magnitude'))
    assert r.returncode == 0, r.stderr[-2000:]
    took = [l for l in r.stderr.splitlines() if 'took over' in l]
    assert took == [f'--out {out}: took over the lock of gaprune process {holder.pid}, which is no longer running'], r.stderr[-2000:]
    assert not list(out.glob('.gaprune.lock*')) and (out / 'gaprune_report.json').is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ['run']


def test_the_lock_is_released_and_a_new_folder_removed_when_the_run_fails(tmp_path, bert, data):
    "A failure after the output was checked (an unsupported model loads, then is refused): no lock, no folder left; the same --out works next."
    from test_bad_input import _save_tiny
    m = _save_tiny('gpt2', tmp_path / 'gpt2')
    out = tmp_path / 'a' / 'b' / 'run'
    line = one_line_error(gaprune('prune', '--model', m, '--data', data, '--method', 'magnitude', '--out', out))
    assert "model_type='gpt2'" in line, line
    assert sorted(p.name for p in tmp_path.iterdir()) == ['gpt2']  # the folders made for the lock are gone too
    (tmp_path / 'mine').mkdir()  # an empty folder of the user's: kept when a run in it fails
    one_line_error(gaprune('prune', '--model', m, '--data', data, '--method', 'magnitude', '--out', tmp_path / 'mine'))
    assert (tmp_path / 'mine').is_dir() and not list((tmp_path / 'mine').iterdir())
    assert gaprune(*prune_args(bert, data, out, method='magnitude')).returncode == 0


# 3. --speedup out of range says the real range

def test_speedup_above_the_bound_says_the_real_range(tmp_path):
    line = one_line_error(gaprune('slim', '--speedup', '1000', '--out', tmp_path / 'out'))
    assert 'above 1 and at most 100' in line and '1000' in line, line
    assert list(tmp_path.iterdir()) == []


# 4. Errors name the file, the row, the flag; checked before any work

def test_corrupt_tokenizer_json_is_named_with_what_to_do(tmp_path, bert, data):
    m = shutil.copytree(bert, tmp_path / 'model')
    (m / 'tokenizer.json').write_text('{"version": "1.0", "trunc\n')
    line = one_line_error(gaprune(*prune_args(m, data, tmp_path / 'out', method='magnitude')))
    assert f'{m}: tokenizer.json is not valid JSON (line 1, column ' in line and 'restore it' in line, line
    assert not (tmp_path / 'out').exists()


def _bad_jsonl(path, n=120):
    rows = [json.dumps(r) for r in _triplets(3, n)]
    rows.insert(7, '{"query": "broken, "positive": "x"}')
    path.write_text('\n'.join(rows) + '\n')
    return path


def test_malformed_jsonl_line_is_one_line_with_file_and_line_number(tmp_path, bert, data):
    bad = _bad_jsonl(tmp_path / 'legal.jsonl')
    r = gaprune(*prune_args(bert, data, tmp_path / 'out', '--domain', 'legal', '--domain-data', bad, method='wanda'), isolated=True)
    line = one_line_error(r)
    assert f'{bad}, line 8: not valid JSON' in line and 'fix or remove that line' in line, line
    assert r.stderr.strip().count('\n') == 0, r.stderr  # the library's own line is not printed too
    assert not (tmp_path / 'out').exists()


@pytest.mark.parametrize('cmd', ['prune', 'slim'])
def test_domain_data_is_checked_by_methods_that_read_no_data(tmp_path, bert, data, cmd):
    bad = _bad_jsonl(tmp_path / 'legal.jsonl')
    args = (prune_args(bert, data, tmp_path / 'out', method='magnitude') if cmd == 'prune' else
            slim_args(bert, data, tmp_path / 'out', '--scorer', 'magnitude', '--finetune', 'none'))
    line = one_line_error(gaprune(*args, '--domain', 'legal', '--domain-data', bad))
    assert f'{bad}, line 8: not valid JSON' in line, line
    assert sorted(p.name for p in tmp_path.iterdir()) == ['legal.jsonl']
    good = tmp_path / 'good.jsonl'; good.write_text(''.join(json.dumps(r) + '\n' for r in _triplets(3, 600)))
    r = gaprune(*args, '--domain', 'legal', '--domain-data', good)
    assert r.returncode == 0, r.stderr[-2000:]
    rep = json.loads((tmp_path / 'out' / ('gaprune_report.json' if cmd == 'prune' else 'slim_report.json')).read_text())
    assert rep['data']['domain']['sources'][0]['path'] == str(good) and rep['data']['domain']['holdout']['rows'] > 0


@pytest.mark.parametrize('flag,value,msg', [('--drop-mlp', '99', '--drop-mlp 99: the model has 2 MLP sub-layers; give 0 to 1'),
                                            ('--layers', '5', '--layers 5: the model has 2 layers; give 1 to 2')])
def test_slim_sizes_beyond_the_model_are_refused_before_any_work(tmp_path, bert, data, flag, value, msg):
    r = gaprune(*slim_args(bert, data, tmp_path / 'out', flag, value))
    line = one_line_error(r)
    assert msg in line, line
    assert '== ' not in r.stderr  # no stage started
    assert list(tmp_path.iterdir()) == []
    line = one_line_error(gaprune(*slim_args(bert, data, tmp_path / 'out', '--layers', '1', '--drop-mlp', '1')))
    assert '--drop-mlp 1: the model has 1 MLP sub-layer after --layers 1; give 0 (one at least stays' in line, line


def test_empty_out_is_named_with_a_fix(tmp_path, bert, data):
    line = one_line_error(gaprune(*prune_args(bert, data, '', method='magnitude'), cwd=tmp_path))
    assert line.endswith("error: --out '' names no folder; give the folder to write, e.g. --out runs/NAME."), line
    assert list(tmp_path.iterdir()) == []


@pytest.fixture
def mounts(tmp_path):
    "An empty read-only and an empty writable file system, mounted at tmp_path/ro and tmp_path/rw (needs root; skipped otherwise)."
    made = []
    for name, opt in (('ro', 'ro,size=1m'), ('rw', 'rw,size=64m')):
        m = tmp_path / name; m.mkdir()
        if subprocess.run(['mount', '-t', 'tmpfs', '-o', opt, 'tmpfs', str(m)], capture_output=True).returncode:
            for x in made: subprocess.run(['umount', str(x)])
            pytest.skip('cannot mount a file system here')
        made.append(m)
    yield made
    for m in made: subprocess.run(['umount', str(m)])


def test_read_only_mount_point_out_is_not_told_to_write_inside_it(tmp_path, bert, data, mounts):
    ro, rw = mounts
    line = one_line_error(gaprune(*prune_args(bert, data, ro, method='magnitude')))
    assert f'--out {ro} is a read-only mount point' in line and 'inside it' not in line and 'a disk you can write to' in line, line
    line = one_line_error(gaprune(*prune_args(bert, data, rw, method='magnitude')))  # a writable one: a folder inside it works
    suggested = re.search(r'Give a folder inside it, e\.g\. (\S+)\.$', line).group(1)
    r = gaprune(*prune_args(bert, data, suggested, method='magnitude'))
    assert r.returncode == 0, r.stderr[-2000:]
    assert (Path(suggested) / 'gaprune_report.json').is_file()


def test_analyze_out_equal_to_its_run_names_it_once_and_a_fix_that_works(tmp_path, bert, data):
    run = tmp_path / 'run'
    assert gaprune(*prune_args(bert, data, run, method='magnitude')).returncode == 0
    before = full_tree(tmp_path)
    line = one_line_error(gaprune('analyze', 'run', '--data', data, '--out', 'run', '-n', 10, '--n-boot', 10, cwd=tmp_path))
    assert line.endswith(f"error: --out run is the run folder {run}; refusing to write there. Give a new folder outside it, e.g. run-analyze."), line
    assert full_tree(tmp_path) == before
    suggested = re.search(r'e\.g\. (\S+)\.$', line).group(1)
    r = gaprune('analyze', 'run', '--data', data, '--out', suggested, '-n', 10, '--n-boot', 10, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]


# 5. The model card names the folder, not the maker's absolute path

def test_slimmed_card_loads_by_the_folders_name(tmp_path, bert, data, monkeypatch):
    from sentence_transformers import SentenceTransformer
    out = tmp_path / 'my-slim'
    export = ('--export', 'onnx') if all(__import__('importlib').util.find_spec(m) for m in ('onnx', 'onnxruntime', 'onnxscript')) else ()
    r = gaprune(*slim_args(bert, data, out, '--drop-mlp', '1', *export))
    assert r.returncode == 0, r.stderr[-2000:]
    card = (out / 'README.md').read_text()
    assert str(tmp_path) not in card, card
    assert "model = SentenceTransformer('my-slim', trust_remote_code=True)" in card
    if export: assert "model = SentenceTransformer('my-slim', backend=\"onnx\", trust_remote_code=True)" in card
    monkeypatch.chdir(tmp_path)  # the folder's parent, where a user who copied it runs the card's line
    code = re.search(r'```python\n(.*?)```', card, re.S).group(1)
    ns = {}; exec(code, ns)
    assert ns['model'].encode(['a text']).shape[0] == 1
