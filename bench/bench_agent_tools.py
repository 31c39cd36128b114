"""codeask's own time per agent tool round, without the model's: embedded store and OpenSearch.

    .venv/bin/python bench/bench_agent_tools.py [--chunks 100000] [--rounds 60] [--work DIR]
        [--opensearch-url http://127.0.0.1:9200] [--skip-opensearch] [--quick]

The corpus is the synthetic store of ``bench_rerank.py`` (``bench_index.synthetic_store``:
real sqlalchemy chunk texts cycled over 10 repositories, random unit vectors), built once
into ``--work`` and reused. The same builder writes the same chunks and vectors into an
OpenSearch index under a bench-only alias, dropped at the end (``--keep`` keeps it, and a
kept index of the right size is reused). Both stores fill their names index from the chunk
texts as they write, so find_definitions / find_references find real sqlalchemy names.

A tool round is one batch of calls as a model makes them, run as ``agent.py`` runs them:
parse the JSON arguments, ``CodeTools.run``, ``render_places`` into the question's
``SourceBook`` within the round's share of the output budget. The rounds cycle through
four kinds (search + definitions, read, grep, references + list). Each round gets a fresh
``Searcher`` (empty query-embedding cache), so search_code embeds its query with the
configured embedder (torch all-MiniLM-L6-v2 by default) as a new question would.

The baseline, one per round and interleaved with them, is the single search a single-shot
answer makes: ``Searcher.search(question, repos, k=50, candidates=50)``, also with a fresh
query embedding. Ratios are this process's round time over the baseline's.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from bench import bench_index  # noqa: E402
from bench.bench_rerank import (  # noqa: E402
    DIM,
    QUESTIONS,
    REPOS,
    TimedEmbedder,
    open_store,
    percentile,
    sample_chunks,
)
from bot.answer.agent import CHARS_PER_TOKEN, MAX_CALLS_PER_ROUND  # noqa: E402
from bot.answer.llm import ToolCall, parse_arguments  # noqa: E402
from bot.answer.sourcebook import SourceBook, render_places  # noqa: E402
from bot.answer.tools import CodeTools  # noqa: E402
from bot.settings import BotSettings  # noqa: E402
from indexer.embedding import Embedder, open_embedder  # noqa: E402
from indexer.models import Chunk, FileRequest  # noqa: E402
from indexer.search import Searcher  # noqa: E402
from indexer.settings import IndexerSettings  # noqa: E402
from indexer.stores import SearchBackend  # noqa: E402
from indexer.stores.opensearch import OpenSearchStore  # noqa: E402

TARGET_MS = 50.0
SETTINGS = BotSettings()  # read once, as the bot holds its settings
ROUND_CHARS = SETTINGS.agent_round_tokens * CHARS_PER_TOKEN
ALIAS = "codeask-bench-agent-tools"
# Names sqlalchemy defines and uses (each defined in several sample chunks).
DEFINED = [
    "create_engine",
    "relationship",
    "bindparam",
    "begin_nested",
    "QueuePool",
    "_do_get",
    "registry",
    "Connection.execute",
]
USED = ["create_engine", "bindparam", "select", "relationship", "_execute_context", "column"]
GREPS: list[dict[str, Any]] = [
    {"pattern": "def __init__(self, bind"},
    {"pattern": "session.flush()"},
    {"pattern": r"def (get|set)_\w+\(self", "regex": True},
    {"pattern": "NotImplementedError", "path_glob": "*.py*"},
    {"pattern": "_execute_context"},
    {"pattern": r"raise exc\.\w+Error", "regex": True, "ignore_case": True},
]
PREFIXES = ["orm/", "engine/", "dialects/postgresql/", "sql/", "pool/", "ext/asyncio/"]

Call = tuple[str, dict[str, Any]]


@dataclass(frozen=True)
class Target:
    """A file the model would read after finding it: its repository, path and lines."""

    repo: str
    path: str
    start: int
    end: int


def round_calls(i: int, repos: list[str], targets: list[Target]) -> tuple[str, list[Call]]:
    """The ``i``-th round: its kind and the tool calls a model would make in it."""
    kind = i % 4
    n = i // 4
    repo = repos[n % len(repos)]
    if kind == 0:
        query = QUESTIONS[n % len(QUESTIONS)]
        calls = [("search_code", {"query": query}), ("find_definitions", {"name": DEFINED[n % 8]})]
        return "search_code + find_definitions", calls
    if kind == 1:
        t = targets[n % len(targets)]
        args = {"repo": t.repo, "path": t.path, "start_line": t.start, "end_line": t.end}
        return "read_code", [("read_code", args)]
    if kind == 2:
        return "grep", [("grep", GREPS[n % len(GREPS)])]
    name = USED[n % len(USED)]
    listing = {"repo": repo, "path_prefix": PREFIXES[n % len(PREFIXES)]}
    return "find_references + list_files", [
        ("find_references", {"name": name}),
        ("list_files", listing),
    ]


def read_targets(store: SearchBackend, repos: list[str], allowed: frozenset[str]) -> list[Target]:
    """Files spread over the allowed repositories, read from their first indexed line."""
    targets = []
    for r, repo in enumerate(repos):
        paths = sorted(store.file_blobs(repo))
        for path in paths[r * 97 % len(paths) :: max(len(paths) // 3, 1)][:3]:
            chunks = store.file_chunks(FileRequest(repo, path, allowed))
            first = min(c.start_line for c in chunks)
            targets.append(Target(repo, path, first, first + 79))
    return targets


@dataclass
class Samples:
    tools: dict[str, list[float]] = field(default_factory=dict)
    places: dict[str, list[int]] = field(default_factory=dict)
    rounds: dict[str, list[float]] = field(default_factory=dict)
    search: list[float] = field(default_factory=list)
    embed: list[float] = field(default_factory=list)


def run_round(
    store: SearchBackend,
    embedder: Embedder,
    allowed: frozenset[str],
    calls: list[Call],
    samples: Samples | None,
) -> float:
    """One round as the agent loop runs it; its wall time in ms (per tool into ``samples``)."""
    started = time.perf_counter()
    tools = CodeTools(Searcher(store, embedder), allowed)
    book = SourceBook(allowed)
    share = max(ROUND_CHARS // min(len(calls), MAX_CALLS_PER_ROUND), 400)
    for n, (name, args) in enumerate(calls):
        call_started = time.perf_counter()
        call = ToolCall(f"call_{n}", name, json.dumps(args))
        found = tools.run(call.name, parse_arguments(call))
        _, shown = render_places(book, found.header, found.places, share)
        if samples is not None:
            samples.tools.setdefault(name, []).append((time.perf_counter() - call_started) * 1000)
            samples.places.setdefault(name, []).append(shown)
    return (time.perf_counter() - started) * 1000


def one_search(store: SearchBackend, embedder: Embedder, allowed: frozenset[str], i: int) -> float:
    """The single-shot answer's one hybrid search, query embedding included, in ms."""
    n = SETTINGS.rerank_candidates
    started = time.perf_counter()
    Searcher(store, embedder).search(QUESTIONS[i % len(QUESTIONS)], allowed, k=n, candidates=n)
    return (time.perf_counter() - started) * 1000


