"""Ablations: what each retrieval stage contributes, measured on the golden sets.

Every configuration answers the same questions with the same embedding model. The
product index (structural chunks with headers, in the configured store) serves
hybrid / BM25-only / dense-only and rerank; the naive-window and header-less variants
are built into their own SQLite files under ``<data dir>/eval/``. A stage that is not
available here (no reranker, no OpenSearch) is skipped with a note, never faked.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bot.services import Services
from eval.goldens import source_roots
from eval.harness import Rerank, RunResult, evaluate, require_indexed, searcher_ranker
from eval.indexes import CHUNKERS, index_corpora, index_variant
from eval.learned_rerank import learned_rerank_variant
from eval.metrics import Question
from eval.settings import EvalSettings
from indexer.embedding import Embedder, SqliteEmbeddingCache, WrappedEmbedder
from indexer.errors import CodeaskError
from indexer.models import SEARCH_LISTS, Hit
from indexer.search import Searcher
from indexer.settings import IndexerSettings
from indexer.stores import SearchBackend, SqliteStore

HYBRID = SEARCH_LISTS
BM25 = ("bm25",)
DENSE = ("knn",)
Say = Callable[[str], None]


@dataclass(frozen=True)
class Variant:
    name: str
    index: str  # "product" | a key of CHUNKERS | "opensearch"
    lists: tuple[str, ...] = HYBRID
    rerank: bool = False
    question_weights: bool = True


VARIANTS: tuple[Variant, ...] = (
    Variant("hybrid", "product"),
    Variant("bm25", "product", BM25),
    Variant("dense", "product", DENSE),
    Variant("hybrid, no symbol list", "product", ("bm25", "knn")),
    Variant("hybrid, tests/docs/examples not down-weighted", "product", question_weights=False),
    Variant("hybrid+rerank", "product", rerank=True),
    Variant("naive hybrid", "naive"),
    Variant("naive bm25", "naive", BM25),
    Variant("naive dense", "naive", DENSE),
    Variant("hybrid, no header", "no-header"),
    Variant("hybrid, every import in the header", "all-imports"),
    Variant("hybrid (opensearch)", "opensearch"),
)


class SharedQueryVectors(WrappedEmbedder):
    """An ``Embedder`` that computes each question's vector once for every configuration.

    Only the first configuration that embeds a question pays (and reports) the embed
    latency; the others reuse the vector, as they would share one query in production.
    """

    def __init__(self, inner: Embedder) -> None:
        super().__init__(inner)
        self._memo: dict[str, np.ndarray] = {}

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self._memo]
        if missing:
            self._memo.update(zip(missing, self._inner.embed(missing), strict=True))
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.stack([self._memo[t] for t in texts])


def load_reranker(services: Services) -> tuple[Rerank | None, str]:
    """The answer pipeline's cross-encoder if one is configured or trained, else a note."""
    try:
        reranker = services.reranker
    except CodeaskError as exc:
        return None, f"rerank skipped: {exc}"
    if reranker is None:
        return None, (
            "rerank skipped: no cross-encoder configured (CODEASK_RERANK_MODEL) and none "
            "trained under the data dir"
        )

    def rerank(question: str, hits: list[Hit]) -> list[Hit]:
        scores = reranker.score(question, hits)
        order = sorted(range(len(hits)), key=lambda i: (-scores[i], i))  # ties: fused order
        return [hits[i] for i in order]

    return rerank, ""


def _opensearch_store(eval_settings: EvalSettings) -> tuple[SearchBackend | None, str]:
    url = eval_settings.test_opensearch_url
    if not url:
        return None, "opensearch skipped: CODEASK_TEST_OPENSEARCH_URL is not set"
    from indexer.stores.opensearch import OpenSearchStore

    settings = IndexerSettings(
        store="opensearch",
        opensearch_url=url,
        opensearch_index=eval_settings.eval_opensearch_index,
    )
    try:
        return OpenSearchStore.from_settings(settings), ""
    except CodeaskError as exc:
        return None, f"opensearch skipped: {exc}"


def run_ablations(
    questions: Sequence[Question],
    services: Services,
    k: int = 10,
    say: Say | None = None,
    roots: Mapping[str, Path] | None = None,
    variants: Sequence[Variant] = VARIANTS,
) -> tuple[list[RunResult], list[str]]:
    """Every configuration of ``VARIANTS`` that can run here, and notes on the skipped ones.

    ``roots`` (repo -> source folder) feeds the variant indexes; by default the pinned
    corpora and this checkout. The product index, model and reranker come from ``services``.
    """
    settings = services.indexer
    product_store = services.store
    embedder = services.embedder
    eval_settings = EvalSettings()
    repos = sorted({q.repo for q in questions})
    require_indexed(product_store, repos)
    sources = dict(roots) if roots is not None else None
    cache = services.embedding_cache
    built: dict[str, SearchBackend | None] = {"product": product_store}
    notes: list[str] = []
    reranker, note = load_reranker(services)
    if note:
        notes.append(note)
    results: list[RunResult] = []
    queries = SharedQueryVectors(embedder)
    for variant in variants:
        if variant.rerank and reranker is None:
            continue
        if variant.index not in built:
            if sources is None:
                sources = source_roots(repos)
            built[variant.index], note = _build_variant(
                variant.index, sources, settings, eval_settings, embedder, cache, say
            )
            if note:
                notes.append(note)
        store = built[variant.index]
        if store is None:
            continue
        if say:
            say(f"evaluating {variant.name}")
        ranker = searcher_ranker(
            Searcher(store, queries),
            variant.lists,
            reranker if variant.rerank else None,
            question_weights=variant.question_weights,
        )
        results.append(evaluate(questions, ranker, k, config=variant.name))
    learned, note = learned_rerank_variant(settings.data_path, services.bot.rerank_model)
    if learned is not None:  # a trained reranker that is off by default: measured anyway
        if say:
            say("evaluating hybrid+learned rerank")
        ranker = searcher_ranker(Searcher(product_store, queries), HYBRID, learned)
        results.append(evaluate(questions, ranker, k, config="hybrid+learned rerank"))
    return results, notes


def _build_variant(
    index: str,
    roots: Mapping[str, Path],
    settings: IndexerSettings,
    eval_settings: EvalSettings,
    embedder: Embedder,
    cache: SqliteEmbeddingCache,
    say: Say | None,
) -> tuple[SearchBackend | None, str]:
    if index == "opensearch":
        store, note = _opensearch_store(eval_settings)
        if store is None:
            return None, note
        if say:
            say("indexing the corpora into OpenSearch")
        try:
            index_corpora(roots, store, embedder, cache)
        except CodeaskError as exc:
            return None, f"opensearch skipped: {exc}"
        return store, ""
    if say:
        say(f"building the {index!r} index variant")
    variant_store = SqliteStore(settings.data_path / "eval" / f"{index}.db")
    index_variant(roots, variant_store, embedder, cache, CHUNKERS[index], settings.max_file_bytes)
    return variant_store, ""
