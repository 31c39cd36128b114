"""Sentence embeddings for chunks and questions: torch, ONNX or remote (api) backends, a
persistent cache."""

from __future__ import annotations

from indexer.embedding.api import ApiEmbedder, load_api_embedder
from indexer.embedding.base import (
    Embedder,
    EmbeddingCache,
    WrappedEmbedder,
    cache_key,
    embed_queries,
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
from indexer.embedding.spaces import refuse_other_model, vector_space
from indexer.embedding.torch_backend import (
    SentenceTransformerEmbedder,
    cpu_has_bf16,
    require_bf16,
    require_torch,
)
from indexer.settings import IndexerSettings

__all__ = [
    "ApiEmbedder",
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
    "embed_queries",
    "embed_with_cache",
    "embedding_text",
    "ensure_onnx_model",
    "length_batches",
    "load_api_embedder",
    "load_embedder",
    "open_embedder",
    "open_embedding_cache",
    "refuse_other_model",
    "require_bf16",
    "require_torch",
    "vector_space",
]


def open_embedding_cache(settings: IndexerSettings) -> SqliteEmbeddingCache:
    return SqliteEmbeddingCache(settings.data_path / "embeddings.db")


def open_embedder(settings: IndexerSettings) -> Embedder:
    """The configured embedding model (loaded once per process)."""
    if settings.embed_backend == "api":
        return load_api_embedder(settings)
    return load_embedder(
        settings.embed_model,
        settings.embed_threads,
        settings.embed_batch_size,
        settings.embed_backend,
        settings.onnx_path,
    )
