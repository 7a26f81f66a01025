"""Caches that are checked and calibration requests that are honoured, through the real `gaprune` command (issue 30,
"No lost files anywhere", items 8 and 9). Each case checks the message and that no user file was touched."""
import json, shutil, subprocess, sys
from pathlib import Path

import pytest

from conftest import ENV, gaprune, tree, full_tree, _triplets, prune_args, one_line_error


def _stats_files(out): return tree(out / 'stats')


@pytest.fixture(scope='module')
def clean(tmp_path_factory, bert, data):
    "A run without a cache: what every cached run must give."
    out = tmp_path_factory.mktemp('clean') / 'run'
    r = gaprune(*prune_args(bert, data, out))
    assert r.returncode == 0, r.stderr[-2000:]
    return out


@pytest.fixture(scope='module')
def cached(tmp_path_factory, bert, data):
    "A run with --cache: the cache folder it leaves (calibration triplets and finished statistics)."
    d = tmp_path_factory.mktemp('cached')
    r = gaprune(*prune_args(bert, data, d / 'run', '--cache', d / 'cache'))
    assert r.returncode == 0, r.stderr[-2000:]
    return d / 'cache'


def _rerun(tmp_path, cached, bert, data, damage):
    "Copy the cache, `damage` it, run again with it into a new folder: (result, cache folder, its tree before damage)."
    cache = tmp_path / 'cache'; shutil.copytree(cached, cache)
    pristine, data_before, bert_before = full_tree(cache), tree(data), tree(bert)
    damage(cache)
    r = gaprune(*prune_args(bert, data, tmp_path / 'run', '--cache', cache))
    assert r.returncode == 0, r.stderr[-2000:]
    assert tree(data) == data_before and tree(bert) == bert_before  # the user's data and model untouched
    return r, cache, pristine


def _calib(cache): return next(cache.glob('calibration-*'))


def _edit_line(cache):
    f = _calib(cache) / 'finance.jsonl'
    rows = f.read_text().splitlines(keepends=True)
    row = json.loads(rows[2]); row['positive'] = 'an edited positive'
    f.write_text(''.join(rows[:2] + [json.dumps(row) + '\n'] + rows[3:]))
    return f


def _drop_file(cache):
    f = _calib(cache) / 'general.jsonl'; f.unlink(); return f


def _drop_manifest(cache):
    f = _calib(cache) / 'manifest.json'; f.unlink(); return f


def _bad_manifest(cache):
    f = _calib(cache) / 'manifest.json'; f.write_text('{"files": '); return f


# 8a. Cached calibration triplets carry checksums: an edited, missing or unchecked file is reported and chosen again

@pytest.mark.parametrize('damage', [_edit_line, _drop_file, _drop_manifest, _bad_manifest])
def test_damaged_cached_calibration_is_reported_and_recomputed(tmp_path, cached, clean, bert, data, damage):
    named = {}
    r, cache, pristine = _rerun(tmp_path, cached, bert, data, lambda c: named.setdefault('f', damage(c)))
    lines = [l for l in r.stderr.splitlines() if str(named['f']) in l]
    assert len(lines) == 1 and 'recomputed' in lines[0], r.stderr[-3000:]  # one line, naming the file
    out = tmp_path / 'run'  # the same mask, statistics and triplets as a run without a cache
    assert (out / 'mask.safetensors').read_bytes() == (clean / 'mask.safetensors').read_bytes()
    assert _stats_files(out) == _stats_files(clean) and tree(out / 'calibration') == tree(clean / 'calibration')
    assert full_tree(cache) == pristine  # the cached folder replaced whole by a checked one; nothing else left behind


# 8b. Cached statistics that fail their check: said in one line, recomputed

def _damage_stats(cache):
    f = next(cache.glob('statistics-*/stats/stats.safetensors')); b = f.read_bytes()
    f.write_bytes(b[:-8] + bytes(8))
    return f


def test_damaged_cached_statistics_are_reported_and_recomputed(tmp_path, cached, clean, bert, data):
    r, cache, pristine = _rerun(tmp_path, cached, bert, data, _damage_stats)
    folder = str(next(cache.glob('statistics-*/stats')))
    lines = [l for l in r.stderr.splitlines() if folder in l and 'recomputed' in l]
    assert len(lines) == 1 and 'sha256' in lines[0], r.stderr[-3000:]  # the folder and why
    out = tmp_path / 'run'
    assert json.loads((out / 'gaprune_report.json').read_text())['resumed'] == {}  # computed, not loaded
    assert (out / 'mask.safetensors').read_bytes() == (clean / 'mask.safetensors').read_bytes()
    assert _stats_files(out) == _stats_files(clean) and full_tree(cache) == pristine  # the cache holds good ones again


