"""OpenSearch going away, failing writes, and index upgrades that must be refused."""

from __future__ import annotations

import http.client
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np
import pytest

from indexer.embedding import SqliteEmbeddingCache
from indexer.errors import ConfigError, StoreUnavailable
from indexer.jobs import index_repository
from indexer.models import SearchRequest
from indexer.stores import SqliteStore
from indexer.stores.opensearch import OpenSearchStore, migrate
from indexer.stores.opensearch.mapping import CONCURRENT_SEARCH_SETTING
from tests.conftest import git
from tests.store_backends import (
    OPENSEARCH_URL,
    chunk,
    open_opensearch,
    opensearch_test,
    random_vectors,
    state,
)


def closed_port_url(credentials: str = "") -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://{credentials}127.0.0.1:{port}"


def test_unreachable_node_at_query_time_is_a_clear_error() -> None:
    url = closed_port_url("admin:s3cret@")
    store = open_opensearch(url, alias="codeask-chunks")
    request = SearchRequest(text="parse", repos=frozenset({"acme/web"}), embedding=(0.1,) * 8)
    with pytest.raises(StoreUnavailable) as caught:
        store.search(request)
    message = str(caught.value)
    assert "is unreachable" in message
    assert url.replace("admin:s3cret@", "") in message
    assert "s3cret" not in message
    with pytest.raises(StoreUnavailable, match="is unreachable"):
        store.repo_states()


