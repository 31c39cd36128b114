"""OpenSearch vs the embedded store: indexing throughput and hybrid query latency.

Two corpora, both with random unit vectors (embedding is excluded) and spread over 100
repositories:

- ``--corpus synthetic`` (the default): code-like identifiers from a 90-word vocabulary, so
  every query word is in ~40% of the chunks (a worst case for BM25); queries are two
  identifiers and a word from the same vocabulary.
- ``--corpus code``: real Python source (every ``.py`` file under ``--code-root``, the
  virtualenv's site-packages by default, read in path order and cut into windows of 6-10
  lines, wrapping around when a size needs more), and the golden-set questions
  (``eval/golden/*.jsonl``) as the queries.

Every query is BM25 + k-NN filtered to 10 random repositories (10% of the corpus), fused by
RRF, exactly as ``codeask search`` runs it. Besides the hybrid latency, the BM25 and k-NN
lists are timed alone (same queries).

    .venv/bin/python bench/bench_opensearch.py --sizes 100000 \
        --opensearch-url http://127.0.0.1:9200

OpenSearch options: ``--bulk-load`` (refresh_interval -1 and bigger bulk requests during
the load, restored after; the store still refreshes after each repository, as it must),
``--force-merge`` (after the first measurement, merge to ``--merge-segments`` segments,
one by default, and measure again),
``--writers N`` (repositories written at once), ``--shards N``, ``--routing`` (chunks routed by repository), ``--vector-encoding sq`` (Lucene scalar quantization), ``--candidates 20,50`` (more query variants), ``--index NAME --no-load``
(measure an index kept by an earlier ``--keep`` run).

Prints a markdown table. Not a test: it takes minutes and needs a running node.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sysconfig
import tempfile
import threading
import time
import uuid
import zlib
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from indexer.models import Chunk, RepoState, SearchRequest
from indexer.settings import IndexerSettings
from indexer.stores import SearchBackend, SqliteStore
from indexer.stores.opensearch import OpenSearchStore

REPOS = 100
FILTER_REPOS = 10
DIMENSION = 384
CHUNKS_PER_FILE = 5
IDENTIFIER_POOL = 50_000
_VOCABULARY = (
    "parse request response http client server retry backoff token session user account "
    "invoice payment order cart price tax cache store index search query filter page limit "
    "config setting option flag logger metric trace span error exception handler router "
    "middleware auth permission role group repo commit branch diff merge chunk vector embed "
    "score rank fuse stream buffer reader writer encode decode json yaml schema model field"
)
WORDS = _VOCABULARY.split()
ROOT = Path(__file__).resolve().parent.parent
_DEFINITION = re.compile(r"^\s*(?:async\s+)?(?:def|class)\s+([A-Za-z_]\w*)", re.MULTILINE)


@dataclass
class Result:
    store: str
    variant: str
    chunks: int
    index_seconds: float
    hybrid: tuple[float, float]
    bm25: tuple[float, float]
    knn: tuple[float, float]
    segments: int | None = None
    disk_mb: float | None = None
    rss_mb: float | None = None

    @property
    def chunks_per_second(self) -> float:
        return self.chunks / self.index_seconds if self.index_seconds else float("nan")


def unit_vectors(rng: np.random.Generator, n: int) -> np.ndarray:
    """Random unit vectors standing in for embeddings (embedding time is excluded)."""
    vectors = rng.standard_normal((n, DIMENSION)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors


def identifier(rng: np.random.Generator) -> str:
    parts = rng.choice(WORDS, size=int(rng.integers(1, 4)))
    if rng.random() < 0.5:
        return "_".join(parts)
    return parts[0] + "".join(p.capitalize() for p in parts[1:])


def identifier_pool(seed: int) -> list[str]:
    """Identifiers drawn once; chunks sample from them (drawing each one is too slow at 1M)."""
    rng = np.random.default_rng(seed)
    return [identifier(rng) for _ in range(IDENTIFIER_POOL)]


def synthetic_repo(
    repo: str, n: int, rng: np.random.Generator, pool: list[str]
) -> tuple[list[Chunk], np.ndarray]:
    picks = rng.integers(0, len(pool), size=(n, 25))
    chunks = []
    for i in range(n):
        row = [pool[j] for j in picks[i]]
        name = row[0]
        body = "\n".join(f"    {row[j]} = {row[j + 1]}({row[j + 2]})" for j in range(1, 25, 3))
        file_no, part = divmod(i, CHUNKS_PER_FILE)
        chunks.append(
            Chunk(
                repo=repo,
                path=f"src/{pool[file_no % len(pool)]}/{file_no}.py",
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
    return chunks, unit_vectors(rng, n)


def code_windows(root: Path, seed: int) -> Iterator[tuple[str, int, int, str]]:
    """(path, start line, end line, text) windows of 6-10 lines over every ``.py`` under root.

    Files are read in path order (one package after another, as repositories hold them);
    unreadable and binary files are skipped. The walk starts again when it runs out, so
    any corpus size can be served.
    """
    files = sorted(root.rglob("*.py"))
    if not files:
        raise SystemExit(f"no .py files under {root}")
    rng = np.random.default_rng(seed)
    while True:
        for file in files:
            try:
                lines = file.read_text(encoding="utf-8").splitlines()
            except (OSError, UnicodeDecodeError):
                continue
            path = file.relative_to(root).as_posix()
            start = 0
            while start < len(lines):
                size = int(rng.integers(6, 11))
                text = "\n".join(lines[start : start + size])
                if text.strip():
                    yield path, start + 1, min(start + size, len(lines)), text
                start += size


def code_repo(
    repo: str, n: int, rng: np.random.Generator, windows: Iterator[tuple[str, int, int, str]]
) -> tuple[list[Chunk], np.ndarray]:
    chunks = []
    for _ in range(n):
        path, start, end, text = next(windows)
        found = _DEFINITION.search(text)
        symbol = found.group(1) if found else Path(path).stem
        chunks.append(
            Chunk(
                repo=repo,
                path=path,
                start_line=start,
                end_line=end,
                text=text,
                symbol=symbol,
                language="python",
                kind="source",
                header=f"# {path}",
                visibility="private",
                commit="c0",
                blob_sha=f"{zlib.crc32(path.encode()):08x}",
            )
        )
    return chunks, unit_vectors(rng, n)


def golden_questions() -> list[str]:
    questions = []
    for file in sorted((ROOT / "eval" / "golden").glob("*.jsonl")):
        for line in file.read_text(encoding="utf-8").splitlines():
            if line.strip():
                questions.append(json.loads(line)["question"])
    return questions


CORPUS = {"kind": "synthetic", "root": None}


def load(store: SearchBackend, total: int, seed: int, writers: int = 1) -> float:
    """Index ``total`` chunks as REPOS repositories; returns seconds spent in the store.

    With ``writers`` > 1, that many repositories are written at once (as that many
    ``codeask worker`` processes would) and the wall time of the whole load is returned.
    """
    rng = np.random.default_rng(seed)
    if CORPUS["kind"] == "code":
        windows = code_windows(Path(CORPUS["root"]), seed)

        def make(repo: str, n: int) -> tuple[list[Chunk], np.ndarray]:
            return code_repo(repo, n, rng, windows)

    else:
        pool = identifier_pool(seed)

        def make(repo: str, n: int) -> tuple[list[Chunk], np.ndarray]:
            return synthetic_repo(repo, n, rng, pool)

    store.ensure_schema(DIMENSION)
    per_repo = total // REPOS
    spent = 0.0
    lock = threading.Lock()

    def write(repo: str, chunks: list[Chunk], vectors: np.ndarray) -> None:
        nonlocal spent
        state = RepoState(repo, "c0", "private", 0, time.time(), "bench")
        started = time.perf_counter()
        store.apply_changes(repo, [], chunks, vectors, state)
        with lock:
            spent += time.perf_counter() - started

    wall = time.perf_counter()
    in_flight: list[Future[None]] = []
    with ThreadPoolExecutor(max_workers=writers) as executor:
        for r in range(REPOS):
            repo = f"bench/repo{r:03d}"
            chunks, vectors = make(repo, per_repo)
            while len(in_flight) >= writers:  # at most one repository waiting per writer
                done, _ = wait(in_flight, return_when=FIRST_COMPLETED)
                for future in done:
                    future.result()
                in_flight = [f for f in in_flight if not f.done()]
            in_flight.append(executor.submit(write, repo, chunks, vectors))
            if (r + 1) % 10 == 0:
                print(
                    f"  {store.__class__.__name__}: {(r + 1) * per_repo} chunks submitted, "
                    f"{time.perf_counter() - wall:.0f} s",
                    flush=True,
                )
        for future in in_flight:
            future.result()
    return spent if writers == 1 else time.perf_counter() - wall


def requests(
    queries: int, seed: int, candidates: int, filter_repos: int = FILTER_REPOS
) -> Iterator[SearchRequest]:
    rng = np.random.default_rng(seed)
    questions = golden_questions() if CORPUS["kind"] == "code" else []
    for q in range(queries):
        repos = rng.choice(REPOS, size=filter_repos, replace=False)
        vector = rng.standard_normal(DIMENSION).astype(np.float32)
        vector /= np.linalg.norm(vector)
        if questions:
            text = questions[q % len(questions)]
        else:
            text = f"{identifier(rng)} {identifier(rng)} {rng.choice(WORDS)}"
        yield SearchRequest(
            text=text,
            repos=frozenset(f"bench/repo{r:03d}" for r in repos),
            k=10,
            candidates=candidates,
            embedding=tuple(float(x) for x in vector),
        )


def latencies(
    store: SearchBackend,
    queries: int,
    seed: int,
    candidates: int,
    lists: tuple[str, ...],
    filter_repos: int,
) -> tuple[float, float]:
    latencies = []
    for request in requests(queries, seed + 2, candidates, filter_repos):
        request = replace(request, lists=lists)
        started = time.perf_counter()
        hits = store.search(request)
        latencies.append((time.perf_counter() - started) * 1000)
        assert all(h.chunk.repo in request.repos for h in hits)
    cuts = statistics.quantiles(latencies, n=100)
    return cuts[49], cuts[94]


def measure(
    store: SearchBackend, queries: int, seed: int, candidates: int, filter_repos: int
) -> dict[str, tuple[float, float]]:
    for request in requests(20, seed + 1, candidates):  # warm caches, JIT, the vector matrix
        store.search(request)
    return {
        name: latencies(store, queries, seed, candidates, lists, filter_repos)
        for name, lists in (("hybrid", ("bm25", "knn")), ("bm25", ("bm25",)), ("knn", ("knn",)))
    }


def rss_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def opensearch_pid() -> int | None:
    found = subprocess.run(
        ["pgrep", "-o", "-f", "org.opensearch.bootstrap.OpenSearch"],
        capture_output=True,
        text=True,
        check=False,
    )
    return int(found.stdout.split()[0]) if found.stdout.strip() else None


def opensearch_stats(store: OpenSearchStore) -> tuple[int, float, float | None]:
    """Segments and on-disk size of the chunk index, resident memory of the node's JVM."""
    stats = store.client.indices.stats(index=store.alias, metric="segments,store")
    total = stats["_all"]["primaries"]
    pid = opensearch_pid()
    return (
        int(total["segments"]["count"]),
        total["store"]["size_in_bytes"] / 1e6,
        rss_mb(pid) if pid else None,
    )


