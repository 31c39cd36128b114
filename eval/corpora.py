"""Download and unpack the pinned code bases used by the retrieval golden sets.

Stdlib only.  Usage::

    python -m eval.corpora [--dest DIR]      # default DIR: eval/corpora/

or, from Python::

    from eval.corpora import ensure_corpora
    roots = ensure_corpora(Path("eval/corpora"))   # {"pallets/click": Path(...), ...}

Every archive is pinned by version *and* sha256.  Archives are cached under
``DEST/.archives/`` and a marker ``DEST/<root>.sha256`` records the digest each
tree was unpacked from (and the pinned subset, for a corpus with ``include``), so a
second run does no network I/O at all.  If the direct download fails, the ordinary
package client (pip / npm / mvn / apt-get) is tried as a fallback; the digest is
verified either way.  Go module proxy zips and crates have no fallback client
(``go mod download`` and ``cargo`` would need a toolchain and fetch from the same
hosts anyway).
"""

from __future__ import annotations

import argparse
import fnmatch
import hashlib
import io
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
    ecosystem: str  # "pypi" | "npm" | "maven" | "go" | "crates" | "debian"
    package: str  # package coordinate for the fallback client
    version: str
    url: str
    sha256: str
    archive: str  # file name of the archive
    root: str  # name of the unpacked source root under DEST
    # Leading archive folder(s) to strip, "a" or "a/b/c" (None: keep as is).  A tuple
    # of folders takes each member from the first folder it is under and skips the
    # members under none of them (a .deb also holds files outside the package's own).
    strip: str | tuple[str, ...] | None
    golden: str  # golden-set file stem in eval/golden/
    # Pinned subset: shell-style patterns matched against each member's path after
    # stripping (``*`` also matches ``/``).  Empty: unpack everything.
    include: tuple[str, ...] = ()

    def wants(self, rel: PurePosixPath) -> bool:
        return not self.include or any(fnmatch.fnmatchcase(str(rel), p) for p in self.include)

    @property
    def tree_id(self) -> str:
        """What the marker records: the archive digest, plus the subset when there is one."""
        if not self.include:
            return self.sha256
        subset = hashlib.sha256("\n".join(self.include).encode()).hexdigest()[:16]
        return f"{self.sha256} include:{subset}"


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
    Corpus(
        repo="google/uuid",
        ecosystem="go",
        package="github.com/google/uuid",
        version="v1.6.0",
        url="https://proxy.golang.org/github.com/google/uuid/@v/v1.6.0.zip",
        sha256="d0f02f377217f42702e259684e06441edbf5140dddcc34ba9bea56038b38a6ed",
        archive="uuid-v1.6.0.zip",
        root="uuid-v1.6.0",
        strip="github.com/google/uuid@v1.6.0",
        golden="uuid",
    ),
    Corpus(
        repo="dtolnay/semver",
        ecosystem="crates",
        package="semver",
        version="1.0.23",
        url="https://static.crates.io/crates/semver/semver-1.0.23.crate",
        sha256="61697e0a1c7e512e84a621326239844a24d8207b4669b41bc18b32ea5cbf988b",
        archive="semver-1.0.23.crate",
        root="semver-1.0.23",
        strip="semver-1.0.23",
        golden="semver",
    ),
    Corpus(
        repo="madler/zlib",
        ecosystem="crates",
        package="libz-sys",
        version="1.1.20",  # vendors zlib 1.3.1 under src/zlib/
        url="https://static.crates.io/crates/libz-sys/libz-sys-1.1.20.crate",
        sha256="d2d16453e800a8cf6dd2fc3eb4bc99b786a9b90c663b8559a5b1a041bf89e472",
        archive="libz-sys-1.1.20.crate",
        root="libz-sys-1.1.20",
        strip="libz-sys-1.1.20",
        golden="zlib",
        # zlib's C sources and headers, without zlib-ng, the Rust side and the
        # generated CRC/Huffman tables (crc32.h, trees.h, inffixed.h).
        include=(
            "README.md",
            "Cargo.toml",
            "src/zlib/*.c",
            "src/zlib/deflate.h",
            "src/zlib/gzguts.h",
            "src/zlib/inffast.h",
            "src/zlib/inflate.h",
            "src/zlib/inftrees.h",
            "src/zlib/zconf.h",
            "src/zlib/zlib.h",
            "src/zlib/zutil.h",
        ),
    ),
    Corpus(
        repo="dry-rb/dry-inflector",
        ecosystem="debian",
        package="ruby-dry-inflector=0.2.1-1",
        version="0.2.1",  # Debian 12 (bookworm) package 0.2.1-1; rubygems.org is not used
        url=(
            "http://deb.debian.org/debian/pool/main/r/ruby-dry-inflector/"
            "ruby-dry-inflector_0.2.1-1_all.deb"
        ),
        sha256="c45cc20cbadc4475d9e361a8d7fc3072dd61f1d50febb90206e7d09170dfcc4d",
        archive="ruby-dry-inflector_0.2.1-1_all.deb",
        root="dry-inflector-0.2.1",
        strip=(
            "usr/share/rubygems-integration/all/gems/dry-inflector-0.2.1",
            "usr/share/doc/ruby-dry-inflector",
        ),
        golden="dry_inflector",
        include=("lib/*", "README.md"),
    ),
    Corpus(
        repo="pythonnet/pythonnet",
        ecosystem="pypi",
        package="pythonnet",
        version="3.0.5",
        url=(
            "https://files.pythonhosted.org/packages/9a/d6/"
            "1afd75edd932306ae9bd2c2d961d603dc2b52fcec51b04afea464f1f6646/"
            "pythonnet-3.0.5.tar.gz"
        ),
        sha256="48e43ca463941b3608b32b4e236db92d8d40db4c58a75ace902985f76dac21cf",
        archive="pythonnet-3.0.5.tar.gz",
        root="pythonnet-3.0.5",
        strip="pythonnet-3.0.5",
        golden="pythonnet",
        # The C# wrappers of Python objects and the conversion codecs (about 50
        # files), not the whole runtime, the Python side or the tests.
        include=(
            "README.rst",
            "src/runtime/Codecs/*.cs",
            "src/runtime/CollectionWrappers/*.cs",
            "src/runtime/PythonTypes/*.cs",
        ),
    ),
    Corpus(
        repo="composer/semver",
        ecosystem="debian",
        package="php-composer-semver=3.3.2-1",
        version="3.3.2",  # Debian 12 (bookworm) package 3.3.2-1; Packagist is not used
        url=(
            "http://deb.debian.org/debian/pool/main/p/php-composer-semver/"
            "php-composer-semver_3.3.2-1_all.deb"
        ),
        sha256="b9995a9a1f4a54d84413252ede10fbbdcd008723c446ba3ea6aed80c36469829",
        archive="php-composer-semver_3.3.2-1_all.deb",
        root="composer-semver-3.3.2",
        strip=("usr/share/php/Composer/Semver", "usr/share/doc/php-composer-semver"),
        golden="composer_semver",
        # the library's src/ as installed, without Debian's generated autoload.php
        include=("[A-Z]*.php", "README.md"),
    ),
    # One npm package, two corpora: its Android side (Kotlin) and its iOS side (Swift).
    Corpus(
        repo="expo/expo-modules-core-kotlin",
        ecosystem="npm",
        package="expo-modules-core",
        version="1.12.9",
        url="https://registry.npmjs.org/expo-modules-core/-/expo-modules-core-1.12.9.tgz",
        sha256="6af0cd947a4623ca01ec4d0dece72e21fde70244aa2138149eccf5b1c55efe52",
        archive="expo-modules-core-1.12.9.tgz",
        root="expo-modules-core-1.12.9-kotlin",
        strip="package",
        golden="expo_kotlin",
        # the type converters, records and UUIDv5 helper of the Kotlin module API
        include=(
            "README.md",
            "package.json",
            "android/src/main/java/expo/modules/kotlin/types/*.kt",
            "android/src/main/java/expo/modules/kotlin/records/*.kt",
            "android/src/main/java/expo/modules/kotlin/uuidv5/*.kt",
        ),
    ),
    Corpus(
        repo="expo/expo-modules-core-swift",
        ecosystem="npm",
        package="expo-modules-core",
        version="1.12.9",
        url="https://registry.npmjs.org/expo-modules-core/-/expo-modules-core-1.12.9.tgz",
        sha256="6af0cd947a4623ca01ec4d0dece72e21fde70244aa2138149eccf5b1c55efe52",
        archive="expo-modules-core-1.12.9.tgz",
        root="expo-modules-core-1.12.9-swift",
        strip="package",
        golden="expo_swift",
        # the dynamic types, records, convertibles, arguments and UUIDv5 helper
        include=(
            "README.md",
            "package.json",
            "ios/Core/DynamicTypes/*.swift",
            "ios/Core/Records/*.swift",
            "ios/Core/Convertibles/*.swift",
            "ios/Core/Arguments/*.swift",
            "ios/Uuidv5/*.swift",
        ),
    ),
    Corpus(
        repo="s-yata/marisa-trie",
        ecosystem="pypi",
        package="marisa-trie",
        version="1.2.1",  # the Python binding's sdist; it vendors the C++ library
        url=(
            "https://files.pythonhosted.org/packages/31/15/"
            "9d9743897e4450b2de199ee673b50cb018980c4ced477d41cf91304a85e3/"
            "marisa_trie-1.2.1.tar.gz"
        ),
        sha256="3a27c408e2aefc03e0f1d25b2ff2afb85aac3568f6fa2ae2a53b57a2e87ce29d",
        archive="marisa_trie-1.2.1.tar.gz",
        root="marisa_trie-1.2.1",
        strip="marisa_trie-1.2.1",
        golden="marisa_trie",
        # the vendored C++ library and the docs, not the Cython-generated src/*.cpp
        include=(
            "README.rst",
            "CHANGES.rst",
            "setup.cfg",
            "marisa-trie/include/*",
            "marisa-trie/lib/*",
        ),
    ),
)

