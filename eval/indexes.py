"""Building the indexes the evaluation runs against: the product index and ablation variants.

The product index goes through ``index_repository`` unchanged. The variants (naive
windows, structural chunks without the header) are written to their own SQLite stores
and share the embedding cache, so a second run embeds nothing.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from eval.naive_chunks import naive_chunks
from indexer.embedding import Embedder, EmbeddingCache, embed_with_cache, embedding_text
from indexer.jobs import IndexReport, ProgressFn, index_repository
from indexer.models import Chunk, RepoState
from indexer.source import (
    IMPORT_LINE,
    SourceFile,
    chunk_file,
    head_commit,
    split_lines,
    walk_repository,
)
from indexer.stores import SearchBackend

# (file, repo name, commit) -> chunks
Chunker = Callable[[SourceFile, str, str], list[Chunk]]


def structural(f: SourceFile, repo: str, commit: str) -> list[Chunk]:
    return chunk_file(
        f.path,
        f.language,
        f.data,
        repo=repo,
        visibility="public",
        commit=commit,
        blob_sha=f.blob_sha,
    )


def structural_without_header(f: SourceFile, repo: str, commit: str) -> list[Chunk]:
    return [dataclasses.replace(c, header="") for c in structural(f, repo, commit)]


def structural_with_every_import(f: SourceFile, repo: str, commit: str) -> list[Chunk]:
    """The header as it was before chunker version 4: every import of the file."""
    lines = split_lines(f.data.decode("utf-8", errors="replace"))[:200]
    imports = [ln.strip().rstrip(";") for ln in lines if IMPORT_LINE.match(ln)][:8]
    out = []
    for c in structural(f, repo, commit):
        head = [ln for ln in c.header.split("\n") if not ln.startswith("imports: ")]
        if imports:
            head.append("imports: " + "; ".join(imports))
        out.append(dataclasses.replace(c, header="\n".join(head)))
    return out


def naive(f: SourceFile, repo: str, commit: str) -> list[Chunk]:
    return naive_chunks(
        f.path,
        f.language,
        f.data,
        repo=repo,
        visibility="public",
        commit=commit,
        blob_sha=f.blob_sha,
    )


CHUNKERS: dict[str, Chunker] = {
    "structural": structural,
    "no-header": structural_without_header,
    "all-imports": structural_with_every_import,
    "naive": naive,
}


def index_corpora(
    roots: Mapping[str, Path],
    store: SearchBackend,
    embedder: Embedder,
    cache: EmbeddingCache,
    progress: ProgressFn | None = None,
) -> list[IndexReport]:
    """Index every ``repo -> root`` with the product pipeline (public: they are open source)."""
    return [
        index_repository(root, repo, store, embedder, cache, visibility="public", progress=progress)
        for repo, root in roots.items()
    ]


def index_variant(
    roots: Mapping[str, Path],
    store: SearchBackend,
    embedder: Embedder,
    cache: EmbeddingCache,
    chunker: Chunker,
    max_file_bytes: int = 1_000_000,
) -> dict[str, int]:
    """Replace each repo in ``store`` by the chunks ``chunker`` makes; returns chunk counts."""
    store.ensure_schema(embedder.dimension)
    counts: dict[str, int] = {}
    for repo, root in roots.items():
        commit = head_commit(root)
        files = [f for f in walk_repository(root, max_file_bytes) if isinstance(f, SourceFile)]
        chunks = [c for f in files for c in chunker(f, repo, commit)]
        vectors, _ = embed_with_cache(embedder, cache, [embedding_text(c) for c in chunks])
        store.apply_changes(
            repo,
            sorted(store.file_blobs(repo)),
            chunks,
            vectors,
            RepoState(
                repo=repo,
                commit=commit,
                visibility="public",
                chunk_count=0,
                indexed_at=time.time(),
                config_version="eval-variant",
            ),
        )
        counts[repo] = len(chunks)
    return counts
