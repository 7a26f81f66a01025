"The `gaprune` console script, run as users run it: a subprocess with arguments."
import os, subprocess, sys
import pytest
from gaprune_nb.cli import build_parser

ENV = {**os.environ, 'OMP_NUM_THREADS': '1', 'HF_HUB_OFFLINE': '1'}


def run(*args, **kw):
    return subprocess.run([sys.executable, '-c', 'from gaprune_nb.cli import main; main()', *args],
                          capture_output=True, text=True, env=ENV, timeout=600, **kw)


def test_bad_arguments_exit_with_usage():
    with pytest.raises(SystemExit): build_parser().parse_args(['demo', '--domain', 'law'])
    with pytest.raises(SystemExit): build_parser().parse_args([])
    r = run('demo', '--domain', 'law')
    assert r.returncode == 2 and 'invalid choice' in r.stderr


def test_demo_runs_on_real_model_and_data():
    r = run('demo', '-n', '8')
    assert r.returncode == 0, r.stderr
    assert 'positive ranked above hard negative' in r.stdout and 'encoder.layer.0.intermediate.dense' in r.stdout


def test_missing_data_folder_is_a_clear_error(tmp_path):
    r = run('demo', '-n', '8', '--data', str(tmp_path / 'nowhere'))
    assert r.returncode == 1 and 'nowhere' in r.stderr and 'Traceback' not in r.stderr
