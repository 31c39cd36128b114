"""Remote embeddings (CODEASK_EMBED_BACKEND=api) vs the local model, on the same chunks.

Run: .venv/bin/python bench/bench_embed_api.py [--chunks 512] [--rounds 3] [--delay 0.05]
The api embedder sends batches through LiteLLM over HTTP to the local OpenAI-compatible
server (``eval.local_embeddings``, in this process) with 1, 4 and 8 requests at once,
first answering at once (the client's own cost), then taking ``--delay`` seconds per
request (a model server's compute or a network's round trip). The local model is the one
the settings configure (CODEASK_EMBED_BACKEND, default torch). Prints chunks/s medians.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from bench.bench_index import chunk_texts, embedding_rate  # noqa: E402
from eval.local_embeddings import MODEL_NAME, running_local_embeddings  # noqa: E402
from indexer.embedding import ApiEmbedder, open_embedder  # noqa: E402
from indexer.settings import IndexerSettings  # noqa: E402

SOURCE = Path(np.__file__).resolve().parent.parent / "rich"
WORKERS = (1, 4, 8)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--chunks", type=int, default=512)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--delay", type=float, default=0.05)
    args = parser.parse_args()
    texts = chunk_texts(SOURCE, args.chunks)
    settings = IndexerSettings()
    local = open_embedder(settings)
    base = embedding_rate(local, texts, args.rounds)
    print(f"{len(texts)} chunks, batches of {args.batch}, {args.rounds} rounds (medians)")
    print(f"local {local.name}: {base:.0f} chunks/s")
    for delay in (0.0, args.delay):
        with running_local_embeddings(delay=delay) as server:
            for workers in WORKERS:
                remote = ApiEmbedder(
                    MODEL_NAME, server.base_url, batch_size=args.batch, concurrency=workers
                )
                got = embedding_rate(remote, texts, args.rounds)
                print(
                    f"api, {delay * 1000:.0f} ms per request, {workers} workers: "
                    f"{got:.0f} chunks/s ({got / base:.2f}x local)"
                )


if __name__ == "__main__":
    main()
