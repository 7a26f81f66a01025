"Tests for `gaprune_nb.data` that the notebook cannot easily run: data-root precedence and the hub column mapping."
import json

import pytest

from gaprune_nb.data import DataError, _hub, data_root, load_triplets


def test_argument_beats_env(tmp_path, monkeypatch):
    env, arg = tmp_path/"env", tmp_path/"arg"
    env.mkdir(); arg.mkdir()
    monkeypatch.setenv("GAPRUNE_DATA", str(env))
    assert data_root(arg) == arg
    assert data_root(str(arg)) == arg
    assert data_root() == env


def test_unset_env_raises_clear_error(monkeypatch):
    monkeypatch.delenv("GAPRUNE_DATA", raising=False)
    with pytest.raises(DataError, match="GAPRUNE_DATA") as e: data_root()
    assert "root=" in str(e.value) and isinstance(e.value, ValueError)
    monkeypatch.setenv("GAPRUNE_DATA", "")  # empty counts as unset
    with pytest.raises(DataError, match="set the environment variable GAPRUNE_DATA"): data_root()


def test_missing_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("GAPRUNE_DATA", str(tmp_path/"nope"))
    with pytest.raises(DataError, match="does not exist"): data_root()
    with pytest.raises(DataError, match="does not exist"): data_root(tmp_path/"also-nope")


def test_catalog_name_uses_env_root(tmp_path, monkeypatch):
    f = tmp_path/"triplets/finance/tiny.jsonl"
    f.parent.mkdir(parents=True)
    f.write_text(json.dumps({"query": "q", "positive": "p", "negative": "n"}) + "\n")
    monkeypatch.setenv("GAPRUNE_DATA", str(tmp_path))
    assert load_triplets("finance/tiny")[0] == {"query": "q", "positive": "p", "negative": "n"}
    monkeypatch.delenv("GAPRUNE_DATA")
    with pytest.raises(DataError, match="GAPRUNE_DATA"): load_triplets("finance/tiny")
    assert len(load_triplets("finance/tiny", root=tmp_path)) == 1


def test_hub_column_mapping(tmp_path):
    "The hub code path renames aliases (`anchor` -> `query`); exercised with the local `json` builder, no network."
    f = tmp_path/"st.jsonl"
    f.write_text(json.dumps({"anchor": "q", "positive": "p", "negative": "n", "extra": 1}) + "\n")
    ds = _hub("json", ["query", "positive", "negative"], data_files=str(f), split="train", cache_dir=str(tmp_path/"cache"))
    assert ds.column_names == ["query", "positive", "negative"] and ds[0]["query"] == "q"
    with pytest.raises(DataError, match="no column for \\['score'\\]"):
        _hub("json", ["query", "score"], data_files=str(f), split="train", cache_dir=str(tmp_path/"cache"))
