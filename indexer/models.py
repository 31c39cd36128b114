"""Plain data shared by indexing, the stores and search."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Literal

# The ranked lists a search fuses unless the caller names others.
SEARCH_LISTS = ("bm25", "knn", "symbol")


Visibility = Literal["public", "internal", "private"]
ChunkKind = Literal["source", "test", "docs", "config"]
VISIBILITIES: tuple[str, ...] = ("public", "internal", "private")


@dataclass(frozen=True)
class Chunk:
    """One retrievable unit of source.

    ``start_line``/``end_line`` are 1-based and inclusive, and ``text`` is exactly those
    lines of the file (joined with ``\\n``, no trailing newline). ``header`` is context
    for embedding and BM25 only; it is never shown as source.
    """

    repo: str
    path: str
    start_line: int
    end_line: int
    text: str
    symbol: str
    language: str
    kind: str
    header: str = ""
    visibility: str = "private"
    commit: str = ""
    blob_sha: str = ""

    @property
    def id(self) -> str:
        key = f"{self.repo}\0{self.path}\0{self.start_line}\0{self.end_line}\0{self.blob_sha}"
        return hashlib.sha1(key.encode()).hexdigest()

    @property
    def location(self) -> str:
        return f"{self.path}:{self.start_line}-{self.end_line}"


@dataclass(frozen=True)
class Hit:
    """A chunk returned by search with its fused score and the rank it had in each list."""

    chunk: Chunk
    score: float
    ranks: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class SearchRequest:
    """A search restricted to ``repos``; an empty set matches nothing (fail closed)."""

    text: str
    repos: frozenset[str]
    k: int = 10
    candidates: int = 50
    embedding: tuple[float, ...] | None = None
    lists: tuple[str, ...] = SEARCH_LISTS
    # Rank tests, docs and example programs by what the question asks (indexer.stores.query);
    # off only to measure what that adds.
    question_weights: bool = True


NameRole = Literal["defines", "references", "literals"]


@dataclass(frozen=True)
class NameRequest:
    """Chunks of ``repos`` whose names index holds ``key`` (a lower-cased name) as ``role``.

    An empty ``repos`` matches nothing (fail closed), as in a search.
    """

    key: str
    repos: frozenset[str]
    role: NameRole = "defines"
    limit: int = 50


@dataclass(frozen=True)
class FileRequest:
    """The chunks of one indexed file, by first line; none unless ``repo`` is in ``repos``.

    ``repos`` is the caller's allowed set, so a file of a repository it may not read looks
    exactly like one that is not indexed.
    """

    repo: str
    path: str
    repos: frozenset[str]
    limit: int = 2000


@dataclass(frozen=True)
class RepoState:
    """What a store holds for one repository."""

    repo: str
    commit: str
    visibility: str
    chunk_count: int
    indexed_at: float
    config_version: str = ""
