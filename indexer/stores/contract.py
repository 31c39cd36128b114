"""The contract every search store implements, and the hybrid search over it."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from indexer.errors import AccessDenied
from indexer.models import Chunk, FileRequest, Hit, NameRequest, RepoState, SearchRequest
from indexer.stores.fusion import rrf
from indexer.stores.query import LIST_WEIGHTS, example_weight, kind_weights


@runtime_checkable
class StreamingWrites(Protocol):
    """A store that takes a run's chunks while they are still being embedded.

    ``apply_changes`` split in three: ``begin_changes`` marks a run as pending,
    ``write_chunks`` stores a group of chunks under it (the indexer calls it from a writer
    thread while the next group is embedded), and ``finish_changes`` removes what the run
    replaced and records the state. Until ``finish_changes`` the previous state stands,
    and a run that never finishes is cleaned up by the next one.
    """

    def begin_changes(self, repo: str) -> Any: ...

    def write_chunks(self, run: Any, chunks: Sequence[Chunk], vectors: np.ndarray) -> None: ...

    def finish_changes(
        self, run: Any, remove_paths: Sequence[str], written_paths: Sequence[str], state: RepoState
    ) -> None: ...


class SearchBackend(Protocol):
    """A store of chunks with BM25 and k-NN search restricted to a set of repositories."""

    def ensure_schema(self, dimension: int) -> None:
        """Create (or check) the tables / index for vectors of ``dimension``."""

    def apply_changes(
        self,
        repo: str,
        remove_paths: Sequence[str],
        chunks: Sequence[Chunk],
        vectors: np.ndarray,
        state: RepoState,
    ) -> None:
        """Replace the chunks of ``remove_paths`` (and the paths of ``chunks``) by ``chunks``,
        then record ``state``. The state is written only after every chunk is stored."""

    def file_blobs(self, repo: str) -> dict[str, str]:
        """Indexed path → git blob sha for one repository."""

    def repo_state(self, repo: str) -> RepoState | None: ...

    def repo_states(self) -> list[RepoState]: ...

    def delete_repo(self, repo: str) -> None: ...

    def search(self, request: SearchRequest) -> list[Hit]:
        """Fused hits, only from ``request.repos`` (the filter is part of every query)."""

    def find_names(self, request: NameRequest) -> list[Chunk]:
        """Chunks that define, reference or hold as a literal ``request.key``, only from
        ``request.repos`` (filtered inside the query), by repository, path and line."""

    def file_chunks(self, request: FileRequest) -> list[Chunk]:
        """The visible chunks of ``request.path`` in ``request.repo`` by first line; empty
        when the repository is not in ``request.repos`` or the file is not indexed."""

    def close(self) -> None: ...


def fuse(
    request: SearchRequest,
    ranked: dict[str, list[str]],
    fetch: Iterable[Chunk],
) -> list[Hit]:
    """Weighted RRF over the ranked id lists, adjusted by what the question asks for (tests,
    docs and example programs rank lower for implementation questions), then the access
    check on every hit."""
    by_id = {c.id: c for c in fetch}
    multipliers = kind_weights(request.text)
    hits = []
    for doc_id, score, ranks in rrf(ranked, weights=LIST_WEIGHTS):
        chunk = by_id.get(doc_id)
        if chunk is None:
            continue  # deleted between the two reads
        weight = (
            multipliers.get(chunk.kind, 1.0) * example_weight(request.text, chunk.path)
            if request.question_weights
            else 1.0
        )
        hits.append(Hit(chunk=chunk, score=score * weight, ranks=ranks))
    hits.sort(key=lambda h: (-h.score, h.chunk.id))
    hits = hits[: request.k]
    assert_allowed(hits, request.repos)
    return hits


def assert_allowed(hits: Sequence[Hit], repos: frozenset[str]) -> None:
    """Defence in depth: a hit outside the allowed set is a bug, and must never be shown."""
    for hit in hits:
        if hit.chunk.repo not in repos:
            raise AccessDenied(
                "A search result fell outside the repositories you may read; nothing was shown."
            )


def assert_chunks_allowed(chunks: Sequence[Chunk], repos: frozenset[str]) -> None:
    """The same defence for chunks found by name."""
    if any(c.repo not in repos for c in chunks):
        raise AccessDenied(
            "A result fell outside the repositories you may read; nothing was shown."
        )


def top_k_indices(scores: np.ndarray, n: int) -> list[int]:
    """Positions of the ``n`` highest scores, best first (ties keep their order)."""
    if scores.shape[0] == 0 or n <= 0:
        return []
    if n < len(scores):
        part = np.argpartition(-scores, n - 1)[:n]
        return [int(i) for i in part[np.argsort(-scores[part], kind="stable")]]
    return [int(i) for i in np.argsort(-scores, kind="stable")]
