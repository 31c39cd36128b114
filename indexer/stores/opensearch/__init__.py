"""The OpenSearch store: client, mapping, documents, runs, migration."""

from __future__ import annotations

from indexer.stores.opensearch.migrate import migrate
from indexer.stores.opensearch.store import OpenSearchStore

__all__ = ["OpenSearchStore", "migrate"]
