"""Question-to-answer latency without the LLM: embed, search, rerank (if configured), evidence.

Run against an index that holds the golden-set repositories, e.g. after
`codeask eval eval/golden/*.jsonl --index`:

    CODEASK_DATA_DIR=... .venv/bin/python bench/bench_answer.py [--rounds 2]

Every question is asked once cold (query embedding and retrieval computed) and then again
warm (the per-process caches answer); p50/p95 are reported for both.
"""

from __future__ import annotations

import argparse
import glob
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from bot.services import Services  # noqa: E402
from bot.settings import BotSettings  # noqa: E402
from eval.goldens import load_many  # noqa: E402


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, int(len(ordered) * share) - 1)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--golden", default=str(ROOT / "eval" / "golden" / "*.jsonl"))
    args = parser.parse_args()
    services = Services(bot=BotSettings(llm_model=""))
    searcher = services.searcher
    pipeline = services.pipeline()
    questions = load_many([Path(p) for p in sorted(glob.glob(args.golden))])
    indexed = {s.repo for s in searcher.backend.repo_states()}
    questions = [q for q in questions if q.repo in indexed]
    pipeline.answer("warm up the model", frozenset({questions[0].repo}))
    runs: dict[str, list[float]] = {"cold": [], "warm": []}
    stages: dict[str, list[float]] = {}
    for label in ("cold", "warm"):
        for q in questions:
            started = time.perf_counter()
            answer = pipeline.answer(q.question, frozenset({q.repo}))
            runs[label].append((time.perf_counter() - started) * 1000)
            if label == "cold":
                for stage, seconds in answer.timings.items():
                    stages.setdefault(stage, []).append(seconds * 1000)
    total = sum(s.chunk_count for s in searcher.backend.repo_states())
    print(
        f"{len(questions)} questions over {total} indexed chunks; reranker: "
        f"{pipeline.reranker.name if pipeline.reranker else 'none'}; no LLM\n"
    )
    print("| run | p50 ms | p95 ms |\n| --- | --- | --- |")
    for label, values in runs.items():
        print(f"| {label} | {statistics.median(values):.1f} | {percentile(values, 0.95):.1f} |")
    print("\n| stage (cold) | p50 ms | p95 ms |\n| --- | --- | --- |")
    for stage, values in stages.items():
        print(f"| {stage} | {statistics.median(values):.1f} | {percentile(values, 0.95):.1f} |")


if __name__ == "__main__":
    main()
