"""The production store: chunks in one OpenSearch index (BM25 + k-NN), repo state beside it.

Writes are not transactional in OpenSearch, so ``apply_changes`` orders them instead:
the new chunks are stored (each write tagged with a run id), then the chunks they replace
are deleted, and only then the repository's state moves to the new commit. A run that
fails part-way leaves its id in the state's ``pending`` list; ``file_blobs`` reports the
files such a run touched as changed, so the next run redoes them and removes the debris.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from opensearchpy import OpenSearch
from opensearchpy import exceptions as os_errors

from indexer.backend import fuse
from indexer.errors import ConfigError, StoreUnavailable
from indexer.models import Chunk, Hit, RepoState, SearchRequest
from indexer.opensearch_client import (
    DEFAULT_RETRY_DELAYS,
    bulk_delete,
    bulk_index,
    call,
    connect,
    public_url,
    translate,
)
from indexer.opensearch_documents import (
    chunk_source,
    repo_state_of,
    search_bodies,
    source_chunk,
)
from indexer.opensearch_mapping import (
    CONCURRENT_SEARCH_SETTING,
    check_mapping,
    chunk_index_body,
    state_index_body,
)
from indexer.settings import IndexerSettings

_TERMS_PER_QUERY = 1000  # well under index.max_terms_count (65 536)
_DELETE_PAGE = 5000


def state_index_name(alias: str) -> str:
    """``codeask-chunks`` → ``codeask-state``; any other alias gets ``-state`` appended."""
    return alias.removesuffix("-chunks") + "-state"


def _missing_index(response: dict[str, Any]) -> bool:
    error = response.get("error")
    return isinstance(error, dict) and error.get("type") == "index_not_found_exception"


@dataclass(frozen=True)
class WriteRun:
    """One indexing run's writes: its id (every chunk it writes carries it) and the runs
    that were still pending when it began, whose leftovers it removes when it finishes."""

    repo: str
    run: str
    earlier_pending: list[str]


class OpenSearchStore:
    """``SearchBackend`` over an OpenSearch cluster; thread-safe like the client it wraps."""

    def __init__(
        self,
        client: OpenSearch,
        *,
        url: str,
        alias: str = "codeask-chunks",
        shards: int = 1,
        replicas: int = 0,
        routing: bool = False,
        encoding: str = "float",
        concurrent_search: str = "all",
        batch_docs: int = 500,
        retry_delays: Sequence[float] = DEFAULT_RETRY_DELAYS,
    ) -> None:
        self.client = client
        self.url = url
        self.alias = alias
        self.state_index = state_index_name(alias)
        self.shards = shards
        self.replicas = replicas
        self.routing = routing
        self.encoding = encoding
        self.concurrent_search = concurrent_search
        self.batch_docs = batch_docs
        self.retry_delays = tuple(retry_delays)

    @classmethod
    def from_settings(cls, settings: IndexerSettings) -> OpenSearchStore:
        return cls(
            connect(settings),
            url=settings.opensearch_url,
            alias=settings.opensearch_index,
            shards=settings.opensearch_shards,
            replicas=settings.opensearch_replicas,
            routing=settings.opensearch_routing,
            encoding=settings.opensearch_vector_encoding,
            concurrent_search=settings.opensearch_concurrent_segment_search,
        )

    def close(self) -> None:
        self.client.close()

    def _call(self, what: str, fn: Any) -> Any:
        return call(self.url, what, fn)

    # --- schema ---------------------------------------------------------------------

    def concrete_index(self) -> str | None:
        """The index the alias points to (None: not created yet)."""
        indices = self.client.indices
        if not self._call("look up the index alias", lambda: indices.exists_alias(name=self.alias)):
            if self._call("look up the index", lambda: indices.exists(index=self.alias)):
                raise ConfigError(
                    f"OpenSearch has an index named {self.alias!r} where codeask expects an "
                    "alias. Delete it, or set CODEASK_OPENSEARCH_INDEX to another name."
                )
            return None
        found = self._call("read the index alias", lambda: indices.get_alias(name=self.alias))
        if len(found) != 1:
            raise ConfigError(
                f"The alias {self.alias!r} points to {len(found)} indices ({', '.join(found)}); "
                "it must point to exactly one."
            )
        return str(next(iter(found)))

    def ensure_schema(self, dimension: int) -> None:
        """Create the indices, or check that the existing mapping fits; never changes one.

        The one thing set on an existing index is the search-time segment concurrency
        (``CODEASK_OPENSEARCH_CONCURRENT_SEGMENT_SEARCH``), a dynamic setting.
        """
        self._ensure_indices(dimension)
        self._apply_concurrent_search()

    def _apply_concurrent_search(self) -> None:
        if self.concurrent_search == "cluster":
            return
        key = CONCURRENT_SEARCH_SETTING
        indices = self.client.indices
        found = self._call(
            "read the index settings",
            lambda: indices.get_settings(index=self.alias, name=key, flat_settings=True),
        )
        # Only indices that have the key are listed: none listed means it is not set.
        have = {v["settings"].get(key) for v in found.values()}
        if have == {self.concurrent_search}:
            return
        try:
            indices.put_settings(index=self.alias, body={key: self.concurrent_search})
        except os_errors.RequestError as exc:
            raise ConfigError(
                f"OpenSearch at {public_url(self.url)} refused {key}={self.concurrent_search} "
                f"on {self.alias}: {exc.info}. Set CODEASK_OPENSEARCH_CONCURRENT_SEGMENT_SEARCH"
                "=cluster to leave it to the cluster's own setting."
            ) from exc
        except os_errors.TransportError as exc:
            raise translate(exc, self.url, f"set {key}") from exc

    def _ensure_indices(self, dimension: int) -> None:
        indices = self.client.indices
        if not self._call(
            "look up the state index", lambda: indices.exists(index=self.state_index)
        ):
            self._create(self.state_index, state_index_body(self.replicas))
        index = self.concrete_index()
        if index is None:
            body = chunk_index_body(
                dimension, self.shards, self.replicas, self.alias, self.routing, self.encoding
            )
            if self._create(f"{self.alias}-v1", body):
                return
            index = self.concrete_index()
            if index is None:
                raise ConfigError(
                    f"The index {self.alias}-v1 exists but the alias {self.alias!r} does not "
                    "point to it. Add the alias or delete the index."
                )
        mappings = self._call("read the mapping", lambda: indices.get_mapping(index=index))
        problems = check_mapping(
            mappings[index]["mappings"], dimension, self.routing, self.encoding
        )
        if problems:
            raise ConfigError(
                f"The OpenSearch index {index} (alias {self.alias}) does not fit this "
                f"configuration: {'; '.join(problems)}. Nothing was changed. Run `codeask "
                "migrate-index` to build the next index version, copy or re-embed the chunks "
                "and move the alias, or point CODEASK_OPENSEARCH_INDEX at a new alias."
            )

    def _create(self, index: str, body: dict[str, Any]) -> bool:
        """Create ``index``; False when another process created it first."""
        try:
            self.client.indices.create(index=index, body=body)
        except os_errors.RequestError as exc:
            if exc.error == "resource_already_exists_exception":
                return False
            raise StoreUnavailable(
                f"OpenSearch at {public_url(self.url)} refused to create {index}: {exc.info}"
            ) from exc
        except os_errors.TransportError as exc:
            raise translate(exc, self.url, f"create {index}") from exc
        return True

    # --- writes ---------------------------------------------------------------------

    def apply_changes(
        self,
        repo: str,
        remove_paths: Sequence[str],
        chunks: Sequence[Chunk],
        vectors: np.ndarray,
        state: RepoState,
    ) -> None:
        if len(chunks) != len(vectors):
            raise ValueError("one vector per chunk")
        run = self.begin_changes(repo)
        self.write_chunks(run, chunks, vectors)
        self.finish_changes(run, remove_paths, [c.path for c in chunks], state)

    # The same in three steps, so the indexer can write while it embeds
    # (indexer.backend.StreamingWrites).

    def begin_changes(self, repo: str) -> WriteRun:
        prior = self._state_source(repo) or {"repo": repo}
        run = WriteRun(repo, uuid.uuid4().hex, list(prior.get("pending", [])))
        # Read back with a realtime get, so no refresh is needed for this marker.
        self._put_state({**prior, "pending": [*run.earlier_pending, run.run]}, refresh=False)
        return run

    def write_chunks(self, run: WriteRun, chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
        if len(chunks) != len(vectors):
            raise ValueError("one vector per chunk")
        docs = [(c.id, chunk_source(c, v, run.run)) for c, v in zip(chunks, vectors, strict=True)]
        bulk_index(
            self.client,
            self.url,
            self.alias,
            docs,
            routed=self.routing,
            batch_docs=self.batch_docs,
            retry_delays=self.retry_delays,
        )

    def finish_changes(
        self,
        run: WriteRun,
        remove_paths: Sequence[str],
        written_paths: Sequence[str],
        state: RepoState,
    ) -> None:
        repo = run.repo
        # Searches see the last refresh: without this one, the search for stale chunks
        # would still see the old copy of a chunk rewritten under the same id, and delete it.
        self._call("refresh the index", lambda: self.client.indices.refresh(index=self.alias))
        paths = sorted(set(remove_paths) | set(written_paths))
        for start in range(0, len(paths), _TERMS_PER_QUERY):
            self._delete_chunks(
                repo, {"terms": {"path": paths[start : start + _TERMS_PER_QUERY]}}, run.run
            )
        if run.earlier_pending:
            self._delete_chunks(repo, {"terms": {"run": run.earlier_pending}}, run.run)

        count = self._call(
            "count chunks",
            lambda: self.client.count(index=self.alias, body={"query": {"term": {"repo": repo}}}),
        )["count"]
        self._put_state(
            {
                "repo": repo,
                "commit": state.commit,
                "visibility": state.visibility,
                "chunk_count": int(count),
                "indexed_at": state.indexed_at,
                "config_version": state.config_version,
                "pending": [],
            }
        )

    def _delete_chunks(self, repo: str, match: dict[str, Any], keep_run: str) -> None:
        query = {
            "bool": {
                "filter": [{"term": {"repo": repo}}, match],
                "must_not": [{"term": {"run": keep_run}}],
            }
        }
        self._delete_where(repo, query)

    def _delete_where(self, repo: str, query: dict[str, Any]) -> None:
        """Delete every chunk of ``repo`` matching ``query``.

        Search-then-bulk-delete rather than ``_delete_by_query``: that endpoint lives in the
        optional ``reindex`` module, which minimal nodes (like the one scripts/opensearch.sh
        assembles) do not have. Each round deletes what it found, so no paging is needed.
        """
        body = {"size": _DELETE_PAGE, "_source": False, "track_total_hits": False, "query": query}
        routing = {"routing": repo} if self.routing else {}
        while True:
            response = self._call(
                "find chunks to delete",
                lambda: self.client.search(
                    index=self.alias, body=body, ignore_unavailable=True, **routing
                ),
            )
            ids = [h["_id"] for h in response["hits"]["hits"]]
            if ids:
                bulk_delete(
                    self.client,
                    self.url,
                    self.alias,
                    ids,
                    **routing,
                    batch_docs=self.batch_docs,
                    retry_delays=self.retry_delays,
                    refresh=True,  # the next round, and the caller's count, must not see them
                )
            if len(ids) < _DELETE_PAGE:
                return

    def _put_state(self, source: dict[str, Any], refresh: bool = True) -> None:
        self._call(
            "record the repository state",
            lambda: self.client.index(
                index=self.state_index, id=source["repo"], body=source, refresh=refresh
            ),
        )

    def delete_repo(self, repo: str) -> None:
        # Chunks first: if this fails half-way the state still lists the repo, so an
        # administrator sees it and can retry, instead of invisible searchable leftovers.
        if self._call("look up the index", lambda: self.client.indices.exists(index=self.alias)):
            self._delete_where(repo, {"term": {"repo": repo}})
        self._call(
            "delete the repository state",
            lambda: self.client.delete(index=self.state_index, id=repo, refresh=True, ignore=[404]),
        )

    def drop(self) -> None:
        """Delete every index of this alias and the state index (tests, benchmarks)."""
        self._call(
            "delete the indices",
            lambda: self.client.indices.delete(
                index=f"{self.alias}-v*,{self.state_index}", ignore_unavailable=True
            ),
        )

    # --- reads ----------------------------------------------------------------------

    def _state_source(self, repo: str) -> dict[str, Any] | None:
        response = self._call(
            "read the repository state",
            lambda: self.client.get(index=self.state_index, id=repo, ignore=[404]),
        )
        return response.get("_source") if response.get("found") else None

    def repo_state(self, repo: str) -> RepoState | None:
        source = self._state_source(repo)
        return None if source is None else repo_state_of(source)

    def repo_states(self) -> list[RepoState]:
        states: list[RepoState] = []
        after: list[Any] | None = None
        while True:
            body: dict[str, Any] = {
                "size": 1000,
                "sort": [{"repo": "asc"}],
                "query": {"exists": {"field": "commit"}},
            }
            if after is not None:
                body["search_after"] = after
            response = self._call(
                "list indexed repositories",
                lambda body=body: self.client.search(
                    index=self.state_index, body=body, ignore_unavailable=True
                ),
            )
            hits = response["hits"]["hits"]
            states.extend(s for h in hits if (s := repo_state_of(h["_source"])) is not None)
            if len(hits) < 1000:
                return states
            after = hits[-1]["sort"]

    def file_blobs(self, repo: str) -> dict[str, str]:
        """Path → blob sha; "" for a file a failed run touched (so it is indexed again)."""
        pending = set((self._state_source(repo) or {}).get("pending", []))
        blobs: dict[str, str] = {}
        composite: dict[str, Any] = {
            "size": 1000,
            "sources": [
                {"path": {"terms": {"field": "path"}}},
                {"blob": {"terms": {"field": "blob_sha"}}},
                {"run": {"terms": {"field": "run"}}},
            ],
        }
        while True:
            body = {
                "size": 0,
                "query": {"term": {"repo": repo}},
                "aggs": {"files": {"composite": composite}},
            }
            response = self._call(
                "list indexed files",
                lambda body=body: self.client.search(
                    index=self.alias, body=body, ignore_unavailable=True
                ),
            )
            agg = response.get("aggregations", {}).get("files", {})
            for bucket in agg.get("buckets", []):
                key = bucket["key"]
                path = key["path"]
                blob = "" if key["run"] in pending else key["blob"]
                seen = blobs.get(path)
                blobs[path] = blob if seen is None or seen == blob else ""
            if "after_key" not in agg or not agg.get("buckets"):
                return blobs
            composite = {**composite, "after": agg["after_key"]}

    def chunk_count(self) -> int:
        response = self._call(
            "count chunks",
            lambda: self.client.count(index=self.alias, ignore_unavailable=True),
        )
        return int(response.get("count", 0))

    # --- search ---------------------------------------------------------------------

    def search(self, request: SearchRequest) -> list[Hit]:
        if not request.repos:
            return []  # fail closed: no repository, no query at all
        bodies = search_bodies(request)
        if not bodies:
            return []
        header: dict[str, Any] = {"index": self.alias}
        if self.routing:  # only the shards that hold the allowed repositories
            header["routing"] = ",".join(sorted(request.repos))
        lines: list[dict[str, Any]] = []
        for body in bodies.values():
            lines += [header, body]
        response = self._call("search", lambda: self.client.msearch(body=lines))
        ranked: dict[str, list[str]] = {}
        chunks: dict[str, Chunk] = {}
        for name, result in zip(bodies, response["responses"], strict=True):
            if _missing_index(result):
                return []  # nothing indexed yet
            if "error" in result:
                raise StoreUnavailable(
                    f"OpenSearch at {public_url(self.url)} failed the {name} search: "
                    f"{result['error']}"
                )
            hits = result["hits"]["hits"]
            ranked[name] = [h["_id"] for h in hits]
            for h in hits:
                chunks.setdefault(h["_id"], source_chunk(h["_source"]))
        return fuse(request, ranked, chunks.values())
