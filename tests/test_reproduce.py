"A run folder's saved settings alone reproduce it bit for bit: mask and weights, for each kind of method (issue 10)."
import json
from dataclasses import replace
import pytest, torch
from safetensors.torch import load_file
from gaprune_nb.core import Encoder, write_model_files
from gaprune_nb.fixtures import minilm_path, tiny_model
from gaprune_nb.masks import load_mask
from gaprune_nb.registry import DAIConfig, OBDConfig
from gaprune_nb.pipeline import RunConfig, prune_run

CASES = {  # one method per kind of input: gradient statistics (two estimators, non-default score settings), activations + OBS update
    'obd-kfac': dict(method='obd-kfac', score=OBDConfig(lam=0.5)),
    'gaprune-paper': dict(method='gaprune-paper', score=DAIConfig(beta=0.5, normalize='rms')),
    'wanda-row+obs': dict(method='wanda', scope='row', update='obs'),
}


@pytest.fixture(scope='module')
def tiny(tmp_path_factory):
    "A tiny random BERT model folder: what is reproduced is the run folder's settings, not a model's size."
    folder = tmp_path_factory.mktemp('models')/'tiny'
    write_model_files(Encoder(*tiny_model('bert', seed=2)), folder)
    return str(folder.resolve())


@pytest.mark.parametrize('case', list(CASES))
def test_saved_config_reproduces_the_run(tmp_path, case, tiny):
    "Prune into a folder; `RunConfig.from_run` on it alone, run again in memory, gives the same config, the same mask and the same weights."
    cfg = RunConfig(**CASES[case], model=tiny, sparsity=0.4, n_calib=8, pool=200, batch_size=4, max_length=64, seed=3)
    out = tmp_path/'run'
    prune_run(cfg, out=out, show_progress=False)
    again = RunConfig.from_run(out)
    assert again == cfg
    enc, mask, _ = prune_run(again, show_progress=False)
    saved = load_mask(out/'mask.safetensors')
    assert mask.keys() == saved.keys() and all(torch.equal(mask[k], saved[k]) for k in mask)
    weights = {k: v for f in out.glob('*.safetensors') if f.name != 'mask.safetensors' for k, v in load_file(f).items()}
    mine = {k: v for k, v in enc.model.state_dict().items() if k in weights}
    assert len(mine) == len(weights) > 0 and all(torch.equal(mine[k], weights[k]) for k in mine)
    assert sum(int((~m).sum()) for m in mask.values()) > 0  # something was pruned


OLD_SCORE = {**vars(DAIConfig()), **vars(OBDConfig())}  # what run folders saved before each family had its own config


def test_an_old_run_folder_loads_and_reproduces(tmp_path, tiny):
    """A run folder as written before `DAIConfig` / `OBDConfig`: its config's `score` is one 16-field dict (other families'
    fields set too, as `--beta 0` with the default method recorded them) and its method may be `gaprune`. `from_run`
    reads the method's family from it (the rest was never read) and the run again gives the saved mask bit for bit."""
    cfg = RunConfig(method='gaprune', model=tiny, sparsity=0.4, n_calib=8, pool=200, batch_size=4, max_length=64, seed=3)
    out = tmp_path/'run'
    _, _, rep = prune_run(cfg, out=out, show_progress=False)
    assert rep['config']['method'] == 'gaprune' and rep['method'] == 'wanda-row'  # as asked, and canonical
    f = out/'gaprune_report.json'
    saved = json.loads(f.read_text())
    saved['config']['score'] = {**OLD_SCORE, 'beta': 0.0, 'lam': 0.5}  # the old form, with a setting of another family recorded
    saved.pop('method')
    f.write_text(json.dumps(saved))
    again = RunConfig.from_run(out)
    assert again == cfg
    _, mask, _ = prune_run(again, show_progress=False)
    old = load_mask(out/'mask.safetensors')
    assert mask.keys() == old.keys() and all(torch.equal(mask[k], old[k]) for k in mask)


def test_a_passed_encoder_is_recorded_and_reproduced(tmp_path):
    """prune_run(encoder=...) records the folder the encoder came from: `from_run` reloads that model (not the MiniLM default)
    and gives the same mask; another `model`, or an encoder built in memory, is refused with a message."""
    folder = tmp_path/'tiny'
    folder.mkdir()
    write_model_files(Encoder(*tiny_model('bert', seed=2)), folder)
    cfg = RunConfig(method='gaprune', sparsity=0.4, n_calib=8, pool=100, batch_size=4, max_length=32, seed=1)
    _, mask, rep = prune_run(cfg, out=tmp_path/'run', encoder=Encoder.from_pretrained(folder), show_progress=False)
    again = RunConfig.from_run(tmp_path/'run')
    assert rep['config']['model'] == again.model == str(folder.resolve()) and again == replace(cfg, model=again.model)
    _, mask2, _ = prune_run(again, show_progress=False)
    assert mask.keys() == mask2.keys() and all(torch.equal(mask[k], mask2[k]) for k in mask)
    with pytest.raises(ValueError, match='but the encoder passed was loaded from'):
        prune_run(RunConfig(model=str(minilm_path())), encoder=Encoder.from_pretrained(folder), show_progress=False)
    prune_run(cfg, out=tmp_path/'mem', encoder=Encoder(*tiny_model('bert', seed=2)), show_progress=False)
    with pytest.raises(ValueError, match='built in memory'): RunConfig.from_run(tmp_path/'mem')