def measure(
    store: SearchBackend, embedder: Embedder, repos: list[str], targets: list[Target], rounds: int
) -> Samples:
    allowed = frozenset(repos)
    timed = TimedEmbedder(embedder)  # the query embedding inside search_code
    for i in range(8):  # warm up: the vector matrix, SQLite pages, OpenSearch caches
        run_round(store, embedder, allowed, round_calls(i + 1000, repos, targets)[1], None)
        one_search(store, embedder, allowed, i + 1000)
    samples = Samples()
    everything: list[float] = []
    for i in range(rounds):
        kind, calls = round_calls(i, repos, targets)
        timed.seconds.clear()
        wall = run_round(store, timed, allowed, calls, samples)
        samples.embed += [s * 1000 for s in timed.seconds]
        samples.rounds.setdefault(kind, []).append(wall)
        everything.append(wall)
        samples.search.append(one_search(store, embedder, allowed, i))
    samples.rounds["any round"] = everything
    return samples


def opensearch_store(url: str, n: int, sample: list[Chunk]) -> OpenSearchStore | None:
    """The bench alias filled with the embedded store's corpus; None if no node answers."""
    settings = IndexerSettings(
        store="opensearch", opensearch_url=url, opensearch_index=ALIAS, opensearch_timeout=600
    )
    store = OpenSearchStore.from_settings(settings)
    try:
        reachable = bool(store.client.ping())
    except Exception:  # any failure to connect means: skip this store
        reachable = False
    if not reachable:
        print(f"OpenSearch: skipped, no node answers at {url}", file=sys.stderr)
        store.close()
        return None
    if store.chunk_count() == n // REPOS * REPOS:
        return store  # kept by an earlier --keep run
    store.drop()
    started = time.perf_counter()
    # The embedded store's builder, writing into OpenSearch: the same chunks and vectors.
    create: Callable[[Path], OpenSearchStore] = lambda _path: store  # noqa: E731
    with mock.patch.object(bench_index, "SqliteStore", create):
        bench_index.synthetic_store(Path("unused"), sample, n, repos=REPOS, dim=DIM)
    print(f"OpenSearch: built {n} chunks in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    return store


def table_row(store: str, label: str, values: list[float], base: list[float], places: str) -> str:
    p50, p95 = statistics.median(values), percentile(values, 0.95)
    ratio50, ratio95 = p50 / statistics.median(base), p95 / percentile(base, 0.95)
    return (
        f"| {store} | {label} | {len(values)} | {places} | {p50:.1f} | {p95:.1f} | "
        f"{ratio50:.2f}× | {ratio95:.2f}× |"
    )


def report(results: dict[str, Samples], chunks: int, rounds: int, embedder: str) -> None:
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print(
        f"\n{rounds} rounds per store over {chunks:,} chunks ({REPOS} repositories, all "
        f"allowed), query embedder {embedder}; load average {load} on {os.cpu_count()} cores\n"
    )
    print(
        "| store | measure | n | places shown (mean) | p50 ms | p95 ms | p50 × search "
        "| p95 × search |"
    )
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for store, s in results.items():
        print(table_row(store, "one hybrid search, k=50 (single-shot)", s.search, s.search, ""))
        for name, values in s.tools.items():
            shown = f"{statistics.mean(s.places[name]):.1f}"
            print(table_row(store, f"`{name}`", values, s.search, shown))
            if name == "search_code" and s.embed:
                print(table_row(store, "… of it: query embedding", s.embed, s.search, ""))
        for kind, values in s.rounds.items():
            print(table_row(store, f"round: {kind}", values, s.search, ""))
    for store, s in results.items():
        p95 = percentile(s.rounds["any round"], 0.95)
        verdict = "met" if p95 <= TARGET_MS else "not met"
        print(f"\n{store}: tool round p95 {p95:.1f} ms, target ≤ {TARGET_MS:.0f} ms: {verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=60)
    parser.add_argument("--work", type=Path, default=Path("/tmp/codeask-bench-agent-tools"))
    parser.add_argument("--opensearch-url", default="http://127.0.0.1:9200")
    parser.add_argument("--skip-opensearch", action="store_true")
    parser.add_argument("--keep", action="store_true", help="keep the OpenSearch index")
    parser.add_argument(
        "--embed-backend",
        choices=["torch", "torch-bf16", "onnx", "onnx-int8"],
        default="torch",
        help="CODEASK_EMBED_BACKEND",
    )
    parser.add_argument("--quick", action="store_true", help="10k chunks, 12 rounds")
    args = parser.parse_args()
    if args.quick:
        args.chunks, args.rounds = 10_000, 12
    args.work.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("CODEASK_DATA_DIR", str(args.work / "data"))

    sample = sample_chunks()
    stores: dict[str, SearchBackend] = {
        "embedded (SQLite)": open_store(args.work, args.chunks, sample)
    }
    opensearch = None
    if not args.skip_opensearch:
        opensearch = opensearch_store(args.opensearch_url, args.chunks, sample)
        if opensearch is not None:
            stores["OpenSearch"] = opensearch
    embedder = open_embedder(IndexerSettings(embed_backend=args.embed_backend))
    repos = [f"org/repo{r}" for r in range(REPOS)]
    targets = read_targets(stores["embedded (SQLite)"], repos, frozenset(repos))
    results: dict[str, Samples] = {}
    try:
        for label, store in stores.items():
            results[label] = measure(store, embedder, repos, targets, args.rounds)
            print(f"{label}: measured", file=sys.stderr, flush=True)
    finally:
        if opensearch is not None:
            if not args.keep:
                opensearch.drop()
            opensearch.close()
    report(results, args.chunks // REPOS * REPOS, args.rounds, embedder.name)


if __name__ == "__main__":
    main()
