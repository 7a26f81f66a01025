#!/usr/bin/env python3
"""Check the rendered docs site as a reader meets it:

    python3 tools/check_site.py _docs        (run at the end of tools/docs.sh)

Exit 1 on a broken link or a page written twice; pages without results and small figures are reported
(`--strict` fails on them too).

1. **Links**: every link to a page of the site (relative, or absolute under the site's own URL as nbdev writes its
   doc links), with or without `#anchor`, reaches a file that exists and, for an anchor, an element with that id.
2. **Results**: every page whose notebook shows code cells also shows at least one result of running them (an output
   that is not an API signature from `show_doc`): a page of code and no results says the notebook was saved unrun.
3. **Once**: every page is written once: no two pages of the site have the same content under two names.
4. **Figures** (headless Chromium, skipped with a message when it cannot run): at a 1280-px-wide window, no `<img>`
   is shown at less than 60% of its natural width (its `width` attribute for a figure saved at twice its size), where
   its labels become too small to read.
"""
import hashlib, html, json, re, shutil, subprocess, sys, tempfile
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from html.parser import HTMLParser
from pathlib import Path, PurePosixPath
from urllib.parse import unquote, urlsplit

MIN_SCALE = 0.6   # an image shown narrower than this fraction of its natural width is reported
WINDOW = 1280


class Scan(HTMLParser):
    "The ids, links and images of one page."
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ids, self.links = set(), []
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("id"): self.ids.add(a["id"])
        if tag == "a" and a.get("name"): self.ids.add(a["name"])
        if tag == "a" and a.get("href") is not None: self.links.append(a["href"])


def pages(site: Path) -> list[Path]:
    return sorted(p for p in site.rglob("*.html") if "site_libs" not in p.relative_to(site).parts)


def site_url(site: Path) -> str | None:
    "The site's own address (nbdev writes its doc links absolute under it), from the sitemap."
    sm = site / "sitemap.xml"
    if not sm.exists(): return None
    locs = re.findall(r"<loc>([^<]+)</loc>", sm.read_text())
    idx = [l for l in locs if l.endswith("/index.html") or l.endswith("/")]
    base = idx[0] if idx else (locs[0] if locs else None)
    return base.rsplit("/", 1)[0] + "/" if base else None


def check_links(site: Path, scans: dict) -> list[str]:
    base, bad = site_url(site), []
    for page, scan in scans.items():
        for href in scan.links:
            h = href.strip()
            if base and h.startswith(base): h = h[len(base):] or "index.html"
            elif h.startswith(("//", "javascript:")) or re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", h): continue
            u = urlsplit(h)
            target = page if not u.path else (page.parent / unquote(u.path)).resolve()
            if target.is_dir(): target = target / "index.html"
            rel = page.relative_to(site)
            if not target.exists():
                bad.append(f"{rel}: {href} -> no such file"); continue
            if u.fragment and target.suffix == ".html":
                ids = scans[target].ids if target in scans else Scan().ids
                if unquote(u.fragment) not in ids: bad.append(f"{rel}: {href} -> no element with id {unquote(u.fragment)!r}")
    return sorted(set(bad))


CELL = re.compile(r'<div id="cell-[^"]*" class="cell">(.*?)(?=<div id="cell-[^"]*" class="cell">|</main>)', re.S)
OUTPUT = re.compile(r'<div class="cell-output[^"]*">(.*?)</div>', re.S)


def is_signature(out: str) -> bool:
    "An output of `show_doc`: a rule, the link to the source, then the name as a heading."
    return bool(re.match(r'\s*<hr />\s*<p><a href="[^"]*"[^>]*>source</a></p>', out))


def check_results(site: Path) -> list[str]:
    none = []
    for page in pages(site):
        text = page.read_text(errors="ignore")
        cells = CELL.findall(text)
        code = sum("cell-code" in c for c in cells)
        results = sum(not is_signature(o) for c in cells for o in OUTPUT.findall(c))
        if code and not results: none.append(f"{page.relative_to(site)}: {code} code cells, no output{notebook_of(site, page)}")
    return none


def notebook_of(site: Path, page: Path) -> str:
    "The notebook a page comes from, for the message (nbdev's processed copies name their `output-file`)."
    proc = site.parent / "_proc"
    for nb in sorted(proc.glob("*.ipynb")) if proc.exists() else []:
        try: first = "".join(json.loads(nb.read_text())["cells"][0]["source"])
        except Exception: continue
        if re.search(rf"^output-file:\s*{re.escape(page.name)}\s*$", first, re.M): return f" (nbs/{nb.name})"
    return ""


