"""Hybrid search for a question over the repositories a caller may read."""

from __future__ import annotations

from indexer.embedding import EmbeddingCache, open_embedder, open_embedding_cache
from indexer.search.searcher import Searcher
from indexer.settings import IndexerSettings
from indexer.stores import SearchBackend, open_store

__all__ = ["Searcher", "open_searcher"]


def open_searcher(
    settings: IndexerSettings,
    store: SearchBackend | None = None,
    vectors: EmbeddingCache | None = None,
) -> Searcher:
    """Hybrid search over ``store`` (default: the configured one) with the configured model."""
    return Searcher(
        store if store is not None else open_store(settings),
        open_embedder(settings),
        vectors=vectors if vectors is not None else open_embedding_cache(settings),
    )
