"""One indexing run's writes to the OpenSearch store, and the commit that shows them.

A run is a generation of a repository's chunks. Every chunk it writes carries its id
(``run``), and while the id is in the repository state's ``pending`` list no search sees
those chunks (``opensearch_documents.visible_filter``). To finish, the run marks the
chunks it replaces (``retired``: still visible while it is pending), then one state write
takes it off the list: its chunks appear and the marked ones vanish in the same instant.
The marked ones are deleted after that. Each step can die without a search seeing two
versions of a file or half of one; the next run's ``begin`` clears what is left.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from opensearchpy import exceptions as os_errors

from indexer.errors import IndexingError
from indexer.models import Chunk, RepoState
from indexer.stores.opensearch.client import bulk_delete, bulk_index, bulk_update, translate
from indexer.stores.opensearch.documents import chunk_source, replaced_for_good, visible_filter


class RunTarget(Protocol):
    """What a run needs of the store (``OpenSearchStore``): its client, names and limits."""

    client: Any
    url: str
    alias: str
    state_index: str
    routing: bool
    batch_docs: int
    retry_delays: tuple[float, ...]

    def _call(self, what: str, fn: Any) -> Any: ...

    def _state_source(self, repo: str) -> dict[str, Any] | None: ...


_TERMS_PER_QUERY = 1000  # well under index.max_terms_count (65 536)
_PAGE = 5000
_STATE_ATTEMPTS = 5


@dataclass(frozen=True)
class WriteRun:
    """One indexing run's writes: its id (every chunk it writes carries it) and the runs
    that were still pending when it began, whose leftovers it removes."""

    repo: str
    run: str
    earlier_pending: list[str]


def begin(store: RunTarget, repo: str) -> WriteRun:
    """Record a new run as pending (searches hide its chunks from now on), then remove
    what earlier runs left."""
    for _ in range(_STATE_ATTEMPTS):
        prior, version = _versioned_state(store, repo)
        run = WriteRun(repo, uuid.uuid4().hex, list(prior.get("pending", [])))
        # Refreshed, so searches read it, before the run writes its first chunk.
        if _put_state_unless_changed(
            store, {**prior, "pending": [*run.earlier_pending, run.run]}, version
        ):
            break
    else:
        raise IndexingError(f"The state of {repo} kept changing: is another run of it going on?")
    # What dead runs wrote last may not be searchable yet, and must be found to be removed
    # (else this run would store its rewrite of such a chunk beside it).
    _refresh(store)
    _forget(store, run)
    # Chunks replaced by a committed run that died before deleting them (hidden).
    delete_where(store, repo, replaced_for_good([*run.earlier_pending, run.run]))
    return run


def _forget(store: RunTarget, run: WriteRun) -> None:
    """Remove the chunks of the runs pending before ``run`` (hidden: they never committed)
    and their marks on the chunks they were replacing (visible, and so they stay)."""
    if run.earlier_pending:
        delete_where(store, run.repo, {"terms": {"run": run.earlier_pending}})
        update_where(
            store, run.repo, {"terms": {"retired": run.earlier_pending}}, {"retired": None}
        )


def write(store: RunTarget, run: WriteRun, chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
    if len(chunks) != len(vectors):
        raise ValueError("one vector per chunk")
    docs = {c.id: chunk_source(c, v, run.run) for c, v in zip(chunks, vectors, strict=True)}
    # ``create``, never overwrite: a chunk written again unchanged (a full run) has the id
    # of the visible copy, which must stay searchable until this run commits. Such a chunk
    # is stored beside it, under an id of this run.
    taken: list[str] = []
    _bulk_index(store, list(docs.items()), op="create", conflicts=taken)
    if taken:
        beside = [(f"{i}.{run.run}", docs[i]) for i in _held_by_others(store, run, taken)]
        _bulk_index(store, beside)


def _held_by_others(store: RunTarget, run: WriteRun, ids: Sequence[str]) -> list[str]:
    """Those of ``ids`` that another run's document holds (not a retried write of ours)."""
    routing = {"routing": run.repo} if store.routing else {}
    found = store._call(
        "read chunks",
        lambda: store.client.mget(
            index=store.alias, body={"ids": list(ids)}, _source=["run"], **routing
        ),
    )
    ours = {d["_id"] for d in found["docs"] if d.get("_source", {}).get("run") == run.run}
    return [i for i in ids if i not in ours]


def _bulk_index(store: RunTarget, docs: list[tuple[str, dict[str, Any]]], **options: Any) -> None:
    bulk_index(
        store.client,
        store.url,
        store.alias,
        docs,
        routed=store.routing,
        batch_docs=store.batch_docs,
        retry_delays=store.retry_delays,
        **options,
    )


