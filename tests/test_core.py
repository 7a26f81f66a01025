"Round trips and bad input for the Encoder, MLP discovery and fixtures (what notebooks cannot check well)."
import json
import numpy as np, pytest, torch
from sentence_transformers import SentenceTransformer
from transformers import AutoModel

from gaprune_nb.core import Encoder, UnsupportedArchitecture
from gaprune_nb.arch import find_layers, mlp_linears
from gaprune_nb.fixtures import FixtureMissing, minilm_path, smollm2_path, tiny_model

TEXTS = ['What was the net revenue in 2023?', 'Operating income rose 8%.', 'short']


@pytest.fixture(scope='module')
def minilm(): return Encoder.from_pretrained(minilm_path())


def test_minilm_round_trip_three_loaders(minilm, tmp_path):
    "save_pretrained -> Encoder / SentenceTransformer / AutoModel all give the same embeddings as in memory."
    enc = Encoder(minilm.model, minilm.tokenizer, query_prompt='Represent the question: ', max_length=64)
    ref_q, ref_d = enc.encode(TEXTS, kind='query'), enc.encode(TEXTS)
    enc.save_pretrained(tmp_path)
    back = Encoder.from_pretrained(tmp_path)
    assert back.settings == enc.settings
    np.testing.assert_array_equal(back.encode(TEXTS, kind='query'), ref_q)
    st = SentenceTransformer(str(tmp_path), device='cpu')
    np.testing.assert_allclose(st.encode(TEXTS, prompt_name='query'), ref_q, atol=1e-5)
    np.testing.assert_allclose(st.encode(TEXTS), ref_d, atol=1e-5)
    raw = Encoder(AutoModel.from_pretrained(tmp_path), minilm.tokenizer, max_length=64)
    np.testing.assert_array_equal(raw.encode(TEXTS), ref_d)


def test_saved_settings_are_json(minilm, tmp_path):
    minilm.save_pretrained(tmp_path)
    assert json.loads((tmp_path / 'gaprune_encoder.json').read_text())['pooling'] == 'mean'
    assert json.loads((tmp_path / '1_Pooling' / 'config.json').read_text())['pooling_mode'] == 'mean'


def test_arguments_override_saved_settings(minilm, tmp_path):
    minilm.save_pretrained(tmp_path)
    assert Encoder.from_pretrained(tmp_path, pooling='cls', max_length=32).settings['pooling'] == 'cls'


def test_bad_input():
    m, tok = tiny_model('bert')
    enc = Encoder(m, tok)
    with pytest.raises(TypeError, match='list of texts'): enc.encode('a string')
    with pytest.raises(ValueError, match="kind must be"): enc(['x'], kind='passage')
    with pytest.raises(ValueError, match='Unknown pooling'): Encoder(m, tok, pooling='max')
    with pytest.raises(UnsupportedArchitecture, match='Supported model types'): find_layers(torch.nn.Linear(2, 2))


def test_mlp_discovery_on_real_minilm(minilm):
    lin = mlp_linears(minilm)
    assert len(lin) == 12 and all(minilm.get_submodule(n) is m for n, m in lin.items())
    assert sum(m.weight.numel() for m in lin.values()) == 6 * 2 * 384 * 1536


def test_missing_fixture_names_the_command(tmp_path, monkeypatch):
    monkeypatch.setenv('GAPRUNE_CACHE', str(tmp_path))
    with pytest.raises(FixtureMissing, match='python -m gaprune_nb.fixtures'): smollm2_path()


def test_failed_save_leaves_nothing_behind(tmp_path, monkeypatch):
    m, tok = tiny_model('llama')
    enc = Encoder(m, tok)
    def boom(*a, **k): raise RuntimeError('disk full')
    monkeypatch.setattr(tok, 'save_pretrained', boom)
    with pytest.raises(RuntimeError, match='disk full'): enc.save_pretrained(tmp_path / 'out')
    assert list(tmp_path.iterdir()) == []


def test_token_limit_never_exceeds_the_models_positions(tmp_path):
    "A folder whose tokenizer says 512 but whose model has 256 positions loads with 256 (texts longer would index past the table); asking for more is one clear error."
    from gaprune_nb.core import Encoder, ModelLoadError
    from gaprune_nb.fixtures import tiny_model
    Encoder(*tiny_model('bert')).save_pretrained(tmp_path / 'm')
    enc = Encoder.from_pretrained(tmp_path / 'm')
    room = enc.model.config.max_position_embeddings
    assert enc.max_length == room < 512
    enc.encode(['word ' * 600], kind='document')  # a text past the limit is truncated, not an IndexError
    with pytest.raises(ModelLoadError, match=f'max_length {room + 1} is more than its {room} positions'):
        Encoder.from_pretrained(tmp_path / 'm', max_length=room + 1)
