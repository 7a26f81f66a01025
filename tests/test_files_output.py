"""Issue "No lost files anywhere", items 1-6 and the read-only `--out` of item 7: every command that writes keeps what it
did not make, never writes into what it reads, cleans up after an interrupted save, and fails before the work.

Each test runs the real `gaprune` command (a subprocess, offline) on the tiny fixtures of `conftest.py` and compares the
whole file tree before and after (`full_tree`: every entry, hidden ones included, with its sha256 and mode)."""
import json, os, shutil, signal, subprocess, sys, time
from pathlib import Path

import pytest

from conftest import ENV, full_tree, gaprune, one_line_error, prune_args

REAL_DATA = os.environ.get('GAPRUNE_DATA') or str(Path(__file__).resolve().parents[2] / 'shared' / 'data')


@pytest.fixture(scope='module')
def finished_run(tmp_path_factory, bert, data):
    "A complete `gaprune prune` run folder (magnitude: no statistics), copied fresh by each test that changes it."
    out = tmp_path_factory.mktemp('finished') / 'run'
    r = gaprune(*prune_args(bert, data, out, method='magnitude'))
    assert r.returncode == 0, r.stderr[-2000:]
    return out


def copy_run(src, dst):
    shutil.copytree(src, dst, symlinks=True)
    return dst


# 1. --overwrite keeps (by refusing) what a user added to a previous run folder

def test_overwrite_refuses_and_names_user_files_added_to_a_run(tmp_path, finished_run, bert, data):
    run = copy_run(finished_run, tmp_path / 'R')
    (run / 'NOTES.txt').write_text('x'); (run / 'my_plots').mkdir()
    before = full_tree(tmp_path)
    line = one_line_error(gaprune(*prune_args(bert, data, run, '--overwrite', method='magnitude')))
    assert 'NOTES.txt' in line and 'my_plots/' in line and 'did not write' in line, line
    assert full_tree(tmp_path) == before
    (run / 'NOTES.txt').unlink(); (run / 'my_plots').rmdir()  # the run's own files only: replaced
    r = gaprune(*prune_args(bert, data, run, '--overwrite', '--sparsity', '0.3', method='magnitude'))
    assert r.returncode == 0, r.stderr[-2000:]
    assert json.loads((run / 'gaprune_report.json').read_text())['config']['sparsity'] == 0.3
    assert sorted(p.name for p in tmp_path.iterdir()) == ['R']


def test_overwrite_refuses_a_file_added_inside_a_run_subfolder_and_another_kind_of_run(tmp_path, finished_run, bert, data):
    run = copy_run(finished_run, tmp_path / 'R')
    (run / '1_Pooling' / 'mine.txt').write_text('mine')
    before = full_tree(tmp_path)
    assert '1_Pooling/' in one_line_error(gaprune(*prune_args(bert, data, run, '--overwrite', method='magnitude')))
    assert full_tree(tmp_path) == before
    (run / '1_Pooling' / 'mine.txt').unlink()  # a prune run is not a slim run: slim --overwrite does not replace it
    line = one_line_error(gaprune('slim', '--model', bert, '--data', data, '--out', run, '--overwrite', '--no-eval'))
    assert 'which a gaprune slim run did not write' in line, line
    assert full_tree(tmp_path) == {k: v for k, v in before.items() if k != 'R/1_Pooling/mine.txt'}


# 2. eval --json writes only a new file or a previous eval report, never into what it reads, and says so first

def test_eval_json_never_writes_into_the_data_or_model_folder_or_over_a_user_file(tmp_path, bert, data):
    (tmp_path / 'mine.json').write_text('{"my": "numbers"}')
    before, data_before, model_before = full_tree(tmp_path), full_tree(data), full_tree(bert)
    (data / 'README.md').write_text('the data folder readme'); data_before = full_tree(data)
    for target, msg in [(data / 'README.md', 'is inside the data folder'), (data / 'new.json', 'is inside the data folder'),
                        (bert / 'report.json', 'is inside the model folder'), (tmp_path / 'mine.json', 'was not written by gaprune_nb'),
                        (tmp_path, 'is a folder; give a file name')]:
        t0 = time.time()
        line = one_line_error(gaprune('eval', '--model', bert, '--data', data, '--limit', 'tiny', '--json', target))
        assert msg in line and str(target) in line, line
        assert time.time() - t0 < 60  # refused before the evaluation (the suites are not even in this data folder)
    assert full_tree(tmp_path) == before and full_tree(data) == data_before and full_tree(bert) == model_before


# 3. analyze --out: new or empty, or a previous analyze output with --overwrite; never the data folder

