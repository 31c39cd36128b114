"""OpenSearch writes overlapped with embedding vs written after it, same repository.

The ~113k-line repository of ``bench_index_speed.py`` is indexed from scratch into a fresh
OpenSearch index twice per round: once as the indexer does it (each embedded group is
bulk-written on a writer thread while the next group is embedded), once with the store's
streaming methods hidden, so every chunk is written after the last one is embedded.
Each run has its own empty embedding cache, so both embed everything.

Run (with a node up, e.g. ``bash scripts/opensearch.sh start``):
.venv/bin/python bench/bench_write_overlap.py [--backend torch-bf16] [--rounds 1] [--memory]

``--memory`` measures what each mode holds instead of its time: ``tracemalloc`` records
the peak of Python and NumPy allocations during ``index_repository`` (the model's own
buffers are allocated by PyTorch or ONNX Runtime and are not traced).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import tracemalloc
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from bench.bench_index_speed import build_repo  # noqa: E402
from bot.services import Services  # noqa: E402
from indexer.embedding import SqliteEmbeddingCache  # noqa: E402
from indexer.jobs import index_repository  # noqa: E402
from indexer.settings import IndexerSettings  # noqa: E402
from indexer.stores.opensearch import OpenSearchStore  # noqa: E402

STREAMING = ("begin_changes", "write_chunks", "finish_changes")


class AtTheEnd:
    """The store without its streaming methods: the indexer falls back to one write."""

    def __init__(self, store: OpenSearchStore) -> None:
        self._store = store

    def __getattr__(self, name: str) -> Any:
        if name in STREAMING:
            raise AttributeError(name)
        return getattr(self._store, name)


def run(mode: str, repo: Path, work: Path, url: str, backend: str, memory: bool = False) -> float:
    """Seconds of one full index or, with ``memory``, its peak traced MB."""
    settings = IndexerSettings(
        store="opensearch", opensearch_url=url, opensearch_index=f"bench-{uuid.uuid4().hex[:8]}"
    )
    store = OpenSearchStore.from_settings(settings)
    try:
        embedder = Services(indexer=settings.model_copy(update={"embed_backend": backend})).embedder
        cache = SqliteEmbeddingCache(work / f"{mode}-{uuid.uuid4().hex[:6]}.db")
        target: Any = store if mode == "overlapped" else AtTheEnd(store)
        if memory:
            tracemalloc.start()
        report = index_repository(repo, "bench/repo", target, embedder, cache)
        if not memory:
            print(f"  {mode}: {report.seconds:.1f} s, {report.chunks} chunks", flush=True)
            return report.seconds
        peak = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
        print(f"  {mode}: peak {peak:.1f} MB, {report.chunks} chunks", flush=True)
        return peak
    finally:
        store.drop()
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", default="torch-bf16")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--opensearch-url", default="http://127.0.0.1:9200")
    parser.add_argument("--memory", action="store_true", help="peak memory, not time")
    args = parser.parse_args()
    modes = ("overlapped", "at the end")
    seconds: dict[str, list[float]] = {m: [] for m in modes}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        repo, lines = build_repo(work)
        Services(indexer=IndexerSettings(embed_backend=args.backend)).embedder.embed(["warm up"])
        for r in range(args.rounds):  # alternate which goes first
            for mode in modes if r % 2 == 0 else modes[::-1]:
                seconds[mode].append(
                    run(mode, repo, work, args.opensearch_url, args.backend, args.memory)
                )
    base = statistics.median(seconds["at the end"])
    unit = "peak traced (MB" if args.memory else "full index (s"
    print(f"\n{lines} lines, {args.backend} embedder, {args.rounds} round(s)\n")
    print(f"| writes | {unit}, median) | vs at the end |\n| --- | --- | --- |")
    for mode in modes:
        value = statistics.median(seconds[mode])
        # time: how much faster than at the end; memory: what share of it is held
        ratio = value / base if args.memory else base / value
        print(f"| {mode} | {value:.1f} | {ratio:.2f}x |")


if __name__ == "__main__":
    main()
