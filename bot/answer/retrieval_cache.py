"""Per-process cache of retrieval results, keyed so it never crosses an access boundary.

The key holds the exact set of repositories the asker may read and the index generation
of those repositories: two askers share an entry only when they may read exactly the
same repositories, and any re-index of one of them makes old entries unreachable.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from dataclasses import dataclass
from threading import Lock

from bot.answer.evidence import EvidenceSignal
from bot.answer.result import Candidate
from indexer.models import Hit
from indexer.stores import SearchBackend

CacheKey = tuple[str, tuple[str, ...], str, str]


@dataclass(frozen=True)
class Retrieval:
    """Candidates for one question, best first after rerank, with the evidence signal."""

    hits: tuple[Hit, ...]
    candidates: tuple[Candidate, ...]
    signal: EvidenceSignal
    reranker: str = ""  # name of the reranker that ordered ``hits``; empty: fused order


def index_generation(backend: SearchBackend, repos: frozenset[str]) -> str:
    """A digest of the indexed state (commit, time, size) of each allowed repository."""
    digest = hashlib.sha256()
    for state in sorted(backend.repo_states(), key=lambda s: s.repo):
        if state.repo in repos:
            digest.update(
                f"{state.repo}\0{state.commit}\0{state.indexed_at}\0{state.chunk_count}\n".encode()
            )
    return digest.hexdigest()


def cache_key(question: str, repos: frozenset[str], generation: str, reranker: str) -> CacheKey:
    return (question.strip(), tuple(sorted(repos)), generation, reranker)


class RetrievalCache:
    """A small thread-safe LRU of ``Retrieval`` by ``cache_key``."""

    def __init__(self, size: int = 256) -> None:
        self._items: OrderedDict[CacheKey, Retrieval] = OrderedDict()
        self._size = size
        self._lock = Lock()

    def get(self, key: CacheKey) -> Retrieval | None:
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
            return found

    def put(self, key: CacheKey, value: Retrieval) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self._size:
                self._items.popitem(last=False)

    def __len__(self) -> int:
        return len(self._items)
