"""CODEASK_EMBED_BACKEND=api: batches through LiteLLM to a local OpenAI-compatible embeddings
server over real HTTP (eval.local_embeddings), its failures, and indexes it may not mix."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest

from eval.local_embeddings import (
    DIMENSION,
    MODEL_NAME,
    Fault,
    LocalEmbeddings,
    bag_of_words,
    running_local_embeddings,
)
from indexer.embedding import (
    ApiEmbedder,
    Embedder,
    SqliteEmbeddingCache,
    WrappedEmbedder,
    embed_queries,
    open_embedder,
    vector_space,
)
from indexer.errors import ConfigError, UpstreamUnavailable
from indexer.jobs import index_repository
from indexer.search import Searcher
from indexer.settings import IndexerSettings
from indexer.stores import SqliteStore
from tests.test_cli import run
from tests.test_indexing import SHOP


@pytest.fixture(scope="module")
def server() -> Iterator[LocalEmbeddings]:
    with running_local_embeddings() as running:
        yield running


@pytest.fixture
def local(server: LocalEmbeddings) -> LocalEmbeddings:
    server.faults.clear()
    server.requests.clear()
    server.dimension = DIMENSION
    return server


def api(server: LocalEmbeddings, **options: object) -> ApiEmbedder:
    kwargs: dict[str, object] = {"backoff": 0.01, **options}
    return ApiEmbedder(MODEL_NAME, server.base_url, **kwargs)  # type: ignore[arg-type]


@pytest.fixture
def shop(make_repo: Callable[[dict[str, str]], Path]) -> Path:
    return make_repo(SHOP)


def expected(texts: Sequence[str]) -> np.ndarray:
    vectors = np.stack([bag_of_words(t) for t in texts])
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def test_texts_go_out_in_batches_and_come_back_in_order_normalised(
    local: LocalEmbeddings,
) -> None:
    texts = [f"text number {i} about topic{i % 7}" for i in range(23)]
    embedder = api(local, batch_size=5, concurrency=4)
    vectors = embedder.embed(texts)
    assert vectors.dtype == np.float32 and vectors.shape == (23, DIMENSION)
    assert embedder.dimension == DIMENSION
    np.testing.assert_allclose(vectors, expected(texts), atol=1e-6)
    assert sorted(len(r) for r in local.requests) == [3, 5, 5, 5, 5]
    assert sorted(t for r in local.requests for t in r) == sorted(texts)


def test_batches_run_concurrently(local: LocalEmbeddings) -> None:
    local.delay = 0.3
    try:
        started = time.perf_counter()
        api(local, batch_size=1, concurrency=4).embed([f"t{i}" for i in range(4)])
        assert time.perf_counter() - started < 0.9  # one after another would take 1.2 s
    finally:
        local.delay = 0.0


def test_questions_and_chunks_get_their_own_prefixes(local: LocalEmbeddings) -> None:
    embedder = api(local, query_prefix="query: ", document_prefix="passage: ")
    embedder.embed(["def parse(): pass"])
    embed_queries(embedder, ["where is parsing done"])
    assert local.requests == [["passage: def parse(): pass"], ["query: where is parsing done"]]
    # The document prefix changes every stored vector: it is part of the cache/config name.
    assert embedder.name != api(local, query_prefix="query: ").name
    assert api(local).name == f"api:openai/{MODEL_NAME}@127.0.0.1:{local.port}"


def test_the_searcher_embeds_questions_with_the_query_prefix_also_through_a_wrapper(
    local: LocalEmbeddings, store: SqliteStore
) -> None:
    store.ensure_schema(DIMENSION)
    searcher = Searcher(store, WrappedEmbedder(api(local, query_prefix="query: ")))
    searcher.embed_query("rate limiting")
    assert local.requests == [["query: rate limiting"]]


def test_a_wrapper_around_a_model_without_a_query_form_embeds_questions_through_itself(
    embedder: Embedder,
) -> None:
    seen: list[str] = []

    class Recording(WrappedEmbedder):
        def embed(self, texts: Sequence[str]) -> np.ndarray:
            seen.extend(texts)
            return super().embed(texts)

    vectors = embed_queries(Recording(embedder), ["a question"])
    assert seen == ["a question"] and vectors.shape == (1, embedder.dimension)


def test_a_rate_limit_is_retried_with_backoff(local: LocalEmbeddings) -> None:
    local.faults = [Fault(status=429), Fault(status=503)]
    vectors = api(local, retries=3).embed(["hello world"])
    assert len(local.requests) == 3
    np.testing.assert_allclose(vectors, expected(["hello world"]), atol=1e-6)


def test_a_failing_endpoint_gives_a_clear_error_after_the_retries(local: LocalEmbeddings) -> None:
    local.faults = [Fault(status=500)] * 10
    with pytest.raises(UpstreamUnavailable, match=r"is failing \(HTTP 500\) after 3 attempts"):
        api(local, retries=2).embed(["hello"])
    assert len(local.requests) == 3  # LiteLLM's own client does not retry on top of ours


def test_a_request_that_is_not_retried_says_what_the_endpoint_said(
    local: LocalEmbeddings,
) -> None:
    local.faults = [Fault(status=404)]
    with pytest.raises(ConfigError, match="does not know the model"):
        api(local).embed(["hello"])
    assert len(local.requests) == 1


def test_a_slow_endpoint_times_out_with_a_clear_error(local: LocalEmbeddings) -> None:
    local.faults = [Fault(delay=2.0)]
    started = time.perf_counter()
    with pytest.raises(UpstreamUnavailable, match=r"did not answer within 0\.3 s.*TIMEOUT"):
        api(local, timeout=0.3, retries=0).embed(["hello"])
    assert time.perf_counter() - started < 1.5


def test_an_endpoint_that_is_not_running_is_named() -> None:
    embedder = ApiEmbedder(MODEL_NAME, "http://127.0.0.1:9", retries=1, backoff=0.01)
    with pytest.raises(UpstreamUnavailable, match=r"Cannot reach .*127\.0\.0\.1:9/v1.*2 times"):
        embedder.embed(["hello"])


def test_vectors_of_another_size_in_a_later_batch_are_refused(local: LocalEmbeddings) -> None:
    embedder = api(local, batch_size=2, concurrency=1)
    local.faults = [Fault(), Fault(dimension=DIMENSION // 2)]
    with pytest.raises(ConfigError, match=r"returned 128-dimensional vectors .* 256 were expected"):
        embedder.embed(["a", "b", "c", "d"])


def test_the_configured_dimension_is_checked_from_the_first_reply(local: LocalEmbeddings) -> None:
    embedder = api(local, dimension=1536)
    assert embedder.dimension == 1536 and not local.requests  # known without asking
    with pytest.raises(ConfigError, match=r"CODEASK_EMBED_DIMENSION.*re-index"):
        embedder.embed(["a"])


def test_settings_choose_the_api_backend(
    local: LocalEmbeddings, monkeypatch: pytest.MonkeyPatch, data_dir: Path
) -> None:
    for name, value in {
        "CODEASK_EMBED_BACKEND": "api",
        "CODEASK_EMBED_MODEL": MODEL_NAME,
        "CODEASK_EMBED_API_BASE": local.base_url.removesuffix("/v1"),
        "CODEASK_EMBED_API_KEY": "sk-secret",
        "CODEASK_EMBED_BATCH_SIZE": "2",
        "CODEASK_EMBED_DOCUMENT_PREFIX": "passage: ",
    }.items():
        monkeypatch.setenv(name, value)
    settings = IndexerSettings()
    assert "sk-secret" not in repr(settings)
    embedder = open_embedder(settings)
    assert isinstance(embedder, ApiEmbedder) and open_embedder(settings) is embedder
    vectors = embedder.embed(["a", "b", "c"])
    # batches go out concurrently (CODEASK_EMBED_CONCURRENCY), so the server sees them in any order
    assert sorted(local.requests) == [["passage: a", "passage: b"], ["passage: c"]]
    assert [list(v) for v in vectors] == [list(v) for v in embedder.embed(["a", "b", "c"])]
    assert list(vectors[2]) == list(embedder.embed(["c"])[0])  # the vectors keep the input order


def test_local_backends_of_one_model_share_a_vector_space() -> None:
    assert vector_space("all-MiniLM-L6-v2@onnx-int8") == vector_space("all-MiniLM-L6-v2")
    assert vector_space("all-MiniLM-L6-v2@bf16") == "all-MiniLM-L6-v2"
    assert vector_space("api:openai/m@host") != vector_space("all-MiniLM-L6-v2")


def test_an_index_of_the_local_model_refuses_the_api_embedder_with_the_reindex_advice(
    local: LocalEmbeddings,
    shop: Path,
    store: SqliteStore,
    cache: SqliteEmbeddingCache,
    embedder: Embedder,
) -> None:
    root = shop
    index_repository(root, "acme/shop", store, embedder, cache)
    remote = api(local)
    with pytest.raises(ConfigError, match=r"384-dimensional.*gives 256.*Re-index"):
        index_repository(root, "acme/other", store, remote, cache)
    with pytest.raises(ConfigError, match=r"another embedding model.*codeask index --full"):
        Searcher(store, remote).search("TokenBucket", frozenset({"acme/shop"}))
    assert store.repo_state("acme/other") is None


def test_another_model_of_the_same_size_is_not_mixed_into_an_index(
    local: LocalEmbeddings,
    make_repo: Callable[[dict[str, str]], Path],
    shop: Path,
    store: SqliteStore,
    cache: SqliteEmbeddingCache,
) -> None:
    root = shop
    index_repository(root, "acme/shop", store, api(local), cache)
    other = ApiEmbedder("another-model", local.base_url, backoff=0.01)
    with pytest.raises(ConfigError, match=r"another embedding model \(api:openai/codeask"):
        index_repository(make_repo({"a.py": "x = 1\n"}), "acme/other", store, other, cache)
    with pytest.raises(ConfigError, match="re-index every repository"):
        Searcher(store, other).search("TokenBucket", frozenset({"acme/shop"}))
    # The repository itself may move to the new model: all of its vectors are replaced.
    report = index_repository(root, "acme/shop", store, other, cache)
    assert report.full


def test_a_repository_indexed_with_the_api_embedder_is_searchable(
    local: LocalEmbeddings, shop: Path, store: SqliteStore, cache: SqliteEmbeddingCache
) -> None:
    root = shop
    embedder = api(local, batch_size=2, concurrency=3, query_prefix="query: ")
    report = index_repository(root, "acme/shop", store, embedder, cache)
    assert report.chunks >= 4 and report.embedded == report.chunks
    searcher = Searcher(store, embedder)
    repos = frozenset({"acme/shop"})
    assert searcher.search("TokenBucket capacity", repos, k=3, lists=("knn",))[0].chunk.path == (
        "shop/limits.py"
    )
    hits = searcher.search("send the receipt email to the customer", repos, k=3)
    assert hits[0].chunk.symbol == "send_receipt"
    sent = len(local.requests)
    again = index_repository(root, "acme/shop", store, embedder, cache)
    assert again.embedded == 0 and len(local.requests) == sent  # nothing re-sent


def test_concurrent_callers_share_one_embedder(local: LocalEmbeddings) -> None:
    embedder = api(local, batch_size=3, concurrency=2)
    results: dict[int, np.ndarray] = {}

    def run(n: int) -> None:
        results[n] = embedder.embed([f"caller {n} text {i}" for i in range(7)])

    threads = [threading.Thread(target=run, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for n, vectors in results.items():
        np.testing.assert_allclose(
            vectors, expected([f"caller {n} text {i}" for i in range(7)]), atol=1e-6
        )


def test_the_cli_indexes_and_searches_through_the_endpoint(
    local: LocalEmbeddings, shop: Path, tmp_path: Path
) -> None:
    env = {
        "CODEASK_EMBED_BACKEND": "api",
        "CODEASK_EMBED_MODEL": MODEL_NAME,
        "CODEASK_EMBED_API_BASE": local.base_url,
    }
    data = tmp_path / "cli-data"
    indexed = run(["index", str(shop), "--repo", "acme/shop"], data, **env)
    assert indexed.returncode == 0, indexed.stderr
    found = run(["search", "TokenBucket capacity", "--json"], data, **env)
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)[0]["path"] == "shop/limits.py"
    assert local.requests  # the vectors came from the endpoint
    moved = run(["search", "TokenBucket", "--json"], data)  # the local model: refused
    assert moved.returncode != 0 and "codeask index --full" in moved.stdout + moved.stderr
