"""Query and batch embedding latency with and without another busy process on the cores.

Run: .venv/bin/python bench/bench_contention.py [--rounds 3] [--burners 1]

Each configuration runs in a fresh interpreter (OpenMP reads its wait policy when it
loads), with the torch float32 embedder (all-MiniLM-L6-v2, all cores):

- ``spin`` (OpenMP's default wait: spin, then sleep): torch is imported before the
  ``indexer`` package, so the package's ``OMP_WAIT_POLICY`` default does not apply;
- ``passive``: the package's default (``OMP_WAIT_POLICY=PASSIVE``).

Each is measured with the machine as it is ("idle") and with ``--burners`` busy-looping
processes ("busy"). Prints the median of 15 one-question embeddings and of 5 batches of
64 chunk-sized texts per round, then the medians over rounds and the ratios.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import json, os, statistics, sys, time
os.environ.setdefault("HF_HUB_OFFLINE", "1")
if sys.argv[1] == "spin":
    os.environ.pop("OMP_WAIT_POLICY", None)
    import torch  # loads OpenMP before the indexer package can set its default
sys.path.insert(0, sys.argv[2])
from indexer.embedding import SentenceTransformerEmbedder
import torch
e = SentenceTransformerEmbedder()
body = "def refill(self, now):\n    self.tokens = min(self.capacity, self.tokens + rate)\n" * 6
e.embed(["warm up"]); e.embed([body] * 8)
def timed(texts, n):
    out = []
    for i in range(n):
        t = time.perf_counter(); e.embed([f"{x} {i}" for x in texts])
        out.append((time.perf_counter() - t) * 1000)
    return statistics.median(out)
q = timed(["how does the pool recycle stale connections?"], 15)
b = timed([body] * 64, 5)
print(json.dumps({"mode": sys.argv[1],
                  "threads": torch.get_num_threads(), "query_ms": q, "batch64_ms": b}))
"""


def _burn(stop: float) -> None:
    x = 0
    while time.time() < stop:
        x += 1


def run_child(mode: str) -> dict[str, float]:
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    out = subprocess.run(
        [sys.executable, "-c", CHILD, mode, str(ROOT)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--burners", type=int, default=1)
    args = parser.parse_args()
    results: dict[tuple[str, str], list[dict[str, float]]] = {}
    for _ in range(args.rounds):
        for load in ("idle", "busy"):
            for mode in ("spin", "passive"):
                burners = []
                if load == "busy":
                    stop = time.time() + 600
                    burners = [
                        multiprocessing.Process(target=_burn, args=(stop,), daemon=True)
                        for _ in range(args.burners)
                    ]
                    for p in burners:
                        p.start()
                try:
                    row = run_child(mode)
                finally:
                    for p in burners:
                        p.terminate()
                        p.join()
                results.setdefault((load, mode), []).append(row)
                print(load, mode, row, flush=True)
    print()
    print("| load | OpenMP wait | threads | question p50 ms | batch of 64 p50 ms |")
    print("| --- | --- | ---: | ---: | ---: |")
    med: dict[tuple[str, str], tuple[float, float]] = {}
    for (load, mode), rows in results.items():
        q = statistics.median(r["query_ms"] for r in rows)
        b = statistics.median(r["batch64_ms"] for r in rows)
        med[(load, mode)] = (q, b)
        print(f"| {load} | {mode} | {int(rows[0]['threads'])} | {q:.1f} | {b:.0f} |")
    for load in ("idle", "busy"):
        sq, sb = med[(load, "spin")]
        pq, pb = med[(load, "passive")]
        print(f"{load}: passive/spin question {pq / sq:.2f}x, batch {pb / sb:.2f}x")


if __name__ == "__main__":
    main()
