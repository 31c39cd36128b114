"""Sentence embeddings for chunks and questions: torch or ONNX backends, a persistent cache."""

from __future__ import annotations

from indexer.embedding.cache import SqliteEmbeddingCache
from indexer.embedding.embedders import (
    Embedder,
    EmbeddingCache,
    WrappedEmbedder,
    cache_key,
    embed_with_cache,
    embedding_text,
    load_embedder,
)
from indexer.settings import IndexerSettings

__all__ = [
    "Embedder",
    "EmbeddingCache",
    "SqliteEmbeddingCache",
    "WrappedEmbedder",
    "cache_key",
    "embed_with_cache",
    "embedding_text",
    "load_embedder",
    "open_embedder",
    "open_embedding_cache",
]


def open_embedding_cache(settings: IndexerSettings) -> SqliteEmbeddingCache:
    return SqliteEmbeddingCache(settings.data_path / "embeddings.db")


def open_embedder(settings: IndexerSettings) -> Embedder:
    """The configured embedding model (loaded once per process)."""
    return load_embedder(
        settings.embed_model,
        settings.embed_threads,
        settings.embed_batch_size,
        settings.embed_backend,
        settings.data_path / "models" / "onnx",
    )
