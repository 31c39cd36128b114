"""``make preview``: the messages of :mod:`scripts.preview.views` as PNGs, via headless Chromium.

Each view becomes one HTML page (the renderer's JSON embedded, drawn by ``slack.js`` or by
the ``adaptivecards`` package through ``teams.js``); Chromium loads it once to measure
its height and once more to take a screenshot, cut to that height.

    python -m scripts.preview.preview [--html-only] [--pages DIR] [--images DIR]
"""

from __future__ import annotations

import argparse
import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from scripts.preview.png import crop_top
from scripts.preview.views import View, all_views

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
PAGES = ROOT / "build" / "preview"
IMAGES = ROOT / "docs" / "images" / "preview"
NODE_MODULES = HERE / "node_modules"
MARKDOWN_IT = NODE_MODULES / "markdown-it" / "dist" / "markdown-it.min.js"
ADAPTIVE_CARDS = NODE_MODULES / "adaptivecards" / "dist" / "adaptivecards.min.js"
WIDTH = {"slack": 720, "teams": 760}
PARALLEL = 2  # Chromium instances at once
BROWSERS = ("chromium", "chromium-browser", "google-chrome")
INSTALL_HINT = "apt-get install chromium fonts-lato fonts-noto-color-emoji"
# Virtual time lets scripts and fonts settle before Chromium dumps or shoots the page.
SETTLE_MS = 3000
# Chromium draws a short window wrongly (the page cut off well above its bottom), so it
# shoots a taller one and the picture is cut to the page's height afterwards.
EXTRA_HEIGHT = 300
HEIGHT = re.compile(r"<title>height:(\d+)</title>")
PROBLEMS = re.compile(r'<pre id="problems">(.*?)</pre>', re.DOTALL)

PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>loading</title>
<link rel="stylesheet" href="{css}">
</head>
<body>
<div id="root"></div>
<pre id="problems"></pre>
<script type="application/json" id="view">{view}</script>
{scripts}
<script>document.title = "height:" + Math.ceil(document.body.getBoundingClientRect().height);</script>
</body>
</html>
"""


def view_json(view: View) -> str:
    """The view as the page embeds it: JSON in which no ``<`` can close the script tag."""
    data = {
        "name": view.name,
        "kind": view.kind,
        "payload": view.payload,
        "note": view.note,
        "question": view.question,
    }
    return json.dumps(data, ensure_ascii=False, indent=1).replace("<", "\\u003c")


def page_html(view: View) -> str:
    libraries = [MARKDOWN_IT] + ([ADAPTIVE_CARDS] if view.platform == "teams" else [])
    scripts = [*libraries, HERE / f"{view.platform}.js"]
    return PAGE.format(
        css=(HERE / f"{view.platform}.css").as_uri(),
        view=view_json(view),
        scripts="\n".join(f'<script src="{s.as_uri()}"></script>' for s in scripts),
    )


def write_pages(views: list[View], folder: Path) -> list[Path]:
    """One ``NAME.html`` per view in ``folder`` (made if missing)."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for view in views:
        path = folder / f"{view.name}.html"
        path.write_text(page_html(view), encoding="utf-8")
        paths.append(path)
    return paths


def find_browser() -> str | None:
    named = os.environ.get("CHROMIUM")
    if named:
        return shutil.which(named)
    return next((found for b in BROWSERS if (found := shutil.which(b))), None)


def _chromium(browser: str, profile: Path, width: int, height: int, *args: str) -> str:
    command = [
        browser,
        "--headless",
        "--disable-gpu",
        "--no-sandbox",
        "--hide-scrollbars",
        "--force-device-scale-factor=1",
        "--no-first-run",
        "--run-all-compositor-stages-before-draw",
        f"--user-data-dir={profile}",
        f"--window-size={width},{height}",
        f"--virtual-time-budget={SETTLE_MS}",
        *args,
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"chromium failed ({done.returncode}): {done.stderr[-2000:]}")
    return done.stdout


def shoot(browser: str, page: Path, png: Path, width: int) -> list[str]:
    """Screenshot ``page`` at its own height; returns the problems the page reported."""
    with tempfile.TemporaryDirectory(prefix="codeask-preview-") as profile:
        dom = _chromium(browser, Path(profile), width, 200, "--dump-dom", page.as_uri())
        found = HEIGHT.search(dom)
        if not found:
            raise RuntimeError(f"{page.name}: the page did not report its height")
        problems = PROBLEMS.search(dom)
        reported = html.unescape(problems.group(1)).strip() if problems else "no problem list"
        height = int(found.group(1))
        png.parent.mkdir(parents=True, exist_ok=True)
        _chromium(
            browser,
            Path(profile),
            width,
            height + EXTRA_HEIGHT,
            f"--screenshot={png}",
            page.as_uri(),
        )
    png.write_bytes(crop_top(png.read_bytes(), height))
    return reported.splitlines()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--html-only", action="store_true", help="write the pages, no PNGs")
    parser.add_argument("--pages", type=Path, default=PAGES, help=f"default: {PAGES}")
    parser.add_argument("--images", type=Path, default=IMAGES, help=f"default: {IMAGES}")
    args = parser.parse_args(argv)
    views = all_views()
    pages = write_pages(views, args.pages)
    print(f"wrote {len(pages)} pages to {args.pages}")
    if args.html_only:
        return 0
    browser = find_browser()
    if browser is None:
        print(f"make preview needs Chromium: {INSTALL_HINT}", file=sys.stderr)
        return 1
    if not ADAPTIVE_CARDS.exists() or not MARKDOWN_IT.exists():
        print(f"run `npm ci` in {HERE} first", file=sys.stderr)
        return 1

    def one(view: View, page: Path) -> tuple[Path, float, list[str]]:
        started = time.perf_counter()
        png = args.images / f"{view.name}.png"
        problems = shoot(browser, page, png, WIDTH[view.platform])
        return png, time.perf_counter() - started, problems

    failed = False
    with ThreadPoolExecutor(PARALLEL) as pool:
        for view, (png, seconds, problems) in zip(views, pool.map(one, views, pages), strict=True):
            shown = png.relative_to(ROOT) if png.is_relative_to(ROOT) else png
            print(f"{shown}: {png.stat().st_size // 1024} KB, {seconds:.1f} s")
            for problem in problems:
                print(f"  {view.name}: {problem}", file=sys.stderr)
                failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