def row(
    kind: str, variant: str, total: int, seconds: float, lat: dict[str, tuple[float, float]]
) -> Result:
    return Result(kind, variant, total, seconds, lat["hybrid"], lat["bm25"], lat["knn"])


def run_opensearch(total: int, args: argparse.Namespace) -> list[Result]:
    settings = IndexerSettings(
        store="opensearch",
        opensearch_url=args.opensearch_url,
        opensearch_index=args.index or f"codeask-bench-{uuid.uuid4().hex[:8]}",
        opensearch_shards=args.shards,
        opensearch_routing=args.routing,
        opensearch_vector_encoding=args.vector_encoding,
        opensearch_timeout=600,
        opensearch_concurrent_segment_search=args.concurrent_search,
    )
    store = OpenSearchStore.from_settings(settings)
    name = f"{args.corpus} corpus, {args.shards} shard{'s' if args.shards > 1 else ''}"
    if args.routing:
        name += ", routed by repo"
    if args.vector_encoding != "float":
        name += f", {args.vector_encoding} vectors"
    name += f", concurrent segment search {args.concurrent_search}"
    if args.writers > 1:
        name += f", {args.writers} writers"
    results: list[Result] = []
    try:
        seconds = 0.0
        store.ensure_schema(DIMENSION)  # checks the mapping, applies --concurrent-search
        if not args.no_load:
            if args.bulk_load:
                store.batch_docs = args.batch_docs
                store.client.indices.put_settings(
                    index=store.alias, body={"index": {"refresh_interval": "-1"}}
                )
                name += f", bulk load ({args.batch_docs}/request, no periodic refresh)"
            seconds = load(store, total, args.seed, args.writers)
            if args.bulk_load:
                started = time.perf_counter()
                store.client.indices.put_settings(
                    index=store.alias, body={"index": {"refresh_interval": None}}
                )
                store.client.indices.refresh(index=store.alias)
                seconds += time.perf_counter() - started
        for candidates in args.candidate_list:
            lat = measure(store, args.queries, args.seed, candidates, args.filter_repos)
            result = row(
                "opensearch",
                f"{name}, {candidates} candidates{args.filter_label}",
                total,
                seconds,
                lat,
            )
            result.segments, result.disk_mb, result.rss_mb = opensearch_stats(store)
            results.append(result)
            report(results[-1])
        if args.force_merge:
            started = time.perf_counter()
            store.client.indices.forcemerge(
                index=store.alias, max_num_segments=args.merge_segments, request_timeout=7200
            )
            merged = time.perf_counter() - started
            print(f"  force merge to {args.merge_segments} segment(s): {merged:.0f} s", flush=True)
            for candidates in args.candidate_list:
                lat = measure(store, args.queries, args.seed, candidates, args.filter_repos)
                variant = f"{name}, force-merged ({merged:.0f} s), {candidates} candidates"
                variant += args.filter_label
                result = row("opensearch", variant, total, seconds, lat)
                result.segments, result.disk_mb, result.rss_mb = opensearch_stats(store)
                results.append(result)
                report(results[-1])
        return results
    finally:
        if not args.keep:
            store.drop()
        store.close()


