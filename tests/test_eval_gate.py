"""CI gate: retrieval on the golden sets must not fall below the committed baseline.

The pinned corpora and this checkout are indexed once per test session into a fresh
data folder (about 4,800 chunks: 6 minutes of embedding on 2 idle cores, unless
CODEASK_EVAL_EMBEDDING_CACHE points at a warm cache), then every golden question is
searched in its own repository with the product's hybrid search.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from eval import baseline as baseline_mod
from eval.goldens import GOLDEN_DIR, load_many, source_roots
from eval.harness import RunResult, evaluate, searcher_ranker
from eval.indexes import index_corpora
from eval.settings import EvalSettings
from indexer.embedding import SqliteEmbeddingCache
from indexer.errors import UpstreamUnavailable
from indexer.search import Searcher
from indexer.stores import SqliteStore


@dataclass
class IndexedCorpora:
    store: SqliteStore
    seconds: float
    chunks: int


@pytest.fixture(scope="session")
def indexed_corpora(tmp_path_factory: pytest.TempPathFactory, embedder) -> IndexedCorpora:  # type: ignore[no-untyped-def]
    """Every golden repository indexed with the product pipeline, once per session."""
    questions = load_many(sorted(GOLDEN_DIR.glob("*.jsonl")))
    try:
        roots = source_roots({q.repo for q in questions})
    except UpstreamUnavailable as exc:  # only a network failure skips
        pytest.skip(f"corpora could not be downloaded (no network?): {exc}")
    data = tmp_path_factory.mktemp("eval-data")
    store = SqliteStore(data / "codeask.db")
    cache = SqliteEmbeddingCache(EvalSettings().eval_embedding_cache or data / "embeddings.db")
    started = time.perf_counter()
    reports = index_corpora(roots, store, embedder, cache)
    seconds = time.perf_counter() - started
    chunks, embedded = sum(r.chunks for r in reports), sum(r.embedded for r in reports)
    print(
        f"\neval gate: indexed {chunks} chunks ({embedded} embedded) in {seconds:.0f} s",
        file=sys.stderr,
    )
    return IndexedCorpora(store, seconds, chunks)


@pytest.fixture(scope="session")
def hybrid_run(indexed_corpora: IndexedCorpora, embedder) -> RunResult:  # type: ignore[no-untyped-def]
    questions = load_many(sorted(GOLDEN_DIR.glob("*.jsonl")))
    searcher = Searcher(indexed_corpora.store, embedder)
    return evaluate(questions, searcher_ranker(searcher), k=10)


@pytest.mark.slow
def test_every_golden_repository_was_indexed(indexed_corpora: IndexedCorpora) -> None:
    indexed = {s.repo for s in indexed_corpora.store.repo_states()}
    asked = {q.repo for q in load_many(sorted(GOLDEN_DIR.glob("*.jsonl")))}
    assert asked <= indexed
    assert all(s.chunk_count > 0 for s in indexed_corpora.store.repo_states())


@pytest.mark.slow
def test_retrieval_does_not_regress_below_the_baseline(
    hybrid_run: RunResult, record_property: pytest.RecordProperty
) -> None:
    baseline = baseline_mod.load_baseline()
    assert baseline.get("note"), "eval/baseline.json must say why it was set"
    base_overall = baseline["overall"]
    assert isinstance(base_overall, dict)
    current = {m: hybrid_run.overall(m) for m in baseline_mod.GATED}
    for metric, value in current.items():
        record_property(metric, round(value, 4))
    print(f"\neval gate: hybrid {current}", file=sys.stderr)
    problems = baseline_mod.regressions(current, base_overall)
    assert not problems, "retrieval regressed: " + "; ".join(problems)


def test_the_gate_flags_a_drop_beyond_the_tolerance_only() -> None:
    base = {"recall@10": 0.90, "mrr@10": 0.70}
    assert baseline_mod.regressions({"recall@10": 0.875, "mrr@10": 0.671}, base) == []
    assert baseline_mod.regressions({"recall@10": 0.99, "mrr@10": 0.99}, base) == []
    dropped = baseline_mod.regressions({"recall@10": 0.86, "mrr@10": 0.70}, base)
    assert len(dropped) == 1 and dropped[0].startswith("recall@10 fell from 0.900 to 0.860")
    assert len(baseline_mod.regressions({"recall@10": 0.0, "mrr@10": 0.0}, base)) == 2


def test_the_committed_baseline_is_a_hybrid_run_at_k_10() -> None:
    baseline = baseline_mod.load_baseline(Path(baseline_mod.BASELINE_PATH))
    assert baseline["config"] == "hybrid" and baseline["k"] == 10
    overall = baseline["overall"]
    assert isinstance(overall, dict)
    assert all(0.0 < float(overall[m]) <= 1.0 for m in baseline_mod.GATED)
