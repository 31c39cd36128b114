"""Open the configured store backend."""

from __future__ import annotations

from indexer.backend import SearchBackend
from indexer.embed_cache import SqliteEmbeddingCache
from indexer.settings import IndexerSettings
from indexer.sqlite_store import SqliteStore


def open_store(settings: IndexerSettings) -> SearchBackend:
    if settings.store == "opensearch":
        from indexer.opensearch_store import OpenSearchStore

        return OpenSearchStore.from_settings(settings)
    return SqliteStore(settings.sqlite_path)


def open_embedding_cache(settings: IndexerSettings) -> SqliteEmbeddingCache:
    return SqliteEmbeddingCache(settings.data_path / "embeddings.db")