def test_analyze_out_refuses_user_folders_and_the_data_folder(tmp_path, finished_run, data):
    user = tmp_path / 'mine'; user.mkdir(); (user / 'geometry.csv').write_text('my table')
    before, data_before = full_tree(tmp_path), full_tree(data)
    line = one_line_error(gaprune('analyze', finished_run, '--data', data, '--out', user))
    assert 'exists and is not empty' in line, line
    line = one_line_error(gaprune('analyze', finished_run, '--data', data, '--out', user, '--overwrite'))
    assert 'did not write' in line, line
    line = one_line_error(gaprune('analyze', finished_run, '--data', data, '--out', data))
    assert 'is the data folder' in line, line
    line = one_line_error(gaprune('analyze', finished_run, '--data', data, '--out', finished_run / 'geo'))
    assert 'is inside the run folder' in line, line
    assert full_tree(tmp_path) == before and full_tree(data) == data_before


# 4. --out is never the model, the cache or the statistics read; --cache is never --out

def test_out_equal_to_model_cache_or_stats_is_refused(tmp_path, bert, data, finished_run):
    cache = tmp_path / 'cache'
    r = gaprune(*prune_args(bert, data, tmp_path / 'a', '--cache', cache))
    assert r.returncode == 0, r.stderr[-2000:]
    model = copy_run(finished_run, tmp_path / 'model')  # a previous run used as the model to prune again
    before = full_tree(tmp_path)
    for args, msg in [((model, data, model, '--overwrite'), 'is the model folder'),
                      ((model, data, model / 'sub'), 'is inside the model folder'),
                      ((bert, data, cache, '--cache', cache, '--overwrite'), 'is the cache folder'),
                      ((bert, data, tmp_path / 'b', '--cache', tmp_path / 'b' / 'cache'), 'contains the cache folder'),
                      ((bert, data, tmp_path / 'a', '--overwrite', '--stats', tmp_path / 'a' / 'stats'), 'contains the statistics folder')]:
        line = one_line_error(gaprune(*prune_args(*args)))
        assert msg in line, (msg, line)
    assert full_tree(tmp_path) == before


# 5. Hidden temporary folders of an interrupted save are removed, and named, by the next run into the same place

def test_stale_temporary_folders_are_removed_and_named(tmp_path, bert, data):
    dead = subprocess.run([sys.executable, '-c', 'import os; print(os.getpid())'], capture_output=True, text=True).stdout.strip()
    stale = [tmp_path / f'.run.tmp-{dead}-0badf00d', tmp_path / '.run.tmp-1a2b3c4d']  # this version's name, and an older one's
    for s in stale:
        (s / 'stats').mkdir(parents=True); (s / 'model.safetensors').write_bytes(b'\0' * (1 << 20))
    (tmp_path / 'keep.txt').write_text('mine')
    r = gaprune(*prune_args(bert, data, tmp_path / 'run', method='magnitude'))
    assert r.returncode == 0, r.stderr[-2000:]
    for s in stale: assert f'removed {s} (1.0 MB)' in r.stderr, r.stderr[-2000:]
    assert sorted(p.name for p in tmp_path.iterdir()) == ['keep.txt', 'run']


