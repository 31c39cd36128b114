"""Download and unpack the pinned code bases used by the retrieval golden sets.

Stdlib only.  Usage::

    python -m eval.corpora [--dest DIR]      # default DIR: eval/corpora/

or, from Python::

    from eval.corpora import ensure_corpora
    roots = ensure_corpora(Path("eval/corpora"))   # {"pallets/click": Path(...), ...}

Every archive is pinned by version *and* sha256.  Archives are cached under
``DEST/.archives/`` and a marker ``DEST/<root>.sha256`` records the digest each
tree was unpacked from, so a second run does no network I/O at all.  If the direct
download fails, the ordinary package client (pip / npm / mvn) is tried as a
fallback; the digest is verified either way.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

DEFAULT_DEST = Path(__file__).resolve().parent / "corpora"
MARKER_SUFFIX = ".sha256"  # DEST/<root>.sha256 records what DEST/<root> was unpacked from


@dataclass(frozen=True)
class Corpus:
    repo: str  # "<owner>/<name>" as used in the golden sets
    ecosystem: str  # "pypi" | "npm" | "maven"
    package: str  # package coordinate for the fallback client
    version: str
    url: str
    sha256: str
    archive: str  # file name of the archive
    root: str  # name of the unpacked source root under DEST
    strip: str | None  # leading archive folder to strip (None: keep as is)
    golden: str  # golden-set file stem in eval/golden/


CORPORA: tuple[Corpus, ...] = (
    Corpus(
        repo="pallets/click",
        ecosystem="pypi",
        package="click",
        version="8.1.7",
        url=(
            "https://files.pythonhosted.org/packages/96/d3/"
            "f04c7bfcf5c1862a2a5b845c6b2b360488cf47af55dfa79c98f6a6bf98b5/"
            "click-8.1.7.tar.gz"
        ),
        sha256="ca9853ad459e787e2192211578cc907e7594e294c7ccc834310722b41b9ca6de",
        archive="click-8.1.7.tar.gz",
        root="click-8.1.7",
        strip="click-8.1.7",
        golden="click",
    ),
    Corpus(
        repo="koajs/koa",
        ecosystem="npm",
        package="koa",
        version="2.15.3",
        url="https://registry.npmjs.org/koa/-/koa-2.15.3.tgz",
        sha256="23b9a334640c93f61306e1941dc87b6001b0273230482fb9138243de870727f1",
        archive="koa-2.15.3.tgz",
        root="koa-2.15.3",
        strip="package",
        golden="koa",
    ),
    Corpus(
        repo="mobxjs/mobx",
        ecosystem="npm",
        package="mobx",
        version="6.13.3",
        url="https://registry.npmjs.org/mobx/-/mobx-6.13.3.tgz",
        sha256="d531f0048c4b76aac9a6a743a60722bfd2ae24c6c18eab33ace3ef3dd173f477",
        archive="mobx-6.13.3.tgz",
        root="mobx-6.13.3",
        strip="package",
        golden="mobx",
    ),
    Corpus(
        repo="google/gson",
        ecosystem="maven",
        package="com.google.code.gson:gson:2.11.0:jar:sources",
        version="2.11.0",
        url=(
            "https://repo1.maven.org/maven2/com/google/code/gson/gson/2.11.0/"
            "gson-2.11.0-sources.jar"
        ),
        sha256="49a853f71bc874ee1898a4ad5009b57d0c536e5a998b3890253ffbf4b7276ad3",
        archive="gson-2.11.0-sources.jar",
        root="gson-2.11.0-sources",
        strip=None,
        golden="gson",
    ),
)

BY_REPO = {c.repo: c for c in CORPORA}


class CorpusError(RuntimeError):
    pass


class DownloadError(CorpusError):
    """Every way of fetching the archive failed (typically: no network)."""


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _download_url(c: Corpus, out: Path) -> None:
    req = urllib.request.Request(c.url, headers={"User-Agent": "codeask-eval/1"})
    with urllib.request.urlopen(req, timeout=120) as resp, out.open("wb") as f:
        shutil.copyfileobj(resp, f)


def _download_client(c: Corpus, out: Path) -> None:
    """Fallback: let the ecosystem's own client fetch the archive."""
    with tempfile.TemporaryDirectory() as tmp:
        if c.ecosystem == "pypi":
            cmd = [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--no-binary",
                ":all:",
                "-d",
                tmp,
                f"{c.package}=={c.version}",
            ]
        elif c.ecosystem == "npm":
            cmd = ["npm", "pack", f"{c.package}@{c.version}", "--pack-destination", tmp]
        elif c.ecosystem == "maven":
            cmd = [
                "mvn",
                "-q",
                "-B",
                "dependency:copy",
                f"-Dartifact={c.package}",
                f"-DoutputDirectory={tmp}",
            ]
        else:  # pragma: no cover
            raise CorpusError(f"unknown ecosystem {c.ecosystem}")
        subprocess.run(
            cmd, check=True, cwd=tmp, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=600
        )
        got = Path(tmp) / c.archive
        if not got.exists():
            raise CorpusError(f"{cmd[0]} did not produce {c.archive}")
        shutil.move(str(got), out)


