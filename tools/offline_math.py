#!/usr/bin/env python3
"""Make the rendered docs' maths work offline: KaTeX from the npm registry, copied into the site.

smalldocs (our stand-in for Quarto) links KaTeX from a CDN, which a reader without internet, or a locked-down
machine, cannot reach: formulas would show as raw TeX. This script, run by `tools/docs.sh` after `nbdev_docs`:

1. fetches the pinned KaTeX release tarball from the npm registry (a package registry, reachable where PyPI is),
   once, into `$GAPRUNE_CACHE` (default `~/.cache/gaprune_nb`), and checks its sha256;
2. copies `katex.min.css`, `katex.min.js`, `contrib/auto-render.min.js` and the fonts into `<site>/site_libs/katex/`;
3. rewrites every page's CDN links to that folder (relative to the page).

Usage: python tools/offline_math.py [SITE_DIR]   (default _docs)
"""
import hashlib, io, os, sys, tarfile, urllib.request
from pathlib import Path

VERSION = '0.16.11'  # the version smalldocs 0.5.4 links
SHA256 = '8c5494c5f7d8e8bf73ff3fe64d4bd09a340e4878b7eec9bbd9ef8d8f3e24193f'
URL = f'https://registry.npmjs.org/katex/-/katex-{VERSION}.tgz'
CDN = f'https://cdn.jsdelivr.net/npm/katex@{VERSION}/dist'


def tarball() -> bytes:
    cache = Path(os.environ.get('GAPRUNE_CACHE', '~/.cache/gaprune_nb')).expanduser()/f'katex-{VERSION}.tgz'
    if not cache.exists():
        cache.parent.mkdir(parents=True, exist_ok=True)
        data = urllib.request.urlopen(URL, timeout=60).read()
        tmp = cache.with_suffix('.partial'); tmp.write_bytes(data); tmp.replace(cache)
    data = cache.read_bytes()
    if hashlib.sha256(data).hexdigest() != SHA256:
        sys.exit(f'offline_math: {cache} does not have the expected sha256; delete it and run again.')
    return data


def main(site: Path):
    if not site.is_dir(): sys.exit(f'offline_math: {site} is not a folder; run nbdev_docs first.')
    pages = [p for p in site.rglob('*.html') if CDN in p.read_text(errors='ignore')]
    dest = site/'site_libs'/'katex'
    with tarfile.open(fileobj=io.BytesIO(tarball())) as tf:
        for m in tf.getmembers():
            rel = m.name.removeprefix('package/dist/')
            if m.isfile() and m.name.startswith('package/dist/') and (rel in ('katex.min.css', 'katex.min.js', 'contrib/auto-render.min.js') or rel.startswith('fonts/')):
                (dest/rel).parent.mkdir(parents=True, exist_ok=True)
                (dest/rel).write_bytes(tf.extractfile(m).read())
    for p in pages:
        up = os.path.relpath(dest, p.parent).replace(os.sep, '/')
        p.write_text(p.read_text().replace(CDN, up))
    print(f'offline_math: KaTeX {VERSION} in {dest}; {len(pages)} pages with maths now load it from there')


if __name__ == '__main__': main(Path(sys.argv[1] if len(sys.argv) > 1 else '_docs'))
