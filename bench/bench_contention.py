"""Query and batch embedding latency, alone and next to an indexer, per OpenMP wait policy.

Run: .venv/bin/python bench/bench_contention.py [--rounds 3] [--modes spin,passive]

Each configuration runs in fresh interpreters (OpenMP reads its wait policy when it
loads), with the torch float32 embedder (all-MiniLM-L6-v2, all cores):

- ``spin``: OpenMP's default wait (spin about 300,000 times, then sleep): torch is
  imported before the ``indexer`` package, so the package's default does not apply;
- ``passive``: ``OMP_WAIT_POLICY=PASSIVE`` (sleep at once), the package's default;
- ``spincount=N``: ``GOMP_SPINCOUNT=N``, a shorter spin.

"alone": the machine as it is. "next to an indexer": a second process with the same
policy embeds batches of 32 chunks without pause, as ``codeask worker`` does while the
server answers questions on the same cores. Prints the median of 15 one-question
embeddings and of 5 batches of 64 chunk-sized texts per round, then medians over rounds.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SETUP = r"""
import json, os, statistics, sys, time
os.environ.setdefault("HF_HUB_OFFLINE", "1")
mode = sys.argv[1]
if mode != "passive":
    os.environ.pop("OMP_WAIT_POLICY", None)
    if mode.startswith("spincount="):
        os.environ["GOMP_SPINCOUNT"] = mode.split("=", 1)[1]
    import torch  # loads OpenMP before the indexer package can set its default
sys.path.insert(0, sys.argv[2])
from indexer.embedding import SentenceTransformerEmbedder
import torch
e = SentenceTransformerEmbedder()
body = "def refill(self, now):\n    self.tokens = min(self.capacity, self.tokens + rate)\n" * 6
"""

INDEXER = (
    SETUP
    + r"""
while True:
    e.embed([f"{body} {time.time()}"] * 32)
"""
)

CHILD = (
    SETUP
    + r"""
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
)


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}


def run_child(mode: str) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, mode, str(ROOT)],
        env=_env(),
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--modes", default="spin,passive")
    args = parser.parse_args()
    modes = args.modes.split(",")
    loads = ("alone", "next to an indexer")
    results: dict[tuple[str, str], list[dict[str, float]]] = {}
    for _ in range(args.rounds):
        for load in loads:
            for mode in modes:
                indexer = None
                if load != "alone":
                    indexer = subprocess.Popen(
                        [sys.executable, "-c", INDEXER, mode, str(ROOT)],
                        env=_env(),
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL,
                    )
                    time.sleep(20)  # loaded and embedding
                try:
                    row = run_child(mode)
                finally:
                    if indexer is not None:
                        indexer.kill()
                        indexer.wait()
                results.setdefault((load, mode), []).append(row)
                print(load, mode, row, flush=True)
    print()
    print("| load | OpenMP wait | question p50 ms | batch of 64 p50 ms |")
    print("| --- | --- | ---: | ---: |")
    med: dict[tuple[str, str], tuple[float, float]] = {}
    for (load, mode), rows in results.items():
        q = statistics.median(r["query_ms"] for r in rows)
        b = statistics.median(r["batch64_ms"] for r in rows)
        med[(load, mode)] = (q, b)
        print(f"| {load} | {mode} | {q:.1f} | {b:.0f} |")
    for load in loads:
        sq, sb = med[(load, modes[0])]
        for mode in modes[1:]:
            q, b = med[(load, mode)]
            print(f"{load}: {mode}/{modes[0]} question {q / sq:.2f}x, batch {b / sb:.2f}x")


if __name__ == "__main__":
    main()