def check_once(site: Path) -> list[str]:
    "Pages whose content (the `<main>` of the page, without the navigation) is another page's."
    seen = defaultdict(list)
    for page in pages(site):
        m = re.search(r"<main.*?</main>", page.read_text(errors="ignore"), re.S)
        if m: seen[hashlib.sha256(m.group(0).encode()).hexdigest()].append(str(page.relative_to(site)))
    return [" = ".join(names) for names in seen.values() if len(names) > 1]


PROBE = """<script>window.addEventListener('load', () => setTimeout(() => {
  const r = [...document.images].map(i => ({src: i.getAttribute('src') || '', alt: i.alt || '',
             natural: parseInt(i.getAttribute('width')) || i.naturalWidth,   // a retina figure's own width, else its pixels
             shown: Math.round(i.getBoundingClientRect().width)}));
  const p = document.createElement('pre'); p.id = '__check_site_images'; p.textContent = JSON.stringify(r);
  document.body.appendChild(p); }, 300));</script>"""


def chromium() -> str | None:
    exe = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if not exe: return None
    try:
        ok = subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu", "--version"], capture_output=True, timeout=60)
        return exe if ok.returncode == 0 else None
    except Exception: return None


def measure(exe: str, page: Path) -> list[dict]:
    "Each image of the page: its natural width and the width it is shown at, in a 1280-px-wide window."
    probe = page.with_name(f".check_site_{page.name}")   # beside the page, so that its relative paths resolve
    text = page.read_text(errors="ignore")
    probe.write_text(text.replace("</body>", PROBE + "</body>") if "</body>" in text else text + PROBE)
    try:
        with tempfile.TemporaryDirectory() as prof:
            dom = subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars",
                                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                                  f"--user-data-dir={prof}", f"--window-size={WINDOW},2000", "--virtual-time-budget=8000",
                                  "--dump-dom", probe.resolve().as_uri()], capture_output=True, text=True, timeout=180).stdout
    finally:
        probe.unlink(missing_ok=True)
    m = re.search(r'<pre id="__check_site_images">(.*?)</pre>', dom, re.S)
    return json.loads(html.unescape(m.group(1))) if m else None


def check_images(site: Path) -> tuple[list[str], str]:
    exe = chromium()
    if not exe: return [], "chromium cannot run here: image widths not checked"
    todo = [p for p in pages(site) if "<img" in p.read_text(errors="ignore")]
    small, n_img, failed = [], 0, []
    with ThreadPoolExecutor(2) as ex:
        for page, imgs in zip(todo, ex.map(lambda p: measure(exe, p), todo)):
            if imgs is None: failed.append(page.name); continue
            for i in imgs:
                if not i["natural"] or not i["shown"]: continue   # not loaded, or hidden (a folded section)
                n_img += 1
                if i["shown"] < MIN_SCALE * i["natural"]:
                    src = i["src"] if not i["src"].startswith("data:") else f"inline {i['src'][:22]}..."
                    small.append(f"{page.relative_to(site)}: {src} {i['natural']} px shown at {i['shown']} px "
                                 f"({i['shown'] / i['natural']:.0%})")
    note = f"{n_img} images on {len(todo)} pages measured at a {WINDOW}-px window"
    if failed: note += f"; could not measure {', '.join(failed)}"
    return small, note


def main(site="_docs", strict=False):
    site = Path(site).resolve()
    scans = {}
    for p in pages(site):
        s = Scan(); s.feed(p.read_text(errors="ignore")); scans[p.resolve()] = s
    n_links = sum(len(s.links) for s in scans.values())
    sections = [("broken links", check_links(site, scans), f"{n_links} links on {len(scans)} pages"),
                ("pages with code and no output", check_results(site), ""),
                ("pages written twice", check_once(site), "")]
    small, note = check_images(site)
    sections.append((f"images shown at < {MIN_SCALE:.0%} of their width", small, note))
    errors = warnings = 0
    for i, (name, found, note) in enumerate(sections):
        fatal = strict or i in (0, 2)   # broken links and pages written twice always fail
        print(f"check_site: {len(found)} {name}" + (f" ({note})" if note else "") + ("" if fatal or not found else " [reported]"))
        for f in found: print(f"  {f}")
        errors += len(found) if fatal else 0
        warnings += 0 if fatal else len(found)
    print("check_site: " + (f"{errors} problem(s)" if errors else "no broken link, every page written once")
          + (f"; {warnings} reported" if warnings else ""))
    return int(errors > 0)


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    sys.exit(main(*args, strict="--strict" in sys.argv))