def test_cli_search_against_a_stopped_node_prints_an_error_not_a_trace(
    embedder,  # type: ignore[no-untyped-def]
    data_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from bot import cli

    url = closed_port_url()
    monkeypatch.setenv("CODEASK_STORE", "opensearch")
    monkeypatch.setenv("CODEASK_OPENSEARCH_URL", url)
    monkeypatch.setattr(sys, "argv", ["codeask", "search", "retry", "--json"])
    with pytest.raises(SystemExit) as exited:
        cli.main()
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert f"OpenSearch at {url} is unreachable" in " ".join(err.split())
    assert "Traceback" not in err


class FlakyProxy:
    """Forwards HTTP to the real node; from the chosen ``_bulk`` request on, hangs up instead."""

    def __init__(self, target: str, fail_bulk_from: int) -> None:
        self.target = urlsplit(target)
        self.fail_bulk_from = fail_bulk_from
        self.bulk_requests = 0
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _forward(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if "/_bulk" in self.path:
                    proxy.bulk_requests += 1
                    if proxy.bulk_requests >= proxy.fail_bulk_from:
                        # The node "dies" mid-index: the connection drops without a reply.
                        self.close_connection = True
                        self.connection.shutdown(socket.SHUT_RDWR)
                        return
                conn = http.client.HTTPConnection(
                    proxy.target.hostname, proxy.target.port, timeout=30
                )
                headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
                conn.request(self.command, self.path, body=body, headers=headers)
                reply = conn.getresponse()
                data = reply.read()
                self.send_response(reply.status)
                for key, value in reply.getheaders():
                    if key.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _forward

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def direct() -> Iterator[OpenSearchStore]:
    store = open_opensearch()
    try:
        yield store
    finally:
        store.drop()
        store.close()


def _stored_ids(store: OpenSearchStore, repo: str) -> set[str]:
    store.client.indices.refresh(index=store.alias)
    body = {"size": 1000, "_source": False, "query": {"term": {"repo": repo}}}
    return {h["_id"] for h in store.client.search(index=store.alias, body=body)["hits"]["hits"]}


FILES = {
    "app/a.py": "def alpha():\n    return 1\n\n\ndef beta():\n    return 2\n",
    "app/b.py": "class Gamma:\n    def run(self):\n        return 3\n",
    "docs/c.md": "# Title\n\n## Usage\n\nCall alpha().\n",
}


@opensearch_test
def test_node_lost_mid_index_marks_nothing_done_and_next_run_completes(
    direct: OpenSearchStore,
    embedder,  # type: ignore[no-untyped-def]
    make_repo: Callable[[dict[str, str]], Path],
    tmp_path: Path,
) -> None:
    cache = SqliteEmbeddingCache(tmp_path / "embeddings.db")
    root = make_repo(FILES)
    first = index_repository(root, "acme/app", direct, embedder, cache)

    (root / "app/a.py").write_text(FILES["app/a.py"].replace("return 2", "return 22"))
    (root / "app/d.py").write_text("def delta():\n    return 4\n\n\ndef epsilon():\n    return 5\n")
    (root / "docs/c.md").unlink()
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "second")

    proxy = FlakyProxy(OPENSEARCH_URL, fail_bulk_from=2)
    flaky = open_opensearch(proxy.url, alias=direct.alias, batch_docs=1, retry_delays=(0.01,))
    try:
        with pytest.raises(StoreUnavailable, match="is unreachable"):
            index_repository(root, "acme/app", flaky, embedder, cache)
    finally:
        proxy.close()
        flaky.close()
    assert proxy.bulk_requests >= 2  # one batch got in before the node went away
    recorded = direct.repo_state("acme/app")
    assert recorded is not None and recorded.commit == first.commit

    second = index_repository(root, "acme/app", direct, embedder, cache)
    recorded = direct.repo_state("acme/app")
    assert recorded is not None and recorded.commit == second.commit != first.commit

    reference = SqliteStore(tmp_path / "reference.db")
    index_repository(root, "acme/app", reference, embedder, cache)
    expected = {c.id for c in reference.fetch(list(_reference_ids(reference)))}
    assert _stored_ids(direct, "acme/app") == expected
    assert direct.file_blobs("acme/app") == reference.file_blobs("acme/app")
    assert recorded.chunk_count == len(expected)


def _reference_ids(store: SqliteStore) -> list[str]:
    return [str(r[0]) for r in store._conn().execute("SELECT id FROM chunks")]


@opensearch_test
def test_bulk_rejected_documents_are_reported_and_state_untouched(direct: OpenSearchStore) -> None:
    direct.ensure_schema(8)
    good = chunk("acme/web", "a.py", 1, "def ok(): ...", "ok")
    direct.apply_changes("acme/web", [], [good], random_vectors(1, 8), state("acme/web"))
    bad = chunk("acme/web", "b.py", 1, "def bad(): ...", "bad", blob="b2")
    nan = np.full((1, 8), np.nan, dtype=np.float32)  # the node rejects non-finite vectors
    with pytest.raises(StoreUnavailable, match="rejected 1 of 1 chunks"):
        direct.apply_changes("acme/web", [], [bad], nan, state("acme/web", "c2"))
    recorded = direct.repo_state("acme/web")
    assert recorded is not None and recorded.commit == "c1"
    assert direct.file_blobs("acme/web") == {"a.py": "b1"}


@opensearch_test
def test_index_with_another_dimension_is_refused_then_migrated(
    direct: OpenSearchStore,
) -> None:
    direct.ensure_schema(8)
    direct.apply_changes(
        "acme/web",
        [],
        [chunk("acme/web", "a.py", 1, "x = 1", "x")],
        random_vectors(1, 8),
        state("acme/web"),
    )
    with pytest.raises(ConfigError, match=r"8-dimensional .* gives 16.*migrate-index"):
        direct.ensure_schema(16)
    mapping = direct.client.indices.get_mapping(index=direct.alias)
    assert next(iter(mapping.values()))["mappings"]["properties"]["embedding"]["dimension"] == 8

    moved = migrate(direct, 16)
    assert (moved.old_index, moved.new_index) == (f"{direct.alias}-v1", f"{direct.alias}-v2")
    assert moved.reindex_needed and moved.copied == 0
    assert direct.concrete_index() == f"{direct.alias}-v2"
    assert direct.repo_states() == []  # every repository must be embedded again
    direct.ensure_schema(16)  # now fits


@opensearch_test
def test_malformed_mapping_is_refused_and_migration_copies_chunks(
    direct: OpenSearchStore,
) -> None:
    direct.ensure_schema(8)
    direct.apply_changes(
        "acme/web",
        [],
        [chunk("acme/web", "a.py", 1, "def parseHTTPRequest(): ...", "parseHTTPRequest")],
        random_vectors(1, 8),
        state("acme/web"),
    )
    # An index someone built by hand: plain-text code field, no schema version.
    old = f"{direct.alias}-v1"
    hand_made = f"{direct.alias}-v7"
    direct.client.indices.create(
        index=hand_made,
        body={
            "settings": {"index.knn": True, "number_of_replicas": 0},
            "mappings": {
                "properties": {
                    "text": {"type": "keyword"},
                    "embedding": {
                        "type": "knn_vector",
                        "dimension": 8,
                        "method": {"name": "hnsw", "engine": "lucene", "space_type": "l2"},
                    },
                }
            },
        },
    )
    direct.client.indices.update_aliases(
        body={
            "actions": [
                {"remove": {"index": old, "alias": direct.alias}},
                {"add": {"index": hand_made, "alias": direct.alias}},
            ]
        }
    )
    with pytest.raises(ConfigError) as caught:
        direct.ensure_schema(8)
    assert "space_type 'l2'" in str(caught.value) and "'text' has type 'keyword'" in str(
        caught.value
    )

    # Back to the good index, then migrate it (same dimension: chunks are copied).
    direct.client.indices.update_aliases(
        body={
            "actions": [
                {"remove": {"index": hand_made, "alias": direct.alias}},
                {"add": {"index": old, "alias": direct.alias}},
            ]
        }
    )
    direct.client.indices.put_mapping(index=old, body={"_meta": {"codeask_schema": 0}})
    with pytest.raises(ConfigError, match="schema version"):
        direct.ensure_schema(8)
    moved = migrate(direct, 8, delete_old=True)
    assert (moved.new_index, moved.copied, moved.reindex_needed) == (f"{direct.alias}-v2", 1, False)
    direct.ensure_schema(8)
    hits = direct.search(
        SearchRequest(text="http request", repos=frozenset({"acme/web"}), lists=("bm25",))
    )
    assert [h.chunk.symbol for h in hits] == ["parseHTTPRequest"]
    assert direct.repo_state("acme/web") is not None


@opensearch_test
def test_switching_to_quantized_vectors_is_refused_then_migrated(
    direct: OpenSearchStore,
) -> None:
    direct.encoding = "float"
    direct.ensure_schema(8)
    vectors = random_vectors(3, 8)
    chunks = [chunk("acme/web", f"m{i}.py", 1, f"def f{i}(): ...", f"f{i}") for i in range(3)]
    direct.apply_changes("acme/web", [], chunks, vectors, state("acme/web"))
    direct.encoding = "sq"  # CODEASK_OPENSEARCH_VECTOR_ENCODING=sq on an index built without
    with pytest.raises(ConfigError, match=r"stored as float but .*VECTOR_ENCODING is sq"):
        direct.ensure_schema(8)

    moved = migrate(direct, 8, delete_old=True)
    assert (moved.copied, moved.reindex_needed) == (
        3,
        False,
    )  # same vectors: copied, not re-embedded
    direct.ensure_schema(8)
    mapping = direct.client.indices.get_mapping(index=direct.alias)
    method = next(iter(mapping.values()))["mappings"]["properties"]["embedding"]["method"]
    assert method["parameters"]["encoder"]["name"] == "sq"
    for i, expected in enumerate(chunks):  # the quantized graph still finds each vector first
        request = SearchRequest(
            text="", repos=frozenset({"acme/web"}), embedding=tuple(vectors[i]), lists=("knn",)
        )
        assert direct.search(request)[0].chunk.id == expected.id


def _concurrency(store: OpenSearchStore) -> str | None:
    found = store.client.indices.get_settings(
        index=store.alias, name=CONCURRENT_SEARCH_SETTING, flat_settings=True
    )
    values = [v["settings"].get(CONCURRENT_SEARCH_SETTING) for v in found.values()]
    return values[0] if values else None


@opensearch_test
def test_segment_concurrency_is_set_on_new_and_existing_indices(direct: OpenSearchStore) -> None:
    direct.ensure_schema(8)
    assert _concurrency(direct) == "all"  # the default: segments searched in parallel
    vectors = random_vectors(3, 8)
    chunks = [chunk("acme/web", f"m{i}.py", 1, f"def f{i}(): ...", f"f{i}") for i in range(3)]
    direct.apply_changes("acme/web", [], chunks, vectors, state("acme/web"))
    request = SearchRequest(
        text="", repos=frozenset({"acme/web"}), embedding=tuple(vectors[1]), lists=("knn",)
    )
    assert direct.search(request)[0].chunk.id == chunks[1].id

    direct.concurrent_search = "none"  # changed later: applied at the next start, no migration
    direct.ensure_schema(8)
    assert _concurrency(direct) == "none"
    assert direct.search(request)[0].chunk.id == chunks[1].id

    direct.concurrent_search = "cluster"  # left alone, for clusters that refuse it per index
    direct.ensure_schema(8)
    assert _concurrency(direct) == "none"


class _WatchingEmbedder:
    """The real embedder; before each call after the first, ``watch`` looks at the store."""

    def __init__(self, inner, watch: Callable[[int], None]) -> None:  # type: ignore[no-untyped-def]
        self.inner, self.watch, self.calls = inner, watch, 0

    @property
    def name(self) -> str:
        return str(self.inner.name)

    @property
    def dimension(self) -> int:
        return int(self.inner.dimension)

    def embed(self, texts):  # type: ignore[no-untyped-def]
        self.calls += 1
        self.watch(self.calls)
        return self.inner.embed(texts)


MANY_FILES = {f"app/m{i}.py": f"def f{i}(x):\n    return x + {i}\n" for i in range(8)}


@opensearch_test
def test_chunks_are_written_while_later_groups_are_still_embedding(
    direct: OpenSearchStore,
    embedder,  # type: ignore[no-untyped-def]
    make_repo: Callable[[dict[str, str]], Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("indexer.jobs.indexing.EMBED_GROUP", 2)  # 8 chunks: four groups
    root = make_repo(MANY_FILES)
    seen_before_last: list[int] = []

    def run_docs() -> int:
        pending = (direct._state_source("acme/app") or {}).get("pending", [])
        direct.client.indices.refresh(index=direct.alias)
        query = {"query": {"terms": {"run": pending}}}
        return int(direct.client.count(index=direct.alias, body=query)["count"])

    def watch(call: int) -> None:
        if call == 4:  # the last group: the earlier ones reach the store meanwhile
            deadline = time.monotonic() + 20
            while (found := run_docs()) == 0 and time.monotonic() < deadline:
                time.sleep(0.05)
            seen_before_last.append(found)
            assert direct.repo_state("acme/app") is None  # not marked done mid-run

    watching = _WatchingEmbedder(embedder, watch)
    cache = SqliteEmbeddingCache(tmp_path / "embeddings.db")
    report = index_repository(root, "acme/app", direct, watching, cache)
    assert watching.calls == 4 and report.chunks == 8
    assert seen_before_last and seen_before_last[0] >= 2
    reference = SqliteStore(tmp_path / "reference.db")
    index_repository(root, "acme/app", reference, embedder, cache)
    assert _stored_ids(direct, "acme/app") == set(_reference_ids(reference))
    recorded = direct.repo_state("acme/app")
    assert recorded is not None and recorded.commit == report.commit and recorded.chunk_count == 8


@opensearch_test
def test_a_failed_write_stops_the_run_before_everything_is_embedded(
    direct: OpenSearchStore,
    embedder,  # type: ignore[no-untyped-def]
    make_repo: Callable[[dict[str, str]], Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("indexer.jobs.indexing.EMBED_GROUP", 1)  # 8 groups of one chunk
    root = make_repo(MANY_FILES)
    direct.ensure_schema(embedder.dimension)
    slow = _WatchingEmbedder(embedder, lambda _call: time.sleep(0.3))
    proxy = FlakyProxy(OPENSEARCH_URL, fail_bulk_from=1)
    flaky = open_opensearch(proxy.url, alias=direct.alias, retry_delays=(0.01,))
    cache = SqliteEmbeddingCache(tmp_path / "embeddings.db")
    try:
        with pytest.raises(StoreUnavailable, match="is unreachable"):
            index_repository(root, "acme/app", flaky, slow, cache)
    finally:
        proxy.close()
        flaky.close()
    assert proxy.bulk_requests >= 1
    assert slow.calls < 8  # the run stopped instead of embedding the rest for nothing
    assert direct.repo_state("acme/app") is None