def run_embedded(total: int, args: argparse.Namespace, workdir: Path) -> list[Result]:
    path = workdir / f"bench-{total}.db"
    store = SqliteStore(path)
    try:
        seconds = load(store, total, args.seed, args.writers)
        results = []
        for candidates in args.candidate_list:
            lat = measure(store, args.queries, args.seed, candidates, args.filter_repos)
            result = row(
                "embedded",
                f"{args.corpus} corpus, {candidates} candidates{args.filter_label}",
                total,
                seconds,
                lat,
            )
            result.segments = None
            result.disk_mb = sum(p.stat().st_size for p in workdir.glob(f"bench-{total}.db*")) / 1e6
            result.rss_mb = rss_mb(os.getpid())  # this process: the store's vector matrix
            results.append(result)
            report(results[-1])
        return results
    finally:
        store.close()
        for p in workdir.glob(f"bench-{total}.db*"):
            p.unlink()


HEADER = (
    "| store | variant | chunks | load s | chunks/s | hybrid p50 | hybrid p95 | "
    "BM25 p50 / p95 | k-NN p50 / p95 | segments | disk MB | RSS MB |\n"
    "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
)


def fmt(value: float | None, spec: str = ".0f") -> str:
    return "—" if value is None else format(value, spec)


def markdown(r: Result) -> str:
    return (
        f"| {r.store} | {r.variant} | {r.chunks:,} | {r.index_seconds:,.0f} | "
        f"{r.chunks_per_second:,.0f} | {r.hybrid[0]:.1f} | {r.hybrid[1]:.1f} | "
        f"{r.bm25[0]:.1f} / {r.bm25[1]:.1f} | {r.knn[0]:.1f} / {r.knn[1]:.1f} | "
        f"{fmt(r.segments, 'd')} | {fmt(r.disk_mb, ',.0f')} | {fmt(r.rss_mb, ',.0f')} |"
    )