def fetch_archive(c: Corpus, cache: Path) -> Path:
    """Return the path of the verified archive, downloading it if needed."""
    cache.mkdir(parents=True, exist_ok=True)
    path = cache / c.archive
    if path.exists() and _sha256(path) == c.sha256:
        return path
    errors: list[str] = []
    for method in (_download_url, _download_client):
        part = cache / (c.archive + ".part")
        part.unlink(missing_ok=True)
        try:
            method(c, part)
        except Exception as exc:  # collect the failure and try the next way
            errors.append(f"{method.__name__}: {exc}")
            part.unlink(missing_ok=True)
            continue
        digest = _sha256(part)
        if digest != c.sha256:
            part.unlink(missing_ok=True)
            raise CorpusError(f"sha256 mismatch for {c.archive}: got {digest}, pinned {c.sha256}")
        os.replace(part, path)
        return path
    raise DownloadError(f"could not download {c.archive}: " + "; ".join(errors))


def _safe_rel(name: str, strip: str | None) -> PurePosixPath | None:
    p = PurePosixPath(name)
    if p.is_absolute() or ".." in p.parts:
        raise CorpusError(f"unsafe member path in archive: {name}")
    parts = p.parts
    if strip is not None:
        if not parts or parts[0] != strip:
            raise CorpusError(f"unexpected member outside {strip}/: {name}")
        parts = parts[1:]
    if not parts:
        return None
    return PurePosixPath(*parts)


def _unpack(c: Corpus, archive: Path, target: Path) -> None:
    target.mkdir(parents=True)
    if c.archive.endswith((".tar.gz", ".tgz")):
        with tarfile.open(archive, "r:gz") as tf:
            for m in tf.getmembers():
                rel = _safe_rel(m.name, c.strip)
                if rel is None or m.isdir():
                    continue
                if not m.isfile():  # skip links/devices: not needed for eval
                    continue
                dst = target.joinpath(*rel.parts)
                dst.parent.mkdir(parents=True, exist_ok=True)
                src = tf.extractfile(m)
                assert src is not None
                with src, dst.open("wb") as f:
                    shutil.copyfileobj(src, f)
    elif c.archive.endswith((".jar", ".zip")):
        with zipfile.ZipFile(archive) as zf:
            for info in zf.infolist():
                rel = _safe_rel(info.filename, c.strip)
                if rel is None or info.is_dir():
                    continue
                dst = target.joinpath(*rel.parts)
                dst.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(info) as src, dst.open("wb") as f:
                    shutil.copyfileobj(src, f)
    else:  # pragma: no cover
        raise CorpusError(f"unknown archive type: {c.archive}")


def ensure_corpus(c: Corpus, dest: Path) -> Path:
    """Unpack one corpus under *dest* (if not already there) and return its root.

    The marker recording the archive digest lives *beside* the root
    (``DEST/<root>.sha256``) so that the unpacked tree holds exactly the files
    of the published archive and nothing else.
    """
    dest = Path(dest)
    root = dest / c.root
    marker = dest / (c.root + MARKER_SUFFIX)
    if root.is_dir() and marker.is_file() and marker.read_text().strip() == c.sha256:
        return root
    archive = fetch_archive(c, dest / ".archives")
    marker.unlink(missing_ok=True)
    tmp = dest / (c.root + ".unpacking")
    shutil.rmtree(tmp, ignore_errors=True)
    _unpack(c, archive, tmp)
    shutil.rmtree(root, ignore_errors=True)
    os.replace(tmp, root)
    marker.write_text(c.sha256 + "\n")
    return root


def ensure_corpora(dest: Path = DEFAULT_DEST) -> dict[str, Path]:
    """Make sure every pinned corpus is unpacked under *dest*.

    Returns ``{repo name: unpacked source root}``.  Raises
    :class:`DownloadError` when an archive cannot be fetched at all.
    """
    return {c.repo: ensure_corpus(c, Path(dest)) for c in CORPORA}


def _count_files(root: Path) -> int:
    return sum(1 for p in root.rglob("*") if p.is_file())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m eval.corpora", description=__doc__.split("\n")[0])
    ap.add_argument(
        "--dest", type=Path, default=DEFAULT_DEST, help=f"where to unpack (default: {DEFAULT_DEST})"
    )
    args = ap.parse_args(argv)
    roots = ensure_corpora(args.dest)
    for c in CORPORA:
        root = roots[c.repo]
        print(f"{c.repo:16} {c.version:8} {_count_files(root):5} files  {root}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