# 8b'. A damaged statistics checkpoint (left by an interrupted run) is said to be dropped, and the statistics recomputed

STOP_AFTER_FIRST_CHECKPOINT = """
import gaprune_nb.fisher as f
save = f._save_checkpoint
def stop(*a):
    save(*a); raise KeyboardInterrupt  # as a kill right after the first checkpoint
f._save_checkpoint = stop
from gaprune_nb.cli import main; main()
"""


def test_damaged_checkpoint_is_reported_and_recomputed(tmp_path, clean, bert, data):
    cache, data_before = tmp_path / 'cache', tree(data)
    args = prune_args(bert, data, tmp_path / 'run', '--cache', cache, '--checkpoint-every', 1)
    r = subprocess.run([sys.executable, '-c', STOP_AFTER_FIRST_CHECKPOINT, *map(str, args)], capture_output=True, text=True,
                       env=ENV, timeout=900)
    assert r.returncode == 1 and 'interrupted' in r.stderr, r.stderr[-2000:]
    ckpt = next(cache.glob('statistics-*/checkpoint'))
    assert json.loads((ckpt / 'manifest.json').read_text())['step'] == 1
    f = ckpt / 'accumulators.safetensors'; b = f.read_bytes(); f.write_bytes(b[:-8] + bytes(8))
    r = gaprune(*args)
    assert r.returncode == 0, r.stderr[-2000:]
    lines = [l for l in r.stderr.splitlines() if str(ckpt) in l]
    assert len(lines) == 1 and 'recomputed' in lines[0] and 'sha256' in lines[0], r.stderr[-3000:]
    out = tmp_path / 'run'
    assert 'resumed from step' not in r.stderr and json.loads((out / 'gaprune_report.json').read_text())['resumed'] == {}
    assert (out / 'mask.safetensors').read_bytes() == (clean / 'mask.safetensors').read_bytes()
    assert not ckpt.exists() and tree(data) == data_before


# 9. A calibration request larger than the pool is refused before any work; a shortfall of the data is said

def test_n_calib_larger_than_pool_is_refused_before_loading(tmp_path, bert, data):
    before, data_before = full_tree(tmp_path), tree(data)
    r = gaprune(*prune_args(bert, data, tmp_path / 'run', '--n-calib', 64, '--pool', 20, method='gaprune'))
    line = one_line_error(r)
    assert line.startswith('gaprune prune: error:') and '64' in line and '20' in line and 'pool' in line, line
    assert '== load model' not in r.stderr  # refused before anything was loaded
    assert full_tree(tmp_path) == before and tree(data) == data_before  # nothing new left


@pytest.fixture(scope='module')
def split_data(tmp_path_factory):
    "A data folder whose general side is three files of 8 triplets (as the real one has three files)."
    root = tmp_path_factory.mktemp('split')
    for s, dom in enumerate(('general', 'finance')):
        rows = _triplets(s)
        for i in range(3 if dom == 'general' else 1):
            p = root / 'triplets' / dom / f'{dom}_{i}.jsonl'
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(''.join(json.dumps(r) + '\n' for r in (rows[8 * i:8 * i + 8] if dom == 'general' else rows)))
    return root


def test_fewer_rows_than_asked_are_refused_and_a_short_pool_is_warned(tmp_path, bert, data, split_data):
    "24 triplets per side asked 30: refused before any work (sources.run_data); --pool 20 balanced over three general files of 8 (6 each: 18): said, and used."
    before = full_tree(tmp_path)
    line = one_line_error(gaprune(*prune_args(bert, data, tmp_path / 'run', '--n-calib', 30, '--pool', 0, method='gaprune')))
    assert 'the general data have 24 rows, fewer than the 30 the calibration needs (n_calib)' in line, line
    assert full_tree(tmp_path) == before
    root, n, got = split_data, 20, dict(general=18)
    data_before = tree(root)
    r = gaprune(*prune_args(bert, root, tmp_path / 'run', '--n-calib', n, '--pool', 20, method='gaprune'))
    assert r.returncode == 0, r.stderr[-2000:]
    lines = [l for l in r.stderr.splitlines() if 'calibration' in l and str(n) in l and 'fewer' in l]
    assert len(lines) == 1 and all(f'{k} {v}' in lines[0] for k, v in got.items()), r.stderr[-3000:]
    rep = json.loads((tmp_path / 'run' / 'gaprune_report.json').read_text())['calibration']
    assert all(rep[k]['n'] == v for k, v in got.items())  # the report records what was used
    assert tree(root) == data_before
