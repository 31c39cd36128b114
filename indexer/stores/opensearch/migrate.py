"""Move the chunk alias to a new index version: the path for a mapping change.

``codeask migrate-index`` (or :func:`migrate`) does, without touching the serving index:

0. an index of the previous schema version that only lacks fields gets them added (the
   one change ever made to a serving index, ``OpenSearchStore.upgrade_in_place``), and
   that is all;
1. otherwise create ``<alias>-v<N+1>`` with the mapping this codeask writes (vector
   dimension from the configured embedding model);
2. when the vector dimension is unchanged, copy every chunk (scroll + bulk, so the
   analyzers and fields are rebuilt from the stored sources); when it changed, the old
   vectors are useless, so the new index starts empty;
3. swap the alias in one atomic ``_aliases`` call, so searches move at once;
4. after an empty start, clear the repository states, so ``codeask index`` re-embeds
   every repository (until then searches return nothing from them).

The old index is kept (to roll back, point the alias at it again) unless
``delete_old`` is set.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from opensearchpy import exceptions as os_errors
from opensearchpy.helpers import scan

from indexer.errors import ConfigError
from indexer.stores.opensearch.client import bulk_delete, bulk_index, call, translate
from indexer.stores.opensearch.mapping import check_mapping, chunk_index_body
from indexer.stores.opensearch.store import OpenSearchStore


@dataclass(frozen=True)
class Migration:
    old_index: str | None
    new_index: str
    copied: int
    reindex_needed: bool


def next_index_name(alias: str, current: str | None) -> str:
    """``codeask-chunks-v3`` → ``codeask-chunks-v4`` (``-v1`` when there is none)."""
    match = re.fullmatch(re.escape(alias) + r"-v(\d+)", current or "")
    return f"{alias}-v{int(match.group(1)) + 1 if match else 1}"


def migrate(store: OpenSearchStore, dimension: int, *, delete_old: bool = False) -> Migration:
    """Build the next index version for ``dimension`` and move the alias to it."""
    client, alias = store.client, store.alias
    current = store.concrete_index()
    if current is None:
        store.ensure_schema(dimension)
        return Migration(None, f"{alias}-v1", 0, reindex_needed=False)
    new = next_index_name(alias, current)
    if call(store.url, "look up the index", lambda: client.indices.exists(index=new)):
        raise ConfigError(
            f"{new} already exists (left by an interrupted migration?). Delete it and run "
            "the migration again."
        )
    mapping = store.upgrade_in_place(current, dimension)
    old_dimension = mapping.get("properties", {}).get("embedding", {})
    same_vectors = int(old_dimension.get("dimension", -1)) == dimension
    if same_vectors and not check_mapping(mapping, dimension, store.routing, store.encoding):
        return Migration(current, current, 0, reindex_needed=False)  # nothing to change

    body = chunk_index_body(
        dimension, store.shards, store.replicas, alias, store.routing, store.encoding
    )
    del body["aliases"]  # attached below, atomically with the removal from the old index
    call(store.url, f"create {new}", lambda: client.indices.create(index=new, body=body))
    copied = _copy(store, current, new) if same_vectors else 0
    call(
        store.url,
        "move the alias",
        lambda: client.indices.update_aliases(
            body={
                "actions": [
                    {"remove": {"index": current, "alias": alias}},
                    {"add": {"index": new, "alias": alias}},
                ]
            }
        ),
    )
    if not same_vectors:
        _clear_states(store)
    if delete_old:
        call(store.url, f"delete {current}", lambda: client.indices.delete(index=current))
    return Migration(current, new, copied, reindex_needed=not same_vectors)


def _copy(store: OpenSearchStore, source: str, dest: str, page: int = 500) -> int:
    """Copy every document with its id and source (vectors included), then refresh.

    Scroll + bulk rather than ``_reindex``, which needs the optional ``reindex`` module.
    """
    copied = 0
    batch: list[tuple[str, dict[str, Any]]] = []

    def flush() -> None:
        nonlocal copied, batch
        bulk_index(
            store.client,
            store.url,
            dest,
            batch,
            routed=store.routing,
            retry_delays=store.retry_delays,
        )
        copied += len(batch)
        batch = []

    hits = scan(store.client, index=source, query={"query": {"match_all": {}}}, size=page)
    try:
        for hit in hits:
            batch.append((hit["_id"], hit["_source"]))
            if len(batch) >= page:
                flush()
    except os_errors.TransportError as exc:
        raise translate(exc, store.url, f"copy {source} to {dest}") from exc
    flush()
    call(store.url, f"refresh {dest}", lambda: store.client.indices.refresh(index=dest))
    return copied


def _clear_states(store: OpenSearchStore) -> None:
    body = {"size": 10_000, "_source": False, "query": {"match_all": {}}}
    found = call(
        store.url,
        "list repository states",
        lambda: store.client.search(index=store.state_index, body=body, ignore_unavailable=True),
    )
    ids = [h["_id"] for h in found["hits"]["hits"]]
    bulk_delete(store.client, store.url, store.state_index, ids, refresh=True)
