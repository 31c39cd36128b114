"""Run golden questions against a search store and score them (the ``codeask eval`` core).

Each question is searched only in its own repository, exactly as a user restricted to
that repository would search. Timings are taken per stage (embed, search, rerank).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from eval.metrics import (
    Question,
    Scored,
    Span,
    aggregate,
    first_hit_rank,
    mean_curve,
    question_metrics,
)
from eval.metrics import recall_curve as curve_of
from indexer.errors import InvalidInput
from indexer.models import SEARCH_LISTS, Hit
from indexer.search import Searcher
from indexer.stores import SearchBackend

JSON_SCHEMA_VERSION = 1
CANDIDATES = 50  # fused candidates per list, as the answer pipeline uses

# (question, top-k) -> (ranked ranges best first, seconds per stage)
Ranker = Callable[[Question, int], tuple[list[Span], dict[str, float]]]
# (question text, hits) -> hits reordered best first
Rerank = Callable[[str, list[Hit]], list[Hit]]


@dataclass
class RunResult:
    """Scores of one configuration over a list of questions."""

    config: str
    k: int
    scored: list[Scored]
    retrieved: dict[str, list[Span]]
    latency: dict[str, list[float]] = field(default_factory=dict)  # stage -> seconds
    notes: list[str] = field(default_factory=list)

    @property
    def summary(self) -> dict[str, object]:
        return aggregate(self.scored)

    @property
    def curve(self) -> list[float]:
        return mean_curve(self.scored)

    def overall(self, metric: str) -> float:
        overall = self.summary["overall"]
        assert isinstance(overall, dict)
        return float(overall.get(metric, 0.0))


def span_of(hit: Hit) -> Span:
    return Span(hit.chunk.path, hit.chunk.start_line, hit.chunk.end_line)


def searcher_ranker(
    searcher: Searcher,
    lists: tuple[str, ...] = SEARCH_LISTS,
    rerank: Rerank | None = None,
    candidates: int = CANDIDATES,
    question_weights: bool = True,
) -> Ranker:
    """A ranker over ``searcher``; with ``rerank`` the fused candidates are reordered first."""

    def rank(q: Question, k: int) -> tuple[list[Span], dict[str, float]]:
        timings: dict[str, float] = {}
        repos = frozenset({q.repo})
        if "knn" in lists:
            started = time.perf_counter()
            searcher.embed_query(q.question)  # cached: search below reuses the vector
            timings["embed"] = time.perf_counter() - started
        started = time.perf_counter()
        depth = candidates if rerank is not None else k
        hits = searcher.search(
            q.question,
            repos,
            k=depth,
            candidates=candidates,
            lists=lists,
            question_weights=question_weights,
        )
        timings["search"] = time.perf_counter() - started
        if rerank is not None:
            started = time.perf_counter()
            hits = rerank(q.question, hits)
            timings["rerank"] = time.perf_counter() - started
        return [span_of(h) for h in hits[:k]], timings

    return rank


def evaluate(
    questions: Sequence[Question],
    ranker: Ranker,
    k: int = 10,
    config: str = "hybrid",
    progress: Callable[[int, int], None] | None = None,
) -> RunResult:
    """Ask every question through ``ranker`` and score its top ``k``."""
    if k < 1:
        raise InvalidInput("k must be at least 1")
    result = RunResult(config=config, k=k, scored=[], retrieved={})
    for i, q in enumerate(questions, start=1):
        ranked, timings = ranker(q, k)
        gold = [g.span for g in q.gold]
        result.scored.append(
            Scored(
                id=q.id,
                repo=q.repo,
                kind=q.kind,
                metrics=question_metrics(ranked, gold, k),
                curve=tuple(curve_of(ranked, gold, k)),
            )
        )
        result.retrieved[q.id] = ranked
        for stage, seconds in timings.items():
            result.latency.setdefault(stage, []).append(seconds)
        if progress:
            progress(i, len(questions))
    return result


def require_indexed(store: SearchBackend, repos: Sequence[str]) -> None:
    """Fail with a clear message when a golden set's repository is not in the store."""
    indexed = {s.repo for s in store.repo_states()}
    missing = sorted(set(repos) - indexed)
    if missing:
        raise InvalidInput(
            f"Not indexed here: {', '.join(missing)}. Run `codeask eval --index ...` to index "
            "the pinned corpora into this CODEASK_DATA_DIR first."
        )


def latency_summary(latency: dict[str, list[float]]) -> dict[str, dict[str, float]]:
    """Milliseconds per stage: mean, median and 95th percentile over questions."""
    out: dict[str, dict[str, float]] = {}
    for stage, values in sorted(latency.items()):
        ms = sorted(v * 1000 for v in values)
        p95 = ms[min(len(ms) - 1, max(0, round(0.95 * len(ms)) - 1))]
        out[stage] = {
            "mean": round(statistics.fmean(ms), 2),
            "p50": round(statistics.median(ms), 2),
            "p95": round(p95, 2),
        }
    return out


def _rounded(value: object) -> object:
    if isinstance(value, float):
        return round(value, 4)
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    return value


def run_to_json(result: RunResult, questions: Sequence[Question]) -> dict[str, object]:
    """The documented, stable ``--json`` shape of one configuration (eval/README.md)."""
    by_id = {q.id: q for q in questions}
    summary = result.summary
    rows = []
    for s in result.scored:
        gold = [g.span for g in by_id[s.id].gold]
        ranked = result.retrieved[s.id]
        first = first_hit_rank(ranked, gold)
        rows.append(
            {
                "id": s.id,
                "repo": s.repo,
                "kind": s.kind,
                "first_hit_rank": first,
                "metrics": _rounded(s.metrics),
                "retrieved": [f"{r.path}:{r.start_line}-{r.end_line}" for r in ranked],
            }
        )
    return {
        "schema_version": JSON_SCHEMA_VERSION,
        "config": result.config,
        "k": result.k,
        "overall": _rounded(summary["overall"]),
        "by_kind": _rounded(summary["by_kind"]),
        "by_repo": _rounded(summary["by_repo"]),
        "recall_curve": [round(v, 4) for v in result.curve],
        "latency_ms": latency_summary(result.latency),
        "notes": list(result.notes),
        "questions": rows,
    }


def golden_paths(paths: Sequence[Path]) -> list[Path]:
    """The golden files given on the command line; a folder means its ``*.jsonl``."""
    out: list[Path] = []
    for p in paths:
        if p.is_dir():
            out.extend(sorted(p.glob("*.jsonl")))
        elif p.is_file():
            out.append(p)
        else:
            raise InvalidInput(f"No golden set at {p}")
    if not out:
        raise InvalidInput("No golden questions given")
    return out
