"""`export_st_onnx`: a saved model folder gets `onnx/model.onnx` and `onnx/model_qint8_avx512_vnni.onnx`, and loading it
with the exact lines its model card carries (`SentenceTransformer(folder, backend="onnx", ...)`) gives the PyTorch
load's embeddings: dense and slimmed (non-uniform MLP widths + a dropped MLP sub-layer) folders, encoder and decoder."""
import json, re

import numpy as np
import pytest
import torch
import transformers
from transformers import AutoModel

pytest.importorskip('onnxruntime'); pytest.importorskip('onnxscript'); pytest.importorskip('optimum.onnxruntime')
from sentence_transformers import SentenceTransformer  # noqa: E402

from gaprune_nb.arch import drop_sublayers, find_layers  # noqa: E402
from gaprune_nb.core import Encoder  # noqa: E402
from gaprune_nb.fixtures import tiny_model  # noqa: E402
from gaprune_nb.onnx_export import ST_FILES, OnnxEncoder, export_onnx, export_st_onnx, st_onnx_lines  # noqa: E402
from gaprune_nb.outputs import OutputError  # noqa: E402
from gaprune_nb.slimming import remove_neurons  # noqa: E402

transformers.logging.set_verbosity_error()
TEXTS = ['Net revenue rose 12% in fiscal 2023.', 'What drives operating margin?', 'ok',
         'Cash flow from operations was negative this year, the third year running.']


def saved(arch, slim, path):
    "A tiny 3-layer model of `arch` saved as a folder; `slim`: layer 1's MLP dropped, layers 0 and 2 at widths 32 and 48."
    m, tok = tiny_model(arch)
    d = {k: v for k, v in m.config.to_dict().items() if k != 'layer_types'}
    torch.manual_seed(0)
    m = AutoModel.from_config(type(m.config).from_dict({**d, 'num_hidden_layers': 3})).eval()
    enc = Encoder(m, tok, pooling='cls' if arch in ('bert', 'mpnet') else 'last')
    if slim:
        drop_sublayers(enc, mlp=[1])
        remove_neurons(enc, {l.index: torch.arange(l.down.in_features) % (2 + l.index) != 0
                             for l in find_layers(enc) if 'down' in l.modules})
        assert m.config.gaprune_widths == [32, None, 48]
    enc.save_pretrained(path)
    return path


def card_lines(folder):
    "The `SentenceTransformer(...)` lines of the card's ONNX section, as a user would copy them."
    card = (folder/'README.md').read_text()
    sec = card[card.index('## ONNX'):]
    return re.findall(r'^model = (SentenceTransformer\(.*\))  # ', sec, flags=re.M)


