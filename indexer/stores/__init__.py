"""The search stores behind one contract: embedded SQLite (default) or OpenSearch."""

from __future__ import annotations

from indexer.settings import IndexerSettings
from indexer.stores.contract import (
    SearchBackend,
    StreamingWrites,
    assert_allowed,
    fuse,
    top_k_indices,
)
from indexer.stores.sqlite import SqliteStore

__all__ = [
    "SearchBackend",
    "SqliteStore",
    "StreamingWrites",
    "assert_allowed",
    "fuse",
    "open_store",
    "top_k_indices",
]


def open_store(settings: IndexerSettings) -> SearchBackend:
    """The configured backend: ``CODEASK_STORE=opensearch`` or the SQLite file."""
    if settings.store == "opensearch":
        from indexer.stores.opensearch import OpenSearchStore

        return OpenSearchStore.from_settings(settings)
    return SqliteStore(settings.sqlite_path)