def finish(
    store: RunTarget,
    run: WriteRun,
    remove_paths: Sequence[str],
    written_paths: Sequence[str],
    state: RepoState,
) -> None:
    """Mark what the run replaces, commit, then delete the marked chunks."""
    repo = run.repo
    # Searches see the last refresh: every chunk of the run must be searchable before the
    # commit shows it, or a search right after would find neither version of its file.
    _refresh(store)
    pending = _pending_unless_superseded(store, run)
    _forget(store, run)  # again: an earlier run may have gone on writing after ``begin``
    paths = sorted(set(remove_paths) | set(written_paths))
    for start in range(0, len(paths), _TERMS_PER_QUERY):
        replaced = {  # the visible chunks of these paths
            "bool": {
                "filter": [{"terms": {"path": paths[start : start + _TERMS_PER_QUERY]}}],
                "must_not": [{"terms": {"run": pending}}, {"exists": {"field": "retired"}}],
            }
        }
        update_where(store, repo, replaced, {"retired": run.run})
    count = store._call(
        "count chunks",
        lambda: store.client.count(
            index=store.alias,
            body={"query": visible_filter([repo])},  # as after the commit
        ),
    )["count"]
    commit(store, run, state, int(count))
    delete_replaced(store, run)


def _refresh(store: RunTarget) -> None:
    store._call("refresh the index", lambda: store.client.indices.refresh(index=store.alias))


def commit(store: RunTarget, run: WriteRun, state: RepoState, chunk_count: int) -> None:
    """The one write that moves searches from the old generation to this run's."""
    current, version = _versioned_state(store, run.repo)
    pending = _pending_unless_superseded(store, run, current)
    committed = {
        "repo": run.repo,
        "commit": state.commit,
        "visibility": state.visibility,
        "chunk_count": chunk_count,
        "indexed_at": state.indexed_at,
        "config_version": state.config_version,
        "pending": [p for p in pending if p not in {run.run, *run.earlier_pending}],
    }
    if not _put_state_unless_changed(store, committed, version):
        raise _superseded(run)


def _pending_unless_superseded(
    store: RunTarget, run: WriteRun, state: dict[str, Any] | None = None
) -> list[str]:
    """The repository's pending runs; an error when one began after ``run``, which took
    ``run`` for dead and removed its chunks."""
    if state is None:
        state = store._state_source(run.repo) or {}
    pending = list(state.get("pending", []))
    if pending[-1:] != [run.run]:
        raise _superseded(run)
    return pending


def _superseded(run: WriteRun) -> IndexingError:
    return IndexingError(
        f"Another run of {run.repo} began while this one was writing; this one stopped "
        "without committing, and the other one brings the index up to date."
    )


def _versioned_state(store: RunTarget, repo: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The repository's state and the condition that a write of it replaces this one."""
    found = store._call(
        "read the repository state",
        lambda: store.client.get(index=store.state_index, id=repo, ignore=[404]),
    )
    if not found.get("found"):
        return {"repo": repo}, {"op_type": "create"}
    version = {"if_seq_no": found["_seq_no"], "if_primary_term": found["_primary_term"]}
    return dict(found["_source"]), version


def _put_state_unless_changed(
    store: RunTarget, source: dict[str, Any], version: dict[str, Any]
) -> bool:
    """Write (and refresh) a state unless another write of it came first: False then."""
    try:
        store.client.index(
            index=store.state_index, id=source["repo"], body=source, refresh=True, **version
        )
    except os_errors.ConflictError:
        return False
    except os_errors.TransportError as exc:
        raise translate(exc, store.url, "record the repository state") from exc
    return True


def delete_replaced(store: RunTarget, run: WriteRun) -> None:
    """Delete the chunks a committed run replaced (hidden since its commit)."""
    delete_where(store, run.repo, {"term": {"retired": run.run}})


def delete_where(store: RunTarget, repo: str, query: dict[str, Any]) -> None:
    """Delete every chunk of ``repo`` matching ``query``.

    Search-then-bulk-delete rather than ``_delete_by_query``: that endpoint lives in the
    optional ``reindex`` module, which minimal nodes (like the one scripts/opensearch.sh
    assembles) do not have.
    """
    _each_page(
        store,
        repo,
        query,
        lambda ids, options: bulk_delete(store.client, store.url, store.alias, ids, **options),
    )


def update_where(
    store: RunTarget, repo: str, query: dict[str, Any], fields: dict[str, Any]
) -> None:
    """Set ``fields`` on every chunk of ``repo`` matching ``query``, which the change must
    make them stop matching (search + bulk update: ``_update_by_query`` is ``reindex`` too)."""
    _each_page(
        store,
        repo,
        query,
        lambda ids, options: bulk_update(
            store.client, store.url, store.alias, ids, fields, **options
        ),
    )


def _each_page(
    store: RunTarget,
    repo: str,
    query: dict[str, Any],
    act: Callable[[list[str], dict[str, Any]], None],
) -> None:
    """``act`` on the chunks of ``repo`` matching ``query``, a page at a time; each page
    stops matching (deleted, updated), so the next search finds the next page."""
    body = {
        "size": _PAGE,
        "_source": False,
        "track_total_hits": False,
        "query": {"bool": {"filter": [{"term": {"repo": repo}}, query]}},
    }
    routing = {"routing": repo} if store.routing else {}
    while True:
        response = store._call(
            "find chunks",
            lambda: store.client.search(
                index=store.alias, body=body, ignore_unavailable=True, **routing
            ),
        )
        ids = [h["_id"] for h in response["hits"]["hits"]]
        if ids:
            options = {"batch_docs": store.batch_docs, "retry_delays": store.retry_delays}
            # refresh: the next page, and the caller's count, must see the change
            act(ids, {**routing, **options, "refresh": True})
        if len(ids) < _PAGE:
            return