def report(r: Result) -> None:
    load_avg = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"{markdown(r)}   <- load average {load_avg}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000", help="comma-separated corpus sizes")
    parser.add_argument("--stores", default="embedded,opensearch")
    parser.add_argument("--opensearch-url", default="http://127.0.0.1:9200")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--candidates", default="50", help="comma-separated; 50 is the default")
    parser.add_argument("--filter-repos", type=int, default=FILTER_REPOS, help="of 100")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--shards", type=int, default=1)
    parser.add_argument("--routing", action="store_true", help="CODEASK_OPENSEARCH_ROUTING")
    parser.add_argument(
        "--vector-encoding",
        choices=["float", "sq"],
        default="float",
        help="CODEASK_OPENSEARCH_VECTOR_ENCODING",
    )
    parser.add_argument("--bulk-load", action="store_true")
    parser.add_argument("--batch-docs", type=int, default=2000)
    parser.add_argument("--writers", type=int, default=1, help="repositories written at once")
    parser.add_argument("--force-merge", action="store_true")
    parser.add_argument("--merge-segments", type=int, default=1, help="with --force-merge")
    parser.add_argument(
        "--concurrent-search",
        choices=["all", "auto", "none", "cluster"],
        default="all",
        help="CODEASK_OPENSEARCH_CONCURRENT_SEGMENT_SEARCH",
    )
    parser.add_argument("--corpus", choices=["synthetic", "code"], default="synthetic")
    parser.add_argument(
        "--code-root",
        default=sysconfig.get_paths()["purelib"],
        help="with --corpus code: where the .py files are read (default: site-packages)",
    )
    parser.add_argument("--index", default="", help="OpenSearch alias (default: a fresh one)")
    parser.add_argument("--no-load", action="store_true", help="measure --index as it is")
    parser.add_argument("--keep", action="store_true", help="keep the OpenSearch index")
    args = parser.parse_args()
    args.candidate_list = [int(c) for c in args.candidates.split(",")]
    CORPUS.update(kind=args.corpus, root=args.code_root)
    filtered = args.filter_repos != FILTER_REPOS
    args.filter_label = f", filter {args.filter_repos} repos" if filtered else ""
    if args.no_load and not args.index:
        parser.error("--no-load needs --index")
    results: list[Result] = []
    with tempfile.TemporaryDirectory() as tmp:
        for total in (int(s) for s in args.sizes.split(",")):
            for kind in args.stores.split(","):
                if kind == "opensearch":
                    results += run_opensearch(total, args)
                else:
                    results += run_embedded(total, args, Path(tmp))
    print("\nlatencies in ms\n" + HEADER)
    print("\n".join(markdown(r) for r in results), flush=True)


if __name__ == "__main__":
    main()