BY_REPO = {c.repo: c for c in CORPORA}
# Go module proxy zips and .crate files are fetched only from their URL.
NO_FALLBACK_CLIENT = frozenset({"go", "crates"})


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
    if c.ecosystem in NO_FALLBACK_CLIENT:
        raise CorpusError(f"no fallback client for {c.ecosystem} archives")
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
        elif c.ecosystem == "debian":  # apt-get download needs no root
            cmd = ["apt-get", "download", c.package]
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


def _safe_rel(name: str, strip: str | tuple[str, ...] | None) -> PurePosixPath | None:
    p = PurePosixPath(name)
    if p.is_absolute() or ".." in p.parts:
        raise CorpusError(f"unsafe member path in archive: {name}")
    parts = p.parts
    if isinstance(strip, tuple):
        for folder in strip:
            prefix = PurePosixPath(folder).parts
            if parts[: len(prefix)] == prefix:
                parts = parts[len(prefix) :]
                break
        else:
            return None  # not part of the package's own files
    elif strip is not None:
        prefix = PurePosixPath(strip).parts
        if parts[: len(prefix)] != prefix:
            raise CorpusError(f"unexpected member outside {strip}/: {name}")
        parts = parts[len(prefix) :]
    if not parts:
        return None
    return PurePosixPath(*parts)