def test_kill_during_save_leaves_nothing_the_next_run_does_not_remove(tmp_path, bert, data):
    "kill -9 while the model is written: the real leftover, removed by the rerun (which then succeeds)."
    out = tmp_path / 'run'
    proc = subprocess.Popen([sys.executable, '-c', 'from gaprune_nb.cli import main; main()',
                             *map(str, prune_args(bert, data, out, method='magnitude'))],
                            env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        for line in proc.stderr:
            if line.startswith('== save'): break
        t0 = time.time()
        while not list(tmp_path.glob('.run.tmp-*')) and time.time() - t0 < 30: time.sleep(0.001)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.kill(); proc.wait()
    left = sorted(p.name for p in tmp_path.glob('.run.*'))
    if out.exists(): pytest.skip('the save finished before the kill')
    assert left, 'the kill left no temporary folder (nothing to check)'
    r = gaprune(*prune_args(bert, data, out, method='magnitude'))
    assert r.returncode == 0, r.stderr[-2000:]
    for name in left: assert f'removed {tmp_path / name}' in r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ['run']


@pytest.fixture
def read_only_mount(tmp_path):
    "An empty read-only file system mounted at tmp_path/ro (needs root; skipped otherwise)."
    mnt = tmp_path / 'ro'; mnt.mkdir()
    if subprocess.run(['mount', '-t', 'tmpfs', '-o', 'ro,size=1m', 'tmpfs', str(mnt)], capture_output=True).returncode:
        pytest.skip('cannot mount a read-only file system here')
    yield mnt
    subprocess.run(['umount', str(mnt)])


def test_read_only_out_and_mount_point_are_refused_before_any_work(tmp_path, bert, data, read_only_mount):
    before = full_tree(tmp_path)
    t0 = time.time()
    line = one_line_error(gaprune(*prune_args(bert, data, read_only_mount / 'run')))  # fisher-dom: statistics before the save
    assert f'--out {read_only_mount / "run"}: cannot write in {read_only_mount} (Read-only file system)' in line, line
    line = one_line_error(gaprune(*prune_args(bert, data, read_only_mount)))
    assert 'is a read-only mount point' in line and 'a disk you can write to' in line, line  # a folder inside it would fail too (a writable one: test_fault_probe)
    assert time.time() - t0 < 60
    assert full_tree(tmp_path) == before  # no temporary folder beside it, no work folder


def test_too_little_disk_space_is_refused_before_the_statistics(tmp_path, bert, data, monkeypatch):
    "The free-space check, through the Python API (the disk cannot be filled in a test): refused after the model loads, before any statistics."
    import shutil as sh
    from gaprune_nb.pipeline import RunConfig, prune_run
    real = sh.disk_usage
    monkeypatch.setattr(sh, 'disk_usage', lambda p: real(p)._replace(free=1 << 20))
    cfg = RunConfig(model=str(bert), data=str(data), method='fisher-dom', n_calib=8, pool=None, batch_size=4)
    with pytest.raises(ValueError, match=r'--out .*: its disk has 1 MB free, but the run needs about \d+ MB'):
        prune_run(cfg, out=tmp_path / 'run', show_progress=False)
    assert list(tmp_path.iterdir()) == []


# 6. Ctrl-C in `gaprune run`'s evaluation: the message is true, and the same command then finishes the run

def test_ctrl_c_in_evaluation_then_the_same_command_evaluates_the_saved_model(tmp_path, bert):
    if not Path(REAL_DATA, 'triplets').is_dir(): pytest.skip('real data folder not found (set GAPRUNE_DATA)')
    out = tmp_path / 'run'
    args = ['run', '--model', str(bert), '--method', 'magnitude', '--data', REAL_DATA, '--limit', 'tiny', '--out', str(out)]
    proc = subprocess.Popen([sys.executable, '-c', 'from gaprune_nb.cli import main; main()', *args],
                            env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        for line in proc.stderr:
            if line.startswith('== evaluate'): break  # printed inside the evaluation: Ctrl-C at once (a tiny model's
        proc.send_signal(signal.SIGINT)                   # evaluation can end within a second of a busy machine's delay)
        err = proc.stderr.read()
        proc.wait(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 1, err[-2000:]
    last = err.strip().splitlines()[-1]
    assert 'interrupted in the evaluation' in last and 'rerun the same command to evaluate it' in last, last
    saved = full_tree(out)
    assert 'evaluation' not in json.loads((out / 'gaprune_report.json').read_text())
    r = gaprune(*args)
    assert r.returncode == 0, r.stderr[-2000:]
    assert 'not yet evaluated: evaluating it' in r.stderr and '== load model' not in r.stderr
    assert 'finance' in json.loads((out / 'gaprune_report.json').read_text())['evaluation']
    after = full_tree(out)  # only the report gained the evaluation (and the log and report page, written with it, are in the file list); the model and mask are as saved
    mine = lambda t: {k: v for k, v in t.items() if not k.startswith(('gaprune_report', 'gaprune.log', 'gaprune_files.json', 'report.html'))}
    assert mine(after) == mine(saved) and {'gaprune.log', 'report.html'} <= set(json.loads((out / 'gaprune_files.json').read_text()))
    assert sorted(p.name for p in tmp_path.iterdir()) == ['run']


def test_eval_json_replaces_its_own_previous_report(tmp_path, bert):
    "The other half of the rule: a report `gaprune eval --json` wrote may be replaced by the next one (the same command twice)."
    if not Path(REAL_DATA, 'retrieval').is_dir(): pytest.skip('real data folder not found (set GAPRUNE_DATA)')
    out = tmp_path / 'reports' / 'tiny.json'
    for _ in range(2):
        r = gaprune('eval', '--model', bert, '--data', REAL_DATA, '--limit', 'tiny', '--suite', 'general', '--json', out)
        assert r.returncode == 0, r.stderr[-2000:]
    assert set(json.loads(out.read_text())) >= {'model', 'scores', 'types'}
    assert [p.name for p in out.parent.iterdir()] == ['tiny.json']  # no temporary file left beside it
