"""Hybrid search for a question over the repositories a caller may read."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from threading import Lock

import numpy as np

from indexer.embedding import (
    Embedder,
    EmbeddingCache,
    cache_key,
    embed_queries,
    embedding_text,
    refuse_other_model,
)
from indexer.models import SEARCH_LISTS, Chunk, Hit, SearchRequest
from indexer.stores import SearchBackend


class Searcher:
    """Embeds the question (cached) and runs one filtered hybrid query on the store."""

    def __init__(
        self,
        backend: SearchBackend,
        embedder: Embedder,
        cache_size: int = 512,
        vectors: EmbeddingCache | None = None,
    ) -> None:
        self.backend = backend
        self.embedder = embedder
        self.vectors = vectors
        self._cache: OrderedDict[str, tuple[float, ...]] = OrderedDict()
        self._cache_size = cache_size
        self._lock = Lock()
        self._model_checked = False

    def embed_query(self, text: str) -> tuple[float, ...]:
        with self._lock:
            if text in self._cache:
                self._cache.move_to_end(text)
                return self._cache[text]
        vector = tuple(float(x) for x in embed_queries(self.embedder, [text])[0])
        with self._lock:
            self._cache[text] = vector
            if len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return vector

    def _check_model(self) -> None:
        """Refuse (once per searcher) a store whose vectors another model computed."""
        if not self._model_checked:
            refuse_other_model(self.backend.repo_states(), self.embedder)
            self._model_checked = True

    def chunk_vectors(self, chunks: Sequence[Chunk]) -> np.ndarray:
        """The indexed vectors of ``chunks``: from the embedding cache, embedded if absent."""
        texts = [embedding_text(c) for c in chunks]
        keys = [cache_key(self.embedder.name, t) for t in texts]
        found = self.vectors.get_many(keys) if self.vectors is not None else {}
        missing = [i for i, k in enumerate(keys) if k not in found]
        if missing:
            fresh = self.embedder.embed([texts[i] for i in missing])
            for i, vector in zip(missing, fresh, strict=True):
                found[keys[i]] = vector
        if not keys:
            return np.zeros((0, self.embedder.dimension), dtype=np.float32)
        return np.stack([found[k] for k in keys]).astype(np.float32)

    def search(
        self,
        text: str,
        repos: frozenset[str],
        k: int = 10,
        candidates: int = 50,
        lists: tuple[str, ...] = SEARCH_LISTS,
        question_weights: bool = True,
    ) -> list[Hit]:
        """Top ``k`` fused hits, drawn only from ``repos`` (empty: nothing)."""
        if not repos:
            return []
        if "knn" in lists:
            self._check_model()
        embedding = self.embed_query(text) if "knn" in lists else None
        request = SearchRequest(
            text=text,
            repos=repos,
            k=k,
            candidates=max(candidates, k),
            embedding=embedding,
            lists=lists,
            question_weights=question_weights,
        )
        return self.backend.search(request)
