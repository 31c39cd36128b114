"""Both store backends for parametrized tests, plus small builders of chunks and repos."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import numpy as np
import pytest

from indexer.models import Chunk, RepoState
from indexer.settings import IndexerSettings
from indexer.stores import SearchBackend, SqliteStore
from indexer.stores.opensearch import OpenSearchStore

OPENSEARCH_URL = os.environ.get("CODEASK_TEST_OPENSEARCH_URL", "")
needs_opensearch = [
    pytest.mark.opensearch,
    pytest.mark.skipif(
        not OPENSEARCH_URL,
        reason="CODEASK_TEST_OPENSEARCH_URL is not set (start a node: scripts/opensearch.sh start)",
    ),
]
BACKENDS = ["sqlite", pytest.param("opensearch", marks=needs_opensearch)]

F = TypeVar("F", bound=Callable[..., object])


def opensearch_test(fn: F) -> F:
    """Mark a test as needing the node named by CODEASK_TEST_OPENSEARCH_URL."""
    for mark in needs_opensearch:
        fn = mark(fn)
    return fn


def opensearch_settings(url: str = "", alias: str = "") -> IndexerSettings:
    """Settings for a uniquely named alias, so concurrent runs never share an index."""
    return IndexerSettings(
        store="opensearch",
        opensearch_url=url or OPENSEARCH_URL,
        opensearch_index=alias or f"codeask-test-{uuid.uuid4().hex[:12]}",
        opensearch_timeout=30.0,
    )


def open_opensearch(url: str = "", alias: str = "", **kwargs: object) -> OpenSearchStore:
    settings = opensearch_settings(url, alias)
    store = OpenSearchStore.from_settings(settings)
    for key, value in kwargs.items():
        setattr(store, key, value)
    return store


def open_backend(kind: str, tmp_path: Path) -> Iterator[SearchBackend]:
    if kind == "sqlite":
        sqlite = SqliteStore(tmp_path / f"codeask-{uuid.uuid4().hex[:6]}.db")
        yield sqlite
        sqlite.close()
        return
    store = open_opensearch()
    try:
        yield store
    finally:
        store.drop()
        store.close()


def chunk(
    repo: str,
    path: str,
    start: int,
    text: str,
    symbol: str,
    blob: str = "b1",
    visibility: str = "private",
) -> Chunk:
    return Chunk(
        repo=repo,
        path=path,
        start_line=start,
        end_line=start + text.count("\n"),
        text=text,
        symbol=symbol,
        language="python",
        kind="source",
        header=f"# {path}",
        visibility=visibility,
        commit="c1",
        blob_sha=blob,
    )


def random_vectors(n: int, dimension: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((n, dimension)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def state(repo: str, commit: str = "c1", visibility: str = "private") -> RepoState:
    return RepoState(
        repo=repo,
        commit=commit,
        visibility=visibility,
        chunk_count=0,
        indexed_at=1_700_000_000.0,
        config_version="test-v1",
    )
