"""OpenSearch vs the embedded store: indexing throughput and hybrid query latency.

Synthetic corpus (code-like identifiers, random unit vectors: embedding is excluded), spread
over 100 repositories; every query is BM25 + k-NN filtered to 10 random repositories
(10% of the corpus), fused by RRF, exactly as ``codeask search`` runs it.

    .venv/bin/python bench/bench_opensearch.py --sizes 100000 \
        --opensearch-url http://127.0.0.1:9200

Prints a markdown table. Not a test: it takes minutes and needs a running node.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from indexer.backend import SearchBackend
from indexer.models import Chunk, RepoState, SearchRequest
from indexer.opensearch_store import OpenSearchStore
from indexer.settings import IndexerSettings
from indexer.sqlite_store import SqliteStore

REPOS = 100
FILTER_REPOS = 10
DIMENSION = 384
CHUNKS_PER_FILE = 5
_VOCABULARY = (
    "parse request response http client server retry backoff token session user account "
    "invoice payment order cart price tax cache store index search query filter page limit "
    "config setting option flag logger metric trace span error exception handler router "
    "middleware auth permission role group repo commit branch diff merge chunk vector embed "
    "score rank fuse stream buffer reader writer encode decode json yaml schema model field"
)
WORDS = _VOCABULARY.split()


@dataclass
class Result:
    store: str
    chunks: int
    index_seconds: float
    p50_ms: float
    p95_ms: float

    @property
    def chunks_per_second(self) -> float:
        return self.chunks / self.index_seconds


def identifier(rng: np.random.Generator) -> str:
    parts = rng.choice(WORDS, size=int(rng.integers(1, 4)))
    if rng.random() < 0.5:
        return "_".join(parts)
    return parts[0] + "".join(p.capitalize() for p in parts[1:])


def synthetic_repo(repo: str, n: int, rng: np.random.Generator) -> tuple[list[Chunk], np.ndarray]:
    chunks = []
    for i in range(n):
        name = identifier(rng)
        body = "\n".join(
            f"    {identifier(rng)} = {identifier(rng)}({identifier(rng)})" for _ in range(8)
        )
        file_no, part = divmod(i, CHUNKS_PER_FILE)
        chunks.append(
            Chunk(
                repo=repo,
                path=f"src/{identifier(rng)}/{file_no}.py",
                start_line=part * 10 + 1,
                end_line=part * 10 + 9,
                text=f"def {name}():\n{body}",
                symbol=name,
                language="python",
                kind="source",
                header=f"# src/module_{file_no}.py",
                visibility="private",
                commit="c0",
                blob_sha=f"{file_no:08x}",
            )
        )
    vectors = rng.standard_normal((n, DIMENSION)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return chunks, vectors


def load(store: SearchBackend, total: int, seed: int) -> float:
    """Index ``total`` chunks as REPOS repositories; returns seconds spent in the store."""
    rng = np.random.default_rng(seed)
    store.ensure_schema(DIMENSION)
    spent = 0.0
    per_repo = total // REPOS
    for r in range(REPOS):
        repo = f"bench/repo{r:03d}"
        chunks, vectors = synthetic_repo(repo, per_repo, rng)
        state = RepoState(repo, "c0", "private", 0, time.time(), "bench")
        started = time.perf_counter()
        store.apply_changes(repo, [], chunks, vectors, state)
        spent += time.perf_counter() - started
        if (r + 1) % 10 == 0:
            print(f"  {store.__class__.__name__}: {(r + 1) * per_repo} chunks", flush=True)
    return spent


def requests(queries: int, seed: int) -> Iterator[SearchRequest]:
    rng = np.random.default_rng(seed)
    for _ in range(queries):
        repos = rng.choice(REPOS, size=FILTER_REPOS, replace=False)
        vector = rng.standard_normal(DIMENSION).astype(np.float32)
        vector /= np.linalg.norm(vector)
        yield SearchRequest(
            text=f"{identifier(rng)} {identifier(rng)} {rng.choice(WORDS)}",
            repos=frozenset(f"bench/repo{r:03d}" for r in repos),
            k=10,
            candidates=50,
            embedding=tuple(float(x) for x in vector),
        )


def measure(store: SearchBackend, queries: int, seed: int) -> tuple[float, float]:
    for request in requests(20, seed + 1):  # warm caches, JIT, the vector matrix
        store.search(request)
    latencies = []
    for request in requests(queries, seed + 2):
        started = time.perf_counter()
        hits = store.search(request)
        latencies.append((time.perf_counter() - started) * 1000)
        assert all(h.chunk.repo in request.repos for h in hits)
    cuts = statistics.quantiles(latencies, n=100)
    return cuts[49], cuts[94]


def run(kind: str, total: int, args: argparse.Namespace, workdir: Path) -> Result:
    store: SearchBackend
    if kind == "opensearch":
        settings = IndexerSettings(
            store="opensearch",
            opensearch_url=args.opensearch_url,
            opensearch_index=f"codeask-bench-{uuid.uuid4().hex[:8]}",
            opensearch_timeout=120,
        )
        store = OpenSearchStore.from_settings(settings)
    else:
        store = SqliteStore(workdir / f"bench-{total}.db")
    try:
        seconds = load(store, total, args.seed)
        p50, p95 = measure(store, args.queries, args.seed)
        return Result(kind, total, seconds, p50, p95)
    finally:
        if isinstance(store, OpenSearchStore) and not args.keep:
            store.drop()
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000", help="comma-separated corpus sizes")
    parser.add_argument("--stores", default="embedded,opensearch")
    parser.add_argument("--opensearch-url", default="http://127.0.0.1:9200")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--keep", action="store_true", help="keep the OpenSearch index")
    args = parser.parse_args()
    rows = [
        "| store | chunks | index chunks/s | hybrid p50 ms | hybrid p95 ms |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    with tempfile.TemporaryDirectory() as tmp:
        for total in (int(s) for s in args.sizes.split(",")):
            for kind in args.stores.split(","):
                r = run(kind, total, args, Path(tmp))
                rows.append(
                    f"| {r.store} | {r.chunks:,} | {r.chunks_per_second:,.0f} | "
                    f"{r.p50_ms:.1f} | {r.p95_ms:.1f} |"
                )
                print("\n".join(rows), flush=True)  # each row as soon as it is measured


if __name__ == "__main__":
    main()
