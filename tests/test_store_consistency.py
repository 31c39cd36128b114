"""A search sees one version of every file: the old one until a run commits, then the new
one; never both, never half of one, never what an unfinished run wrote."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from indexer.errors import IndexingError
from indexer.models import Chunk, RepoState, SearchRequest
from indexer.stores import SearchBackend, StreamingWrites
from indexer.stores.opensearch import OpenSearchStore
from indexer.stores.opensearch.documents import search_bodies, visible_filter
from indexer.stores.opensearch.mapping import SCHEMA_VERSION, chunk_index_body, in_place_upgrade
from tests.store_backends import (
    BACKENDS,
    chunk,
    open_backend,
    opensearch_test,
    random_vectors,
    state,
)

DIM = 8
REPO = "acme/web"
CONN = "src/db/conn.py"
OTHERS = ("src/http/parser.py", "src/retry.py")


def version(path: str, name: str, blob: str, parts: int = 2) -> list[Chunk]:
    """``parts`` chunks of one version of ``path``, defining ``<name>Alpha``, ``<name>Beta``..."""
    return [
        chunk(REPO, path, 1 + 3 * i, f"def {name}{part}(x):\n    return x", f"{name}{part}", blob)
        for i, part in enumerate(("Alpha", "Beta", "Gamma")[:parts])
    ]


OLD = version(CONN, "connectOld", "b1")
NEW = version(CONN, "connectNew", "b2", parts=3)
NEWER = version(CONN, "connectNewer", "b3")
UNCHANGED = version(OTHERS[0], "parseRequest", "b1") + version(OTHERS[1], "retryBackoff", "b1")
QUESTION = " ".join(c.symbol for c in OLD + NEW + NEWER + UNCHANGED)


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SearchBackend]:
    yield from open_backend(request.param, tmp_path)


def _vectors(chunks: Sequence[Chunk], seed: int) -> np.ndarray:
    return random_vectors(len(chunks), DIM, seed)


def _first_run(store: SearchBackend) -> None:
    store.ensure_schema(DIM)
    chunks = OLD + UNCHANGED
    store.apply_changes(REPO, [], chunks, _vectors(chunks, 1), state(REPO, "c1"))


def seen(store: SearchBackend) -> dict[str, Counter[tuple[str, str]]]:
    """Per search list, how many chunks of each (path, blob) a question finds."""
    found: dict[str, Counter[tuple[str, str]]] = {}
    for name in ("bm25", "symbol", "knn"):
        request = SearchRequest(
            text=QUESTION,
            repos=frozenset({REPO}),
            k=50,
            embedding=tuple(float(x) for x in random_vectors(1, DIM, 99)[0]),
            lists=(name,),
        )
        found[name] = Counter((h.chunk.path, h.chunk.blob_sha) for h in store.search(request))
    return found


def only(*versions: list[Chunk]) -> dict[str, Counter[tuple[str, str]]]:
    expected = Counter((c.path, c.blob_sha) for v in versions for c in v)
    return {name: expected for name in ("bm25", "symbol", "knn")}


def stored_chunks(store: SearchBackend) -> int:
    """Every chunk document the store holds, searchable or not."""
    if isinstance(store, OpenSearchStore):
        store.client.indices.refresh(index=store.alias)
    return int(store.chunk_count())  # type: ignore[attr-defined]


class _Gate:
    """Chunks that stop the embedded store's write transaction after the first one, until
    released (the transaction stays open: a slow write) or killed (it rolls back)."""

    def __init__(self, chunks: Sequence[Chunk]) -> None:
        self.chunks = list(chunks)
        self.reached, self.released = threading.Event(), threading.Event()
        self.killed = False
        self.iterations = 0

    def __len__(self) -> int:
        return len(self.chunks)

    def __iter__(self) -> Iterator[Chunk]:
        self.iterations += 1
        for i, c in enumerate(self.chunks):
            if i == 1 and self.iterations == 2:  # inside the transaction's insert loop
                self.reached.set()
                self.released.wait(30)
                if self.killed:
                    raise KeyboardInterrupt("the worker was killed")
            yield c


class Run:
    """One run held part-way: its chunks are written, nothing is committed yet."""

    def __init__(
        self,
        store: SearchBackend,
        remove: Sequence[str],
        chunks: Sequence[Chunk],
        vectors: np.ndarray,
        new_state: RepoState,
    ) -> None:
        self.store, self.remove, self.chunks, self.state = store, list(remove), chunks, new_state
        self.error: BaseException | None = None
        if isinstance(store, StreamingWrites):
            self.run = store.begin_changes(REPO)
            store.write_chunks(self.run, chunks, vectors)
            if isinstance(store, OpenSearchStore):  # a slow run's writes get refreshed
                store.client.indices.refresh(index=store.alias)
            return
        self.gate = _Gate(chunks)

        def write() -> None:
            try:
                store.apply_changes(REPO, remove, self.gate, vectors, new_state)  # type: ignore[arg-type]
            except BaseException as exc:
                self.error = exc

        self.thread = threading.Thread(target=write, daemon=True)
        self.thread.start()
        assert self.gate.reached.wait(30)

    def finish(self) -> None:
        if isinstance(self.store, StreamingWrites):
            paths = sorted({c.path for c in self.chunks})
            self.store.finish_changes(self.run, self.remove, paths, self.state)
            return
        self.gate.released.set()
        self.thread.join(30)
        assert self.error is None

    def kill(self) -> None:
        if isinstance(self.store, StreamingWrites):
            return  # the process is gone: nothing more is written
        self.gate.killed = True
        self.gate.released.set()
        self.thread.join(30)
        assert isinstance(self.error, KeyboardInterrupt)


def test_search_during_a_slow_reindex_sees_only_the_old_version(store: SearchBackend) -> None:
    _first_run(store)
    run = Run(store, [CONN], NEW, _vectors(NEW, 2), state(REPO, "c2"))
    assert seen(store) == only(OLD, UNCHANGED)
    assert store.repo_state(REPO).commit == "c1"  # type: ignore[union-attr]
    run.finish()
    assert seen(store) == only(NEW, UNCHANGED)
    recorded = store.repo_state(REPO)
    assert recorded is not None and (recorded.commit, recorded.chunk_count) == ("c2", 7)


def test_search_during_a_slow_full_reindex_keeps_every_file(store: SearchBackend) -> None:
    """A full run rewrites unchanged chunks under the same ids (here to change their
    visibility): until it commits, the chunks as they were stay searchable."""
    _first_run(store)
    everything = [replace(c, visibility="internal") for c in OLD + UNCHANGED]
    remove = sorted({c.path for c in everything})
    run = Run(store, remove, everything, _vectors(everything, 3), state(REPO, "c2", "internal"))
    assert seen(store) == only(OLD, UNCHANGED)
    assert _visibilities(store) == {"private"}
    run.finish()
    assert seen(store) == only(OLD, UNCHANGED)
    assert _visibilities(store) == {"internal"}
    assert stored_chunks(store) == len(everything)


def _visibilities(store: SearchBackend) -> set[str]:
    request = SearchRequest(text=QUESTION, repos=frozenset({REPO}), k=50, lists=("bm25",))
    return {h.chunk.visibility for h in store.search(request)}


def test_a_killed_run_leaves_the_old_version_and_the_next_run_cleans_up(
    store: SearchBackend,
) -> None:
    _first_run(store)
    before = stored_chunks(store)
    Run(store, [CONN], NEW, _vectors(NEW, 2), state(REPO, "c2")).kill()
    assert seen(store) == only(OLD, UNCHANGED)
    assert store.repo_state(REPO).commit == "c1"  # type: ignore[union-attr]

    store.apply_changes(REPO, [CONN], NEWER, _vectors(NEWER, 4), state(REPO, "c3"))
    assert seen(store) == only(NEWER, UNCHANGED)
    assert stored_chunks(store) == before == len(NEWER + UNCHANGED)
    assert store.file_blobs(REPO) == {CONN: "b3", OTHERS[0]: "b1", OTHERS[1]: "b1"}


def test_an_incremental_run_leaves_the_other_paths_visible_throughout(
    store: SearchBackend,
) -> None:
    _first_run(store)
    run = Run(store, [CONN], NEW, _vectors(NEW, 2), state(REPO, "c2"))
    assert seen(store) == only(OLD, UNCHANGED)
    run.finish()
    assert seen(store) == only(NEW, UNCHANGED)
    # The next run deletes one file and changes nothing else: the rest stays as it was.
    empty = np.zeros((0, DIM), dtype=np.float32)
    store.apply_changes(REPO, [OTHERS[1]], [], empty, state(REPO, "c3"))
    assert seen(store) == only(NEW, UNCHANGED[:2])
    assert stored_chunks(store) == len(NEW + UNCHANGED[:2])
    assert store.repo_state(REPO).chunk_count == len(NEW + UNCHANGED[:2])  # type: ignore[union-attr]


def _during_search(
    store: SearchBackend, monkeypatch: pytest.MonkeyPatch, action: Callable[[], None]
) -> None:
    """Run ``action`` once, inside the next search: after it decided what to look at,
    before it read the chunks."""
    done: list[bool] = []

    def once(real: Callable[..., Any]) -> Callable[..., Any]:
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            if not done:
                done.append(True)
                action()
            return real(*args, **kwargs)

        return wrapped

    if isinstance(store, OpenSearchStore):
        monkeypatch.setattr(store.client, "msearch", once(store.client.msearch))
    else:
        monkeypatch.setattr(store, "fetch", once(store.fetch))  # type: ignore[attr-defined]


def test_a_run_committing_in_the_middle_of_a_search_shows_one_version(
    store: SearchBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    _first_run(store)
    if isinstance(store, StreamingWrites):
        run = Run(store, [CONN], NEW, _vectors(NEW, 2), state(REPO, "c2"))
        _during_search(store, monkeypatch, run.finish)
    else:
        vectors = _vectors(NEW, 2)
        _during_search(
            store,
            monkeypatch,
            lambda: store.apply_changes(REPO, [CONN], NEW, vectors, state(REPO, "c2")),
        )
    request = SearchRequest(text=QUESTION, repos=frozenset({REPO}), k=50, lists=("bm25",))
    found = Counter((h.chunk.path, h.chunk.blob_sha) for h in store.search(request))
    assert found == only(NEW, UNCHANGED)["bm25"]


# --- OpenSearch: a run that dies while it commits, and indices from before generations --


@pytest.fixture
def opensearch(tmp_path: Path) -> Iterator[OpenSearchStore]:
    for store in open_backend("opensearch", tmp_path):
        assert isinstance(store, OpenSearchStore)
        yield store


@opensearch_test
@pytest.mark.parametrize("step", ["commit", "delete_replaced"])
def test_a_run_killed_while_it_commits_shows_one_version(
    opensearch: OpenSearchStore, monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    _first_run(opensearch)
    run = Run(opensearch, [CONN], NEW, _vectors(NEW, 2), state(REPO, "c2"))

    def killed(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt("the worker was killed")

    with monkeypatch.context() as patch:
        patch.setattr(f"indexer.stores.opensearch.runs.{step}", killed)
        with pytest.raises(KeyboardInterrupt):
            run.finish()
    # Before the commit: the old version; after it: the new one, its leftovers hidden.
    committed = step != "commit"
    assert seen(opensearch) == (only(NEW, UNCHANGED) if committed else only(OLD, UNCHANGED))
    # A file the dead run touched counts as changed until it committed; after, as it wrote it.
    assert opensearch.file_blobs(REPO)[CONN] == ("b2" if committed else "")
    opensearch.apply_changes(REPO, [CONN], NEWER, _vectors(NEWER, 4), state(REPO, "c3"))
    assert seen(opensearch) == only(NEWER, UNCHANGED)
    assert stored_chunks(opensearch) == len(NEWER + UNCHANGED)
    assert opensearch.repo_state(REPO).chunk_count == len(NEWER + UNCHANGED)  # type: ignore[union-attr]


@opensearch_test
def test_a_run_that_another_run_took_for_dead_does_not_commit(
    opensearch: OpenSearchStore,
) -> None:
    """Two runs of one repository at once (a lease that lapsed): the later one wins."""
    _first_run(opensearch)
    first = Run(opensearch, [CONN], NEW, _vectors(NEW, 2), state(REPO, "c2"))
    second = Run(opensearch, [CONN], NEWER, _vectors(NEWER, 4), state(REPO, "c3"))
    with pytest.raises(IndexingError, match="Another run of acme/web began"):
        first.finish()
    assert seen(opensearch) == only(OLD, UNCHANGED)
    second.finish()
    assert seen(opensearch) == only(NEWER, UNCHANGED)
    assert stored_chunks(opensearch) == len(NEWER + UNCHANGED)
    assert opensearch.repo_state(REPO).commit == "c3"  # type: ignore[union-attr]


@opensearch_test
def test_an_index_from_before_generations_is_upgraded_in_place(
    opensearch: OpenSearchStore,
) -> None:
    """Its documents carry no ``retired`` field and stay visible; no reindex is needed."""
    body = chunk_index_body(DIM, 1, 0, opensearch.alias, opensearch.routing, opensearch.encoding)
    del body["mappings"]["properties"]["retired"]
    body["mappings"]["_meta"]["codeask_schema"] = 2
    opensearch.client.indices.create(index=f"{opensearch.alias}-v1", body=body)
    chunks = OLD + UNCHANGED
    vectors = _vectors(chunks, 1)
    docs = [
        {
            "repo": c.repo,
            "path": c.path,
            "start_line": c.start_line,
            "end_line": c.end_line,
            "symbol": c.symbol,
            "language": c.language,
            "kind": c.kind,
            "visibility": c.visibility,
            "commit": c.commit,
            "blob_sha": c.blob_sha,
            "header": c.header,
            "text": c.text,
            "run": "an-old-run",
            "embedding": [float(x) for x in v],
        }
        for c, v in zip(chunks, vectors, strict=True)
    ]
    for c, doc in zip(chunks, docs, strict=True):
        routing = {"routing": c.repo} if opensearch.routing else {}
        opensearch.client.index(index=opensearch.alias, id=c.id, body=doc, **routing)
    opensearch.client.indices.refresh(index=opensearch.alias)

    opensearch.ensure_schema(DIM)
    index = opensearch.concrete_index()
    assert index == f"{opensearch.alias}-v1"
    mapping = opensearch.client.indices.get_mapping(index=index)[index]["mappings"]
    assert mapping["_meta"]["codeask_schema"] == SCHEMA_VERSION
    assert seen(opensearch) == only(OLD, UNCHANGED)

    run = Run(opensearch, [CONN], NEW, _vectors(NEW, 2), state(REPO, "c2"))
    assert seen(opensearch) == only(OLD, UNCHANGED)
    run.finish()
    assert seen(opensearch) == only(NEW, UNCHANGED)
    assert stored_chunks(opensearch) == len(NEW + UNCHANGED)


# --- the query bodies and the mapping upgrade, without a node -----------------------


def test_every_search_list_filters_by_repository_and_visibility_together() -> None:
    request = SearchRequest(
        text="where is retry_with_backoff", repos=frozenset({REPO}), embedding=(0.1,) * DIM
    )
    bodies = search_bodies(request, {"pending-run"})
    allowed = visible_filter({REPO}, {"pending-run"})
    assert set(bodies) == {"bm25", "symbol", "knn"}
    assert bodies["bm25"]["query"]["bool"]["filter"] == [allowed]
    assert bodies["symbol"]["query"]["bool"]["filter"] == [allowed]
    assert bodies["knn"]["query"]["knn"]["embedding"]["filter"] == allowed
    assert allowed["bool"]["filter"] == [{"terms": {"repo": [REPO]}}]
    assert {"terms": {"run": ["pending-run"]}} in allowed["bool"]["must_not"]


def test_only_indexes_whose_later_versions_only_added_fields_are_upgraded_in_place() -> None:
    mappings = chunk_index_body(DIM, 1, 0, "codeask-chunks")["mappings"]
    assert in_place_upgrade(mappings, DIM) is None  # current: nothing to do
    names = ("defines", "references", "literals")  # schema 4 added the names index
    keyword = {"type": "keyword"}

    def at(version: int, missing: tuple[str, ...]) -> dict[str, object]:
        kept = {k: v for k, v in mappings["properties"].items() if k not in missing}
        return {**mappings, "_meta": {"codeask_schema": version}, "properties": kept}

    assert in_place_upgrade(at(3, names), DIM) == {
        "_meta": {"codeask_schema": SCHEMA_VERSION},
        "properties": dict.fromkeys(names, keyword),
    }
    assert in_place_upgrade(at(2, ("retired", *names)), DIM) == {
        "_meta": {"codeask_schema": SCHEMA_VERSION},
        "properties": dict.fromkeys(("retired", *names), keyword),
    }
    assert in_place_upgrade(at(3, names), DIM + 1) is None  # another dimension: migrate-index
    assert in_place_upgrade(at(1, ("retired", *names)), DIM) is None  # 2 changed more
