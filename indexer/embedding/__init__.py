"""Sentence embeddings for chunks and questions: torch or ONNX backends, a persistent cache."""

from __future__ import annotations

from indexer.embedding.cache import SqliteEmbeddingCache
from indexer.embedding.embedders import (
    Embedder,
    EmbeddingCache,
    SentenceTransformerEmbedder,
    WrappedEmbedder,
    cache_key,
    cpu_has_bf16,
    embed_with_cache,
    embedding_text,
    load_embedder,
    require_bf16,
)
from indexer.embedding.onnx import (
    BatchWorkers,
    OnnxEmbedder,
    cpu_session,
    ensure_onnx_model,
    length_batches,
)
from indexer.settings import IndexerSettings

__all__ = [
    "BatchWorkers",
    "Embedder",
    "EmbeddingCache",
    "OnnxEmbedder",
    "SentenceTransformerEmbedder",
    "SqliteEmbeddingCache",
    "WrappedEmbedder",
    "cache_key",
    "cpu_has_bf16",
    "cpu_session",
    "embed_with_cache",
    "embedding_text",
    "ensure_onnx_model",
    "length_batches",
    "load_embedder",
    "open_embedder",
    "open_embedding_cache",
    "require_bf16",
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
