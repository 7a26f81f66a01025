#!/usr/bin/env python3
"""Execute notebooks in place and save their outputs (figures, tables) into them.

    python tools/run_nb.py nbs/03_fisher.ipynb [more.ipynb ...] [--slow]

Cells are skipped exactly as `nbdev_test` skips them: `#| eval: false` cells, `nbdev_export()` calls, and cells
flagged with a `tst_flags` flag (`#| slow`) unless `--slow` is given. Stops at the first error (nothing is written
then), so a saved notebook is always one whose cells all ran.
"""
import os, re, sys, time
from pathlib import Path

from execnb.nbio import read_nb, write_nb
from execnb.shell import CaptureShell


def directives(src: str) -> dict:
    "The `#| key: value` lines at the top of a cell, as nbdev reads them."
    out = {}
    for line in src.splitlines():
        m = re.match(r"^#\|\s*([\w-]+)\s*:?\s*(.*)$", line.strip())
        if not m:
            if line.strip() and not line.strip().startswith("#"): break
            continue
        out[m.group(1).lower()] = m.group(2).strip()
    return out


def run(path: Path, slow: bool = False) -> float:
    nb = read_nb(path)
    flags = set() if slow else {"slow"}

    def skip(cell):
        if cell.cell_type != "code": return True
        if "nbdev_export" + "(" in cell.source: return True
        d = directives(cell.source)
        if d.get("eval", "").lower() == "false": return True
        return bool(flags & d.keys())

    for cell in nb.cells:   # execnb keeps a cell's old outputs when it prints nothing now: clear them first
        if not skip(cell): cell.outputs = []
    shell = CaptureShell(path)
    t = time.time()
    cwd = os.getcwd()
    os.chdir(path.parent)
    try:
        shell.run_all(nb, exc_stop=True, preproc=skip)
    except Exception:
        sys.stderr.write(shell.prettytb(fname=path) + "\n")
        raise SystemExit(1)
    finally:
        os.chdir(cwd)
    write_nb(nb, path)
    return time.time() - t


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    for a in args:
        print(f"{a}: ran in {run(Path(a), slow='--slow' in sys.argv):.1f}s", flush=True)
