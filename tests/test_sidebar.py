"Issue 53: the docs' sidebar is committed (settings.ini custom_sidebar = True) and reaches every page."
from pathlib import Path
import yaml

ROOT = Path(__file__).resolve().parents[1]


def listed(contents) -> list[str]:
    "The notebooks a sidebar `contents:` names, sections unfolded, in order."
    out = []
    for c in contents:
        if isinstance(c, str): out.append(c)
        elif isinstance(c, dict) and 'contents' in c: out += listed(c['contents'])
        elif isinstance(c, dict) and 'href' in c: out.append(c['href'])
    return out


def test_sidebar_lists_every_notebook_once():
    side = yaml.safe_load((ROOT/'nbs'/'sidebar.yml').read_text())['website']['sidebar']['contents']
    names = listed(side)
    nbs = sorted(p.name for p in (ROOT/'nbs').glob('*.ipynb'))
    assert sorted(set(names) - set(nbs)) == [], 'the sidebar names notebooks that do not exist'
    assert sorted(set(nbs) - set(names)) == [], 'notebooks missing from nbs/sidebar.yml: add each to its stage'
    assert len(names) == len(set(names)), 'a notebook is listed twice'
    assert names[:2] == ['index.ipynb', 'tutorial_your_domain.ipynb'], 'start here: the home page, then the tutorial'
    assert 'custom_sidebar = True' in (ROOT/'settings.ini').read_text(), 'nbdev_docs would overwrite nbs/sidebar.yml'
