"""Open the configured store backend."""

from __future__ import annotations

from indexer.backend import SearchBackend
from indexer.embed_cache import SqliteEmbeddingCache
from indexer.embedding import Embedder, load_embedder
from indexer.search import Searcher
from indexer.settings import IndexerSettings
from indexer.sqlite_store import SqliteStore


def open_store(settings: IndexerSettings) -> SearchBackend:
    if settings.store == "opensearch":
        from indexer.opensearch_store import OpenSearchStore

        return OpenSearchStore.from_settings(settings)
    return SqliteStore(settings.sqlite_path)


def open_embedding_cache(settings: IndexerSettings) -> SqliteEmbeddingCache:
    return SqliteEmbeddingCache(settings.data_path / "embeddings.db")


def open_embedder(settings: IndexerSettings) -> Embedder:
    """The configured embedding model (loaded once per process)."""
    return load_embedder(
        settings.embed_model,
        settings.embed_threads,
        settings.embed_batch_size,
        settings.embed_backend,
    )


def open_searcher(settings: IndexerSettings, store: SearchBackend | None = None) -> Searcher:
    """Hybrid search over ``store`` (default: the configured one) with the configured model."""
    return Searcher(
        store if store is not None else open_store(settings),
        open_embedder(settings),
        vectors=open_embedding_cache(settings),
    )
