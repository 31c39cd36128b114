"""The learned reranker on the golden sets: with and without it, and the on-by-default gate.

The trained model is loaded from ``<data dir>/models/reranker`` explicitly, whatever its
card says, so it is measured even while it is off. The gate enables it only when it
raises MRR@k over all golden questions by at least ``GATE_MRR_GAIN``; the figures per set
are written into the model card either way.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from eval.goldens import load_questions
from eval.harness import Rerank, RunResult, evaluate, golden_paths, require_indexed, searcher_ranker
from eval.metrics import Question
from indexer.embedding import open_embedder
from indexer.errors import InvalidInput
from indexer.models import Hit
from indexer.search import Searcher
from indexer.settings import IndexerSettings
from indexer.stores import open_store

Say = Callable[[str], None]


def learned_rerank(data_dir: Path) -> tuple[Rerank | None, str]:
    """A rerank function over the trained model under ``data_dir``, else a note why not."""
    from bot.answer import CrossEncoderReranker, trained_reranker_path

    path = trained_reranker_path(data_dir)
    if path is None:
        return None, "learned rerank skipped: no reranker trained under the data dir"
    reranker = CrossEncoderReranker(str(path))

    def rerank(question: str, hits: list[Hit]) -> list[Hit]:
        scores = reranker.score(question, hits)
        order = sorted(range(len(hits)), key=lambda i: (-scores[i], i))  # ties: fused order
        return [hits[i] for i in order]

    return rerank, ""


def _figures(result: RunResult, k: int) -> tuple[float, float]:
    return result.overall(f"mrr@{k}"), result.overall("recall@5")


def compare(
    sets: dict[str, list[Question]], searcher: Searcher, rerank: Rerank, k: int, say: Say | None
) -> dict[str, dict[str, float]]:
    """MRR@k and recall@5 per golden set and pooled, hybrid alone and hybrid + learned rerank."""
    rows: dict[str, dict[str, float]] = {}
    for name, questions in sets.items():
        if say:
            say(f"scoring {name} ({len(questions)} questions)")
        without = evaluate(questions, searcher_ranker(searcher), k, config="hybrid")
        with_run = evaluate(
            questions, searcher_ranker(searcher, rerank=rerank), k, config="hybrid+learned rerank"
        )
        m0, r0 = _figures(without, k)
        m1, r1 = _figures(with_run, k)
        rows[name] = {
            "questions": float(len(questions)),
            "mrr_without": m0,
            "recall5_without": r0,
            "mrr_with": m1,
            "recall5_with": r1,
        }
    # Metrics are plain means over questions, so the pooled figure is the weighted mean.
    total = sum(r["questions"] for r in rows.values())
    rows["overall"] = {
        key: sum(r[key] * r["questions"] for r in rows.values()) / total
        for key in ("mrr_without", "recall5_without", "mrr_with", "recall5_with")
    }
    rows["overall"]["questions"] = total
    return rows


def gate_trained_reranker(
    paths: Sequence[Path], settings: IndexerSettings, k: int = 10, say: Say | None = None
) -> dict[str, Any]:
    """Measure the trained reranker on the golden sets and record the verdict in its card."""
    from bot.answer import GATE_MRR_GAIN, read_card, trained_reranker_path, write_card

    model_dir = trained_reranker_path(settings.data_path)
    if model_dir is None:
        raise InvalidInput("No trained reranker under the data dir; run `codeask train reranker`")
    sets = {p.stem: load_questions(p) for p in golden_paths(list(paths))}
    store = open_store(settings)
    require_indexed(store, sorted({q.repo for qs in sets.values() for q in qs}))
    embedder = open_embedder(settings)
    rerank, note = learned_rerank(settings.data_path)
    assert rerank is not None, note  # the model folder was found just above
    rows = compare(sets, Searcher(store, embedder), rerank, k, say)
    gain = rows["overall"]["mrr_with"] - rows["overall"]["mrr_without"]
    enabled = gain >= GATE_MRR_GAIN
    decision = (
        f"MRR@{k} over all golden questions {rows['overall']['mrr_without']:.4f} -> "
        f"{rows['overall']['mrr_with']:.4f} ({gain:+.4f}); "
        + (
            "enabled by default"
            if enabled
            else f"below the +{GATE_MRR_GAIN} bar, so it stays off by default "
            "(set CODEASK_RERANK_MODEL to its folder to use it anyway)"
        )
    )
    card = read_card(model_dir) or {}
    card["golden"] = {
        "k": k,
        "sets": rows,
        "gain": gain,
        "decision": decision,
        "measured_at": time.time(),
    }
    card["enabled_by_default"] = enabled
    write_card(model_dir, card)
    return card


def learned_rerank_variant(data_dir: Path, configured: str) -> tuple[Rerank | None, str]:
    """The trained reranker for an ablation row of its own, unless ``hybrid+rerank`` is it.

    ``hybrid+rerank`` runs whatever the answer pipeline would use; a trained model that
    is off by default is not that, so it gets its own row and is measured anyway.
    ``configured`` is the ``rerank_model`` setting.
    """
    from bot.answer import enabled_by_default, trained_reranker_path

    path = trained_reranker_path(data_dir)
    if path is None:
        return None, ""
    configured = configured.strip()
    if configured == str(path) or (not configured and enabled_by_default(path)):
        return None, ""
    return learned_rerank(data_dir)
