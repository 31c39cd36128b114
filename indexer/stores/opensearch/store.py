"""The production store: chunks in one OpenSearch index (BM25 + k-NN), repo state beside it.

Writes are not transactional in OpenSearch, so searches get a consistent view instead:
each indexing run is a generation of a repository's chunks, hidden while the run is
pending in the repository's state and shown, with the chunks it replaces hidden, by the
one state write that commits it (``opensearch_runs``). A search reads the states, hides
what they say, and runs again if they changed while it ran.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from opensearchpy import OpenSearch
from opensearchpy import exceptions as os_errors

from indexer.errors import ConfigError, StoreUnavailable
from indexer.models import Chunk, FileRequest, Hit, NameRequest, RepoState, SearchRequest
from indexer.settings import IndexerSettings
from indexer.stores.contract import assert_chunks_allowed, fuse
from indexer.stores.opensearch import runs
from indexer.stores.opensearch.client import (
    DEFAULT_RETRY_DELAYS,
    call,
    connect,
    public_url,
    translate,
)
from indexer.stores.opensearch.documents import (
    file_body,
    names_body,
    replaced_for_good,
    repo_state_of,
    search_bodies,
    source_chunk,
)
from indexer.stores.opensearch.mapping import (
    CONCURRENT_SEARCH_SETTING,
    check_mapping,
    chunk_index_body,
    in_place_upgrade,
    state_index_body,
)
from indexer.stores.opensearch.runs import WriteRun

# Searches run again while the repositories' states change under them; past this many,
# the last answer stands (it takes that many runs beginning or committing in a row).
_VIEW_ATTEMPTS = 5
_MAX_PENDING_STATES = 10_000  # index.max_result_window

log = logging.getLogger(__name__)


def state_index_name(alias: str) -> str:
    """``codeask-chunks`` → ``codeask-state``; any other alias gets ``-state`` appended."""
    return alias.removesuffix("-chunks") + "-state"


def _missing_index(response: dict[str, Any]) -> bool:
    error = response.get("error")
    return isinstance(error, dict) and error.get("type") == "index_not_found_exception"


@dataclass(frozen=True)
class _View:
    """What a search hides (the pending runs) and the version of the states it read."""

    newest: float | None
    states: float | None
    hidden: frozenset[str]


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
        # Told the kind of every failed request (the client's exception class), so the
        # metrics count OpenSearch's errors where they happen; set by bot.services.
        self.on_error: Callable[[str], None] | None = None

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
        try:
            return call(self.url, what, fn)
        except (StoreUnavailable, ConfigError) as exc:
            if self.on_error is not None:
                try:
                    self.on_error(type(exc.__cause__ or exc).__name__)
                except Exception:  # counting never changes what the caller sees
                    log.exception("an OpenSearch error could not be counted")
            raise

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
        """Create the indices, or check that the existing mapping fits; never rebuilds one.

        The things set on an existing index are fields the previous schema version lacks
        (``upgrade_in_place``) and the search-time segment concurrency
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
        mapping = self.upgrade_in_place(index, dimension)
        problems = check_mapping(mapping, dimension, self.routing, self.encoding)
        if problems:
            raise ConfigError(
                f"The OpenSearch index {index} (alias {self.alias}) does not fit this "
                f"configuration: {'; '.join(problems)}. Nothing was changed. Run `codeask "
                "migrate-index` to build the next index version, copy or re-embed the chunks "
                "and move the alias, or point CODEASK_OPENSEARCH_INDEX at a new alias."
            )

    def upgrade_in_place(self, index: str, dimension: int) -> dict[str, Any]:
        """The mapping of ``index``, first brought up to this schema version when that only
        adds fields (their absence reads as the old behaviour: no reindex needed)."""
        indices = self.client.indices
        mapping = self._call("read the mapping", lambda: indices.get_mapping(index=index))
        body = in_place_upgrade(mapping[index]["mappings"], dimension, self.routing, self.encoding)
        if body is None:
            return dict(mapping[index]["mappings"])
        self._call("add fields to the mapping", lambda: indices.put_mapping(index=index, body=body))
        mapping = self._call("read the mapping", lambda: indices.get_mapping(index=index))
        return dict(mapping[index]["mappings"])

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
    # (indexer.stores.contract.StreamingWrites).

    def begin_changes(self, repo: str) -> WriteRun:
        return runs.begin(self, repo)

    def write_chunks(self, run: WriteRun, chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
        runs.write(self, run, chunks, vectors)

    def finish_changes(
        self,
        run: WriteRun,
        remove_paths: Sequence[str],
        written_paths: Sequence[str],
        state: RepoState,
    ) -> None:
        runs.finish(self, run, remove_paths, written_paths, state)

    def delete_repo(self, repo: str) -> None:
        # Chunks first: if this fails half-way the state still lists the repo, so an
        # administrator sees it and can retry, instead of invisible searchable leftovers.
        if self._call("look up the index", lambda: self.client.indices.exists(index=self.alias)):
            runs.delete_where(self, repo, {"term": {"repo": repo}})
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
        # Every chunk but those a committed run replaced: a pending run's files count as
        # changed, whether it wrote them or was replacing them.
        query = {
            "bool": {
                "filter": [{"term": {"repo": repo}}],
                "must_not": [replaced_for_good(pending)],
            }
        }
        while True:
            body = {"size": 0, "query": query, "aggs": {"files": {"composite": composite}}}
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
        """Fused hits from the chunks visible in one view of the repositories' states.

        The states are read again after the search: if any of them changed meanwhile (a
        run began or committed), the chunks may have moved under the search, so it runs
        again in the new view.
        """
        if not request.repos:
            return []  # fail closed: no repository, no query at all
        view = self._view(request.repos)
        for _ in range(_VIEW_ATTEMPTS):
            hits = self._search_in(request, view.hidden)
            now = self._view(request.repos)
            if now == view:
                return hits
            view = now
        log.warning("the index kept changing during a search; answering from the last view")
        return hits

    def find_names(self, request: NameRequest) -> list[Chunk]:
        """Chunks of ``request.repos`` that hold the name, from one view of their states."""
        if not request.repos or not request.key:
            return []  # fail closed, as a search
        found = self._in_one_view(
            request.repos,
            lambda hidden: self._chunks_of(
                "find names", names_body(request, hidden), request.repos
            ),
        )
        assert_chunks_allowed(found, request.repos)
        return found

    def file_chunks(self, request: FileRequest) -> list[Chunk]:
        """The chunks of one file of an allowed repository, from one view of its state."""
        if request.repo not in request.repos:
            return []  # fail closed: the same answer as a file that is not indexed
        only = frozenset({request.repo})
        found = self._in_one_view(
            only, lambda hidden: self._chunks_of("read a file", file_body(request, hidden), only)
        )
        assert_chunks_allowed(found, request.repos)
        return found

    def _in_one_view(
        self, repos: frozenset[str], read: Callable[[frozenset[str]], list[Chunk]]
    ) -> list[Chunk]:
        """``read(hidden runs)`` again until the repositories' states stood still around it."""
        view = self._view(repos)
        for _ in range(_VIEW_ATTEMPTS):
            found = read(view.hidden)
            now = self._view(repos)
            if now == view:
                break
            view = now
        return found

    def _chunks_of(self, what: str, body: dict[str, Any], repos: frozenset[str]) -> list[Chunk]:
        kwargs: dict[str, Any] = {
            "index": self.alias,
            "body": body,
            "ignore_unavailable": True,  # nothing indexed yet: nothing found
        }
        if self.routing:  # only the shards that hold the allowed repositories
            kwargs["routing"] = ",".join(sorted(repos))
        response = self._call(what, lambda: self.client.search(**kwargs))
        chunks = [source_chunk(h["_source"]) for h in response["hits"]["hits"]]
        return list({c.id: c for c in chunks}.values())

    def _view(self, repos: frozenset[str]) -> _View:
        """The runs pending in ``repos`` and a version of their states.

        In the one-shard state index every write takes the next sequence number, so the
        highest one among ``repos`` and their number change whenever one of them does.
        """
        body = {
            "size": _MAX_PENDING_STATES,
            "track_total_hits": False,
            "query": {"terms": {"repo": sorted(repos)}},
            "post_filter": {"exists": {"field": "pending"}},
            "_source": ["pending"],
            "aggs": {
                "newest": {"max": {"field": "_seq_no"}},
                "states": {"value_count": {"field": "repo"}},
            },
        }
        response = self._call(
            "read the repository states",
            lambda: self.client.search(index=self.state_index, body=body, ignore_unavailable=True),
        )
        aggs = response.get("aggregations", {})
        hidden = frozenset(
            run for h in response["hits"]["hits"] for run in h["_source"].get("pending", [])
        )
        return _View(
            aggs.get("newest", {}).get("value"), aggs.get("states", {}).get("value"), hidden
        )

    def _search_in(self, request: SearchRequest, hidden_runs: frozenset[str]) -> list[Hit]:
        bodies = search_bodies(request, hidden_runs)
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
            # By chunk id, not document id: a chunk rewritten unchanged is stored beside
            # the visible copy under another id until its run commits.
            found = [source_chunk(h["_source"]) for h in result["hits"]["hits"]]
            ranked[name] = list(dict.fromkeys(c.id for c in found))
            for c in found:
                chunks.setdefault(c.id, c)
        return fuse(request, ranked, chunks.values())
