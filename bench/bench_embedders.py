"""Torch (float32, bf16) vs ONNX Runtime (fp32, int8) embedders on the same chunks.

Run: .venv/bin/python bench/bench_embedders.py [--chunks 512] [--rounds 3]
Prints chunks/s medians, the speed-up against torch measured in the same process, and the
cosine agreement of each fast path with torch.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from indexer.embedding import (  # noqa: E402
    OnnxEmbedder,
    SentenceTransformerEmbedder,
    cpu_has_bf16,
    embedding_text,
)
from indexer.source import (  # noqa: E402
    SourceFile,
    chunk_file,
    walk_repository,
)

SOURCE = Path(np.__file__).resolve().parent.parent / "rich"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--chunks", type=int, default=512)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    texts: list[str] = []
    for f in walk_repository(SOURCE):
        if isinstance(f, SourceFile):
            texts += [embedding_text(c) for c in chunk_file(f.path, f.language, f.data)]
    texts = texts[: args.chunks]
    with tempfile.TemporaryDirectory() as tmp:
        embedders: dict[str, SentenceTransformerEmbedder | OnnxEmbedder] = {
            "torch": SentenceTransformerEmbedder(),
        }
        if cpu_has_bf16():  # refused on CPUs that would emulate it
            embedders["torch bf16"] = SentenceTransformerEmbedder(bfloat16=True)
        embedders |= {
            "onnx fp32": OnnxEmbedder("all-MiniLM-L6-v2", Path(tmp), quantized=False),
            "onnx int8": OnnxEmbedder("all-MiniLM-L6-v2", Path(tmp), quantized=True),
        }
        rates: dict[str, list[float]] = {name: [] for name in embedders}
        vectors: dict[str, np.ndarray] = {}
        for embedder in embedders.values():
            embedder.embed(texts[:16])  # warm up
        for _ in range(args.rounds):  # interleaved so load changes hit every embedder alike
            for name, embedder in embedders.items():
                started = time.perf_counter()
                vectors[name] = embedder.embed(texts)
                rates[name].append(len(texts) / (time.perf_counter() - started))
    base = statistics.median(rates["torch"])
    print(f"{len(texts)} chunks of site-packages/rich, {args.rounds} interleaved rounds\n")
    print("| embedder | chunks/s (median) | vs torch | cosine to torch (min / mean) |")
    print("| --- | --- | --- | --- |")
    for name in embedders:
        rate = statistics.median(rates[name])
        cos = (vectors[name] * vectors["torch"]).sum(axis=1)
        print(f"| {name} | {rate:.1f} | {rate / base:.2f}x | {cos.min():.4f} / {cos.mean():.4f} |")


if __name__ == "__main__":
    main()
