"""Sentence embeddings for chunks and questions: torch or ONNX backends, a persistent cache."""

from __future__ import annotations

from indexer.embedding.base import (
    Embedder,
    EmbeddingCache,
    WrappedEmbedder,
    cache_key,
    embed_with_cache,
    embedding_text,
)
from indexer.embedding.cache import SqliteEmbeddingCache
from indexer.embedding.loading import load_embedder
from indexer.embedding.onnx import (
    BatchWorkers,
    OnnxEmbedder,
    cpu_session,
    ensure_onnx_model,
    length_batches,
)
from indexer.embedding.torch_backend import (
    SentenceTransformerEmbedder,
    cpu_has_bf16,
    require_bf16,
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
