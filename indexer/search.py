"""Hybrid search for a question over the repositories a caller may read."""

from __future__ import annotations

from collections import OrderedDict
from threading import Lock

from indexer.backend import SearchBackend
from indexer.embedding import Embedder
from indexer.models import Hit, SearchRequest


class Searcher:
    """Embeds the question (cached) and runs one filtered hybrid query on the store."""

    def __init__(self, backend: SearchBackend, embedder: Embedder, cache_size: int = 512) -> None:
        self.backend = backend
        self.embedder = embedder
        self._cache: OrderedDict[str, tuple[float, ...]] = OrderedDict()
        self._cache_size = cache_size
        self._lock = Lock()

    def embed_query(self, text: str) -> tuple[float, ...]:
        with self._lock:
            if text in self._cache:
                self._cache.move_to_end(text)
                return self._cache[text]
        vector = tuple(float(x) for x in self.embedder.embed([text])[0])
        with self._lock:
            self._cache[text] = vector
            if len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return vector

    def search(
        self,
        text: str,
        repos: frozenset[str],
        k: int = 10,
        candidates: int = 50,
        lists: tuple[str, ...] = ("bm25", "knn"),
    ) -> list[Hit]:
        """Top ``k`` fused hits, drawn only from ``repos`` (empty: nothing)."""
        if not repos:
            return []
        embedding = self.embed_query(text) if "knn" in lists else None
        request = SearchRequest(
            text=text,
            repos=repos,
            k=k,
            candidates=max(candidates, k),
            embedding=embedding,
            lists=lists,
        )
        return self.backend.search(request)