def cos(a, b): return (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


@pytest.mark.parametrize('arch,slim', [('bert', False), ('bert', True), ('mpnet', True), ('qwen3', True), ('llama', False)])
def test_card_lines_load_the_exports(arch, slim, tmp_path, monkeypatch):
    folder = saved(arch, slim, tmp_path/f'{arch}-model')
    paths = export_st_onnx(folder)
    assert paths == {'onnx': folder/'onnx'/'model.onnx', 'onnx-int8': folder/'onnx'/'model_qint8_avx512_vnni.onnx',
                     'card': folder/'README.md'}
    assert sorted(p.name for p in (folder/'onnx').iterdir()) == ['model.onnx', 'model_qint8_avx512_vnni.onnx']
    lines = card_lines(folder)
    assert lines == list(st_onnx_lines(folder.name, remote=slim).values())  # the folder by its name: the card's lines run beside it
    assert lines[0] == (f'SentenceTransformer({folder.name!r}, backend="onnx"' + (', trust_remote_code=True' if slim else '') + ')')
    assert lines[1].endswith('model_kwargs={"file_name": "onnx/model_qint8_avx512_vnni.onnx"})')
    ref = SentenceTransformer(str(folder), device='cpu', trust_remote_code=slim).encode(TEXTS)
    monkeypatch.chdir(folder.parent)
    fp32, int8 = (eval(l) for l in lines)
    assert 'ORTModel' in type(fp32[0].auto_model).__name__ and fp32[0].auto_model.path.name == 'model.onnx'
    assert int8[0].auto_model.path.name == 'model_qint8_avx512_vnni.onnx'
    e = fp32.encode(TEXTS)
    assert np.abs(e - ref).max() < 1e-4
    one = np.stack([fp32.encode([t])[0] for t in TEXTS])  # other batch sizes and lengths than the traced ones
    assert np.abs(one - ref).max() < 1e-4
    c = cos(int8.encode(TEXTS), ref)
    assert c.min() > 0.98, c
    manifest = json.loads((folder/'gaprune_files.json').read_text())
    assert {k: v for k, v in manifest.items() if k.startswith('onnx/')} == {f'onnx/{ST_FILES[k]}': 'onnx' for k in ('onnx', 'onnx-int8')}


def test_one_kind_cards_and_refusals(tmp_path):
    folder = saved('bert', False, tmp_path/'m')
    with pytest.raises(ValueError, match=r"kinds must be among \['onnx', 'onnx-int8', 'onnx-int8-tensor'\]"): export_st_onnx(folder, kinds=['fp16'])
    with pytest.raises(ValueError, match='not a saved model folder'): export_st_onnx(tmp_path)
    p = export_st_onnx(folder, kinds='onnx-int8')  # only the int8 file (the fp32 graph it came from is not kept)
    assert sorted(f.name for f in (folder/'onnx').iterdir()) == ['model_qint8_avx512_vnni.onnx']
    assert len(card_lines(folder)) == 1 and 'file_name' in card_lines(folder)[0] and set(p) == {'onnx-int8', 'card'}
    export_st_onnx(folder, kinds='onnx')  # then the fp32 one: the int8 file stays, the card names both, once
    assert sorted(f.name for f in (folder/'onnx').iterdir()) == ['model.onnx', 'model_qint8_avx512_vnni.onnx']
    card = (folder/'README.md').read_text()
    assert card.count('## ONNX') == 1 and card_lines(folder) == list(st_onnx_lines(folder.name).values())
    mine = saved('bert', False, tmp_path/'mine')  # a README.md of the user's stays; an onnx/ of theirs is refused
    (mine/'README.md').write_text('my notes\n')
    assert 'card' not in export_st_onnx(mine, kinds='onnx') and (mine/'README.md').read_text() == 'my notes\n'
    other = saved('bert', False, tmp_path/'other')
    (other/'onnx').mkdir(); (other/'onnx'/'model.onnx').write_text('theirs')
    with pytest.raises(OutputError, match='did not write'): export_st_onnx(other)
    assert (other/'onnx'/'model.onnx').read_text() == 'theirs'


def test_per_tensor_file_is_the_graph_export_onnx_quantizes(tmp_path, monkeypatch):
    "`--export onnx-int8-tensor`: one scale per matrix, loaded with its card line, gives the embeddings of `export_onnx`'s int8 graph (what page 18 scores as `+int8-eager`)."
    folder = saved('bert', True, tmp_path/'m')
    export_st_onnx(folder, kinds='onnx-int8-tensor')
    assert sorted(f.name for f in (folder/'onnx').iterdir()) == ['model_qint8_per_tensor.onnx']
    line, = card_lines(folder)
    assert line.endswith('model_kwargs={"file_name": "onnx/model_qint8_per_tensor.onnx"})')
    monkeypatch.chdir(folder.parent)
    e = eval(line).encode(TEXTS)
    enc = Encoder.from_pretrained(folder, device='cpu')
    whole = OnnxEncoder(export_onnx(enc, tmp_path/'whole')['int8'], enc).encode(TEXTS)
    ref = SentenceTransformer(str(folder), device='cpu', trust_remote_code=True).encode(TEXTS)
    assert cos(e, whole).min() > 1 - 1e-5, cos(e, whole)
    assert cos(e, ref).min() > 0.95, cos(e, ref)
