"""Foundation benchmarks: chunking speed, embedding speed, index size, re-index, query latency.

Run: .venv/bin/python bench/bench_index.py [--quick]
Prints a Markdown report (medians; this machine is shared and noisy).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from indexer.embedding import (  # noqa: E402
    Embedder,
    SqliteEmbeddingCache,
    embedding_text,
    load_embedder,
)
from indexer.jobs import index_repository  # noqa: E402
from indexer.models import Chunk, RepoState, SearchRequest  # noqa: E402
from indexer.source import (  # noqa: E402
    SourceFile,
    chunk_file,
    walk_repository,
)
from indexer.stores import SqliteStore  # noqa: E402

SITE = Path(np.__file__).resolve().parent.parent


def site_package(name: str) -> Path:
    return SITE / name


def git(repo: Path, *args: str) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "b",
        "GIT_AUTHOR_EMAIL": "b@x",
        "GIT_COMMITTER_NAME": "b",
        "GIT_COMMITTER_EMAIL": "b@x",
    }
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, env=env)


def bench_chunking(source: Path, rounds: int) -> tuple[int, float, int]:
    files = [f for f in walk_repository(source) if isinstance(f, SourceFile)]
    rates = []
    chunks = 0
    for _ in range(rounds):
        started = time.perf_counter()
        chunks = sum(len(chunk_file(f.path, f.language, f.data)) for f in files)
        rates.append(len(files) / (time.perf_counter() - started))
    return len(files), statistics.median(rates), chunks


def bench_embedding(source: Path, n: int, rounds: int) -> float:
    return embedding_rate(load_embedder("all-MiniLM-L6-v2"), chunk_texts(source, n), rounds)


def chunk_texts(source: Path, n: int) -> list[str]:
    """What the first ``n`` chunks of ``source`` are embedded as."""
    texts: list[str] = []
    for f in walk_repository(source):
        if isinstance(f, SourceFile):
            texts += [embedding_text(c) for c in chunk_file(f.path, f.language, f.data)]
        if len(texts) >= n:
            break
    return texts[:n]


def embedding_rate(embedder: Embedder, texts: list[str], rounds: int) -> float:
    """Median chunks per second over ``rounds`` (after a warm-up call)."""
    embedder.embed(texts[:8])  # warm up
    rates = []
    for _ in range(rounds):
        started = time.perf_counter()
        embedder.embed(texts)
        rates.append(len(texts) / (time.perf_counter() - started))
    return statistics.median(rates)


def bench_reindex(sources: list[Path], work: Path) -> dict[str, float]:
    """Index a copy of ``sources`` as one git repo, then change 3 files and re-index."""
    repo = work / "repo"
    for source in sources:
        shutil.copytree(source, repo / source.name, ignore=shutil.ignore_patterns("__pycache__"))
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    embedder = load_embedder("all-MiniLM-L6-v2")
    store = SqliteStore(work / "index.db")
    cache = SqliteEmbeddingCache(work / "emb.db")
    first = index_repository(repo, "bench/repo", store, embedder, cache)
    py_files = sorted(repo.rglob("*.py"))[:3]
    for i, p in enumerate(py_files):
        p.write_text(p.read_text() + f"\n\ndef bench_added_{i}(value):\n    return value * {i}\n")
    git(repo, "commit", "-qam", "three files")
    started = time.perf_counter()
    second = index_repository(repo, "bench/repo", store, embedder, cache)
    reindex = time.perf_counter() - started
    size = (work / "index.db").stat().st_size + sum(
        p.stat().st_size for p in work.glob("index.db-*") if p.is_file()
    )
    return {
        "files": first.files,
        "chunks": store.chunk_count(),
        "index_seconds": first.seconds,
        "index_mb": size / 1e6,
        "reindex_seconds": reindex,
        "reindex_embedded": second.embedded,
    }


def synthetic_store(path: Path, sample: list[Chunk], n: int, repos: int, dim: int) -> SqliteStore:
    """``n`` chunks with realistic text (cycled from ``sample``) and random unit vectors."""
    store = SqliteStore(path)
    store.ensure_schema(dim)
    rng = np.random.default_rng(7)
    per_repo = n // repos
    for r in range(repos):
        chunks = []
        for i in range(per_repo):
            base = sample[(r * per_repo + i) % len(sample)]
            chunks.append(
                Chunk(
                    repo=f"org/repo{r}",
                    path=f"{base.path}.{i}",
                    start_line=base.start_line,
                    end_line=base.end_line,
                    text=base.text,
                    symbol=base.symbol,
                    language=base.language,
                    kind=base.kind,
                    header=base.header,
                )
            )
        vectors = rng.standard_normal((len(chunks), dim)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        store.apply_changes(
            f"org/repo{r}",
            [],
            chunks,
            vectors,
            RepoState(f"org/repo{r}", "c", "private", 0, time.time()),
        )
    return store


QUERIES = [
    "where is the retry policy configured",
    "parse_headers",
    "how does the connection pool evict idle connections",
    "TokenBucket allow",
    "what happens when the response body is too large",
    "render table column widths",
    "default timeout value",
    "stream chunked transfer encoding",
]


def bench_query(
    source: Path, work: Path, sizes: list[int], rounds: int
) -> list[tuple[int, float, float]]:
    sample = []
    for f in walk_repository(source):
        if isinstance(f, SourceFile):
            sample += chunk_file(f.path, f.language, f.data)
    embedder = load_embedder("all-MiniLM-L6-v2")
    vectors = embedder.embed(QUERIES)
    out = []
    for n in sizes:
        store = synthetic_store(work / f"q{n}.db", sample, n, repos=10, dim=embedder.dimension)
        allowed = frozenset(f"org/repo{r}" for r in range(10))
        store.search(SearchRequest("warm up", allowed, embedding=tuple(vectors[0])))
        times = []
        for _ in range(rounds):
            for q, v in zip(QUERIES, vectors, strict=True):
                started = time.perf_counter()
                store.search(
                    SearchRequest(
                        q, allowed, k=10, candidates=50, embedding=tuple(float(x) for x in v)
                    )
                )
                times.append((time.perf_counter() - started) * 1000)
        times.sort()
        out.append((n, statistics.median(times), times[int(len(times) * 0.95) - 1]))
        store.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="smaller sizes, fewer rounds")
    args = parser.parse_args()
    rounds = 1 if args.quick else 3
    big = site_package("sqlalchemy")
    mid = [site_package(n) for n in ("rich", "pydantic", "aiohttp")]
    print(f"# codeask foundation benchmark ({os.cpu_count()} cores)\n")
    files, rate, chunks = bench_chunking(big, rounds)
    print(
        f"- chunking: {files} files / {chunks} chunks of site-packages/sqlalchemy: **{rate:.0f} files/s** (median of {rounds})"
    )
    emb = bench_embedding(big, 128 if args.quick else 512, rounds)
    print(
        f"- embedding (all-MiniLM-L6-v2, torch, CPU): **{emb:.1f} chunks/s** (median of {rounds})"
    )
    with tempfile.TemporaryDirectory() as tmp:
        r = bench_reindex(mid if not args.quick else mid[:1], Path(tmp))
        print(
            f"- index site-packages rich + pydantic + aiohttp: {r['files']:.0f} files, {r['chunks']:.0f} chunks in "
            f"{r['index_seconds']:.1f} s, store {r['index_mb']:.1f} MB"
        )
        print(
            f"- re-index after a 3-file change: **{r['reindex_seconds']:.2f} s** end to end, "
            f"{r['reindex_embedded']:.0f} chunks embedded"
        )
        sizes = [10_000] if args.quick else [10_000, 100_000]
        print("\n| chunks | hybrid search p50 (ms) | p95 (ms) |\n| --- | --- | --- |")
        for n, p50, p95 in bench_query(big, Path(tmp), sizes, rounds):
            print(f"| {n} | {p50:.1f} | {p95:.1f} |")


if __name__ == "__main__":
    main()
