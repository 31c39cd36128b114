"""Files and chunks of a repository as they were at one commit (never the working tree's future)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

from indexer.errors import IndexingError
from indexer.models import Chunk
from indexer.source import (
    LOCK_FILES,
    SKIP_DIRS,
    SourceFile,
    chunk_file,
    git_blob_sha,
    is_git_repo,
    language_for,
    run_git,
    walk_repository,
)

MAX_FILE_BYTES = 1_000_000


def _indexable(path: str) -> str | None:
    parts = path.split("/")
    if any(p in SKIP_DIRS for p in parts[:-1]) or parts[-1] in LOCK_FILES:
        return None
    return language_for(path)


def read_blob(root: Path, commit: str, path: str) -> bytes | None:
    """The bytes of ``path`` at ``commit``, or None when it does not exist there."""
    try:
        done = subprocess.run(
            ["git", "-C", str(root), "show", f"{commit}:{path}"],
            capture_output=True,
            check=True,
            timeout=60,
        )
    except subprocess.CalledProcessError:
        return None
    except (subprocess.TimeoutExpired, OSError) as exc:
        raise IndexingError(f"git show failed: {exc}") from exc
    return done.stdout


def files_at(root: Path, commit: str) -> Iterator[SourceFile]:
    """Indexable files of ``root`` at ``commit``; with no commit, the folder as it is."""
    if not commit or not is_git_repo(root):
        for item in walk_repository(root, MAX_FILE_BYTES):
            if isinstance(item, SourceFile):
                yield item
        return
    listing = run_git(["ls-tree", "-r", "-z", "--long", commit], cwd=root)
    for entry in listing.split("\0"):
        if not entry:
            continue
        meta, _, path = entry.partition("\t")
        mode, kind, _sha, size = meta.split()
        language = _indexable(path)
        if kind != "blob" or mode == "120000" or language is None:
            continue
        if size != "-" and int(size) > MAX_FILE_BYTES:
            continue
        data = read_blob(root, commit, path)
        if data is None or b"\0" in data[:8192]:
            continue
        yield SourceFile(path, language, data, git_blob_sha(data))


def chunks_of(f: SourceFile, repo: str, commit: str) -> list[Chunk]:
    return chunk_file(f.path, f.language, f.data, repo=repo, commit=commit, blob_sha=f.blob_sha)


def chunks_at(root: Path, repo: str, commit: str) -> list[Chunk]:
    """Every chunk of the repository at ``commit`` (the indexed snapshot)."""
    return [c for f in files_at(root, commit) for c in chunks_of(f, repo, commit)]


def file_chunks_at(root: Path, repo: str, commit: str, path: str) -> list[Chunk]:
    """Chunks of one file at ``commit``; empty when the file is gone or not indexable."""
    language = _indexable(path)
    if language is None:
        return []
    data = read_blob(root, commit, path)
    if data is None or b"\0" in data[:8192] or len(data) > MAX_FILE_BYTES:
        return []
    return chunks_of(SourceFile(path, language, data, git_blob_sha(data)), repo, commit)
