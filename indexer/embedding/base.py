"""What every embedder is: the protocol, the text a chunk is embedded as, cache keys, and
embedding through a persistent cache."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np

from indexer.models import Chunk

EMBED_CHAR_BUDGET = 1200  # ~256 word pieces: what MiniLM actually reads


class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of a fixed dimension."""

    @property
    def name(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


def embed_queries(embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
    """Vectors of search questions: an embedder may embed them unlike chunks (a query
    prefix) with an ``embed_queries`` method; one without it embeds them as any text."""
    queries = getattr(embedder, "embed_queries", None)
    return queries(texts) if callable(queries) else embedder.embed(texts)


def embedding_text(chunk: Chunk) -> str:
    """What the bi-encoder sees: header, symbol, then the start of the code."""
    head = f"{chunk.header}\n{chunk.symbol}\n"
    return head + chunk.text[: max(200, EMBED_CHAR_BUDGET - len(head))]


def cache_key(model: str, text: str) -> str:
    return hashlib.sha256(f"{model}\0{text}".encode()).hexdigest()


class WrappedEmbedder:
    """An embedder that adds something around another one (a memo, a timer, a fault): it
    keeps the inner model's name and dimension, so cache keys and stores stay the same."""

    def __init__(self, inner: Embedder) -> None:
        self._inner = inner

    @property
    def name(self) -> str:
        return self._inner.name

    @property
    def dimension(self) -> int:
        return self._inner.dimension

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self._inner.embed(texts)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        # An inner model without a query form embeds questions through ``embed``, which a
        # subclass may have wrapped (a memo, a timer).
        if callable(getattr(self._inner, "embed_queries", None)):
            return embed_queries(self._inner, texts)
        return self.embed(texts)


class EmbeddingCache(Protocol):
    def get_many(self, keys: Sequence[str]) -> dict[str, np.ndarray]: ...

    def put_many(self, items: dict[str, np.ndarray]) -> None: ...


def embed_with_cache(
    embedder: Embedder,
    cache: EmbeddingCache,
    texts: Sequence[str],
    batch: int = 256,
    progress: Callable[[int], None] | None = None,
) -> tuple[np.ndarray, int]:
    """Vectors for ``texts``, computing only those not cached; returns (vectors, computed)."""
    keys = [cache_key(embedder.name, t) for t in texts]
    found = cache.get_many(list(dict.fromkeys(keys)))
    missing = list(dict.fromkeys(k for k in keys if k not in found))
    text_of = dict(zip(keys, texts, strict=True))
    for i in range(0, len(missing), batch):
        part = missing[i : i + batch]
        vectors = embedder.embed([text_of[k] for k in part])
        fresh = {k: v for k, v in zip(part, vectors, strict=True)}
        cache.put_many(fresh)  # persisted per batch: a crash keeps the work done so far
        found.update(fresh)
        if progress:
            progress(len(part))
    if not keys:
        return np.zeros((0, embedder.dimension), dtype=np.float32), 0
    return np.stack([found[k] for k in keys]).astype(np.float32), len(missing)