def _deb_data(archive: Path) -> bytes:
    """The ``data.tar.*`` member of a .deb (an ``ar`` archive)."""
    blob = archive.read_bytes()
    if not blob.startswith(b"!<arch>\n"):
        raise CorpusError(f"not a .deb (ar) archive: {archive.name}")
    pos = 8
    while pos + 60 <= len(blob):
        header = blob[pos : pos + 60]
        name = header[:16].decode("ascii").strip().rstrip("/")
        size = int(header[48:58].decode("ascii").strip())
        pos += 60
        if name.startswith("data.tar"):
            return blob[pos : pos + size]
        pos += size + (size % 2)
    raise CorpusError(f"no data.tar member in {archive.name}")


def _open_tar(archive: Path) -> tarfile.TarFile:
    if archive.name.endswith(".deb"):
        return tarfile.open(fileobj=io.BytesIO(_deb_data(archive)), mode="r:*")
    return tarfile.open(archive, "r:gz")  # .tar.gz, .tgz and .crate


def _unpack(c: Corpus, archive: Path, target: Path) -> None:
    target.mkdir(parents=True)
    if c.archive.endswith((".tar.gz", ".tgz", ".crate", ".deb")):
        with _open_tar(archive) as tf:
            for m in tf.getmembers():
                rel = _safe_rel(m.name, c.strip)
                if rel is None or m.isdir() or not c.wants(rel):
                    continue
                if not m.isfile():  # skip links/devices: not needed for eval
                    continue
                dst = target.joinpath(*rel.parts)
                if dst.exists():
                    raise CorpusError(f"two archive members unpack to {rel}")
                dst.parent.mkdir(parents=True, exist_ok=True)
                src = tf.extractfile(m)
                assert src is not None
                with src, dst.open("wb") as f:
                    shutil.copyfileobj(src, f)
    elif c.archive.endswith((".jar", ".zip")):
        with zipfile.ZipFile(archive) as zf:
            for info in zf.infolist():
                rel = _safe_rel(info.filename, c.strip)
                if rel is None or info.is_dir() or not c.wants(rel):
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
    if root.is_dir() and marker.is_file() and marker.read_text().strip() == c.tree_id:
        return root
    archive = fetch_archive(c, dest / ".archives")
    marker.unlink(missing_ok=True)
    tmp = dest / (c.root + ".unpacking")
    shutil.rmtree(tmp, ignore_errors=True)
    _unpack(c, archive, tmp)
    shutil.rmtree(root, ignore_errors=True)
    os.replace(tmp, root)
    marker.write_text(c.tree_id + "\n")
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
