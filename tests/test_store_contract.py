"""The SearchBackend contract, run against the embedded store and a real OpenSearch node."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from indexer.embedding import SqliteEmbeddingCache
from indexer.errors import ConfigError
from indexer.jobs import index_repository
from indexer.models import FileRequest, SearchRequest
from indexer.search import Searcher
from indexer.stores import SearchBackend
from tests.conftest import git
from tests.store_backends import BACKENDS, chunk, open_backend, random_vectors, state

DIM = 8


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SearchBackend]:
    yield from open_backend(request.param, tmp_path)


PARSER = chunk(
    "acme/web",
    "src/http/parser.py",
    1,
    "def parseHTTPRequest(raw):\n    return HttpRequest(raw)",
    "parseHTTPRequest",
)
CONN = chunk(
    "acme/web",
    "src/db/conn.py",
    1,
    "class DatabaseConnection:\n    def open_socket(self): ...",
    "DatabaseConnection",
)
RETRY = chunk(
    "acme/web",
    "src/db/conn.py",
    3,
    "def retry_with_backoff(fn, attempts):\n    time.sleep(2 ** attempts)",
    "retry_with_backoff",
)


def _load(store: SearchBackend) -> np.ndarray:
    store.ensure_schema(DIM)
    vectors = random_vectors(3, DIM)
    store.apply_changes("acme/web", [], [PARSER, CONN, RETRY], vectors, state("acme/web"))
    return vectors


def _ids(store: SearchBackend, text: str, repos: set[str], **kw: object) -> list[str]:
    hits = store.search(SearchRequest(text=text, repos=frozenset(repos), **kw))  # type: ignore[arg-type]
    return [h.chunk.id for h in hits]


def test_identifier_found_whole_and_by_its_parts(store: SearchBackend) -> None:
    _load(store)
    bm25 = {"lists": ("bm25",)}
    assert _ids(store, "parseHTTPRequest", {"acme/web"}, **bm25)[0] == PARSER.id
    assert _ids(store, "http request parsing", {"acme/web"}, **bm25)[0] == PARSER.id
    assert _ids(store, "open_socket", {"acme/web"}, **bm25)[0] == CONN.id
    assert _ids(store, "socket", {"acme/web"}, **bm25)[0] == CONN.id


def test_search_returns_exact_chunks_with_their_fields(store: SearchBackend) -> None:
    _load(store)
    hits = store.search(SearchRequest(text="retry_with_backoff", repos=frozenset({"acme/web"})))
    assert hits[0].chunk == RETRY
    assert hits[0].chunk.location == "src/db/conn.py:3-4"


def test_knn_ranks_the_nearest_vector_first(store: SearchBackend) -> None:
    vectors = _load(store)
    for i, expected in enumerate([PARSER, CONN, RETRY]):
        request = SearchRequest(
            text="", repos=frozenset({"acme/web"}), embedding=tuple(vectors[i]), lists=("knn",)
        )
        assert store.search(request)[0].chunk.id == expected.id


def test_replacing_a_file_removes_its_old_chunks(store: SearchBackend) -> None:
    _load(store)
    new_conn = chunk(
        "acme/web",
        "src/db/conn.py",
        1,
        "class PooledConnection:\n    pass",
        "PooledConnection",
        "b2",
    )
    store.apply_changes(
        "acme/web",
        ["src/db/conn.py"],
        [new_conn],
        random_vectors(1, DIM, 1),
        state("acme/web", "c2"),
    )
    assert store.file_blobs("acme/web") == {"src/http/parser.py": "b1", "src/db/conn.py": "b2"}
    found = _ids(store, "retry_with_backoff DatabaseConnection", {"acme/web"}, lists=("bm25",))
    assert found == [new_conn.id]  # "connection" still matches; the old chunks are gone
    assert _ids(store, "PooledConnection", {"acme/web"})[0] == new_conn.id
    current = store.repo_state("acme/web")
    assert current is not None and (current.commit, current.chunk_count) == ("c2", 2)


def test_chunks_of_a_rewritten_path_are_replaced_even_if_not_listed(store: SearchBackend) -> None:
    _load(store)
    again = chunk(
        "acme/web", "src/http/parser.py", 1, "def parse_body(raw): ...", "parse_body", "b3"
    )
    store.apply_changes("acme/web", [], [again], random_vectors(1, DIM, 2), state("acme/web", "c3"))
    assert store.file_blobs("acme/web")["src/http/parser.py"] == "b3"
    assert PARSER.id not in _ids(store, "parseHTTPRequest", {"acme/web"}, lists=("bm25",))


def test_deleting_a_path_removes_it_from_search_and_files(store: SearchBackend) -> None:
    _load(store)
    empty = np.zeros((0, DIM), dtype=np.float32)
    store.apply_changes("acme/web", ["src/db/conn.py"], [], empty, state("acme/web", "c2"))
    assert store.file_blobs("acme/web") == {"src/http/parser.py": "b1"}
    assert _ids(store, "DatabaseConnection retry_with_backoff", {"acme/web"}, lists=("bm25",)) == []
    current = store.repo_state("acme/web")
    assert current is not None and current.chunk_count == 1


def test_delete_repo_leaves_other_repos_alone(store: SearchBackend) -> None:
    _load(store)
    other = chunk("acme/api", "server.py", 1, "def parseHTTPRequest(): ...", "parseHTTPRequest")
    store.apply_changes("acme/api", [], [other], random_vectors(1, DIM, 3), state("acme/api"))
    store.delete_repo("acme/web")
    assert [s.repo for s in store.repo_states()] == ["acme/api"]
    assert store.repo_state("acme/web") is None
    assert store.file_blobs("acme/web") == {}
    found = _ids(store, "parseHTTPRequest", {"acme/web", "acme/api"}, lists=("bm25",))
    assert found == [other.id]


def test_symbol_list_holds_the_definitions_of_named_identifiers(store: SearchBackend) -> None:
    vectors = _load(store)
    caller = chunk(
        "acme/web",
        "src/jobs.py",
        1,
        "def nightly():\n    retry_with_backoff(sync, 5)\n    retry_with_backoff(sync, 5)",
        "nightly",
    )
    store.apply_changes("acme/web", [], [caller], random_vectors(1, DIM, 4), state("acme/web"))
    symbol = {"lists": ("symbol",)}
    # The definition, not the chunk that only mentions the name (BM25 finds both).
    assert _ids(store, "why does retry_with_backoff sleep?", {"acme/web"}, **symbol) == [RETRY.id]
    assert set(
        _ids(store, "why does retry_with_backoff sleep?", {"acme/web"}, lists=("bm25",))
    ) >= {
        RETRY.id,
        caller.id,
    }
    # CamelCase names match whole; a receiver variable (``conn.``) is not a symbol.
    assert _ids(store, "what does conn.DatabaseConnection hold", {"acme/web"}, **symbol) == [
        CONN.id
    ]
    # Plain words name no identifier: no symbol list at all.
    assert _ids(store, "how are sockets opened", {"acme/web"}, **symbol) == []
    fused = store.search(
        SearchRequest(
            text="retry_with_backoff",
            repos=frozenset({"acme/web"}),
            embedding=tuple(vectors[1]),
        )
    )
    assert fused[0].chunk.id == RETRY.id and set(fused[0].ranks) == {"bm25", "knn", "symbol"}


@pytest.mark.parametrize(
    "lists", [("bm25",), ("knn",), ("symbol",), ("bm25", "knn"), ("bm25", "knn", "symbol")]
)
def test_repo_filter_is_respected_by_every_list(
    store: SearchBackend, lists: tuple[str, ...]
) -> None:
    vectors = _load(store)
    twins = [
        chunk("acme/secret", c.path, c.start_line, c.text, c.symbol) for c in (PARSER, CONN, RETRY)
    ]
    store.apply_changes("acme/secret", [], twins, vectors, state("acme/secret"))
    for repos in ({"acme/web"}, {"acme/secret"}):
        request = SearchRequest(
            text="parseHTTPRequest DatabaseConnection",
            repos=frozenset(repos),
            embedding=tuple(vectors[0]),
            lists=lists,
        )
        hits = store.search(request)
        assert hits, repos
        assert {h.chunk.repo for h in hits} == repos


def test_empty_repo_set_matches_nothing(store: SearchBackend) -> None:
    vectors = _load(store)
    request = SearchRequest(text="parseHTTPRequest", repos=frozenset(), embedding=tuple(vectors[0]))
    assert store.search(request) == []


def test_unknown_repo_matches_nothing(store: SearchBackend) -> None:
    vectors = _load(store)
    request = SearchRequest(
        text="parseHTTPRequest", repos=frozenset({"acme/nope"}), embedding=tuple(vectors[0])
    )
    assert store.search(request) == []


def test_a_file_reads_back_as_its_chunks_in_line_order(store: SearchBackend) -> None:
    _load(store)
    allowed = frozenset({"acme/web"})
    found = store.file_chunks(FileRequest("acme/web", "src/db/conn.py", allowed))
    assert [(c.start_line, c.symbol) for c in found] == [
        (1, "DatabaseConnection"),
        (3, "retry_with_backoff"),
    ]
    assert found[1].text == RETRY.text and found[1].commit == "c1"
    assert store.file_chunks(FileRequest("acme/web", "src/db/none.py", allowed)) == []


def test_a_file_of_a_repo_outside_the_allowed_set_reads_as_not_indexed(
    store: SearchBackend,
) -> None:
    _load(store)
    for allowed in (frozenset(), frozenset({"acme/other"})):
        assert store.file_chunks(FileRequest("acme/web", "src/db/conn.py", allowed)) == []


def test_a_deleted_file_reads_as_not_indexed(store: SearchBackend) -> None:
    _load(store)
    store.apply_changes("acme/web", ["src/db/conn.py"], [], np.zeros((0, DIM)), state("acme/web"))
    allowed = frozenset({"acme/web"})
    assert store.file_chunks(FileRequest("acme/web", "src/db/conn.py", allowed)) == []
    assert [c.path for c in store.file_chunks(FileRequest("acme/web", PARSER.path, allowed))] == [
        PARSER.path
    ]


def test_state_is_recorded_with_the_write(store: SearchBackend) -> None:
    store.ensure_schema(DIM)
    assert store.repo_state("acme/web") is None
    assert store.repo_states() == []
    assert store.file_blobs("acme/web") == {}
    _load(store)
    recorded = store.repo_state("acme/web")
    assert recorded is not None
    assert (recorded.commit, recorded.visibility, recorded.chunk_count) == ("c1", "private", 3)
    assert recorded.config_version == "test-v1"
    assert store.repo_states() == [recorded]


def test_mismatched_vectors_change_nothing(store: SearchBackend) -> None:
    _load(store)
    with pytest.raises(ValueError):
        store.apply_changes(
            "acme/web",
            ["src/db/conn.py"],
            [PARSER],
            random_vectors(2, DIM),
            state("acme/web", "c9"),
        )
    current = store.repo_state("acme/web")
    assert current is not None and current.commit == "c1"
    assert len(store.file_blobs("acme/web")) == 2


def test_schema_for_another_dimension_is_refused(store: SearchBackend) -> None:
    _load(store)
    store.ensure_schema(DIM)  # same dimension: fine, idempotent
    with pytest.raises(ConfigError, match="dimensional"):
        store.ensure_schema(DIM * 2)
    assert len(store.file_blobs("acme/web")) == 2  # nothing was changed


RETRY_PY = '''"""HTTP client helpers."""

import time


def parse_retry_after(header: str) -> float:
    """Seconds to wait, from a Retry-After header."""
    return float(header.strip())


class RetryPolicy:
    """Retries failed requests, waiting longer after each failure (exponential backoff)."""

    def __init__(self, attempts: int = 5) -> None:
        self.attempts = attempts

    def delay(self, attempt: int) -> float:
        return 0.5 * 2**attempt
'''

USERS_PY = '''from dataclasses import dataclass


@dataclass
class User:
    login: str
    email: str


def load_users_from_csv(path: str) -> list[User]:
    """Read the user table exported from the admin console."""
    with open(path) as fh:
        return [User(*line.strip().split(",")) for line in fh]
'''

README = "# Demo\n\n## Install\n\nRun `pip install demo` and set DEMO_TOKEN.\n"


def test_index_then_search_a_real_repository(
    store: SearchBackend, embedder, make_repo: Callable[[dict[str, str]], Path], tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    root = make_repo({"net/retry.py": RETRY_PY, "users.py": USERS_PY, "README.md": README})
    cache = SqliteEmbeddingCache(tmp_path / "embeddings.db")
    report = index_repository(root, "acme/demo", store, embedder, cache, visibility="internal")
    assert report.changed_files == 3
    searcher = Searcher(store, embedder)
    repos = frozenset({"acme/demo"})

    hit = searcher.search("parse_retry_after", repos, k=3)[0]
    assert (hit.chunk.path, hit.chunk.symbol) == ("net/retry.py", "parse_retry_after")
    assert hit.chunk.visibility == "internal"
    concept = searcher.search("how long do we wait before trying a request again", repos, k=3)
    assert concept[0].chunk.path == "net/retry.py"
    assert searcher.search("parse_retry_after", frozenset({"acme/other"})) == []

    (root / "users.py").write_text(USERS_PY.replace("admin console", "billing system"))
    (root / "README.md").unlink()
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "second")
    again = index_repository(root, "acme/demo", store, embedder, cache, visibility="internal")
    assert (again.changed_files, again.deleted_files) == (1, 1)
    assert sorted(store.file_blobs("acme/demo")) == ["net/retry.py", "users.py"]
    recorded = store.repo_state("acme/demo")
    assert recorded is not None and recorded.commit == again.commit
    billing = searcher.search("billing system", repos, k=1, lists=("bm25",))
    assert billing[0].chunk.symbol.startswith("load_users_from_csv")
