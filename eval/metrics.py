"""Retrieval metrics over golden questions: pure functions of ranked line ranges.

A retrieved range *hits* a gold place when the paths are equal and the 1-based,
inclusive line ranges overlap; a *file-level* hit only needs the same path.

Per question, with ``ranked`` the retrieved ranges best first:

* ``recall@k``: share of the question's gold places hit by some range in the top k
  (1 or 0 for a single-place question).
* ``all_gold@k``: 1 when every gold place is hit in the top k (the multi-hop metric).
* ``mrr@k``: 1 / rank of the first range that hits any gold place, 0 if none in the top k.
* ``ndcg@k``: binary gain, a range gains 1 when it hits a gold place that no better
  ranked range hit already (two chunks of one split function count once), so the ideal
  ranking puts one hit per gold place first.
* ``file_recall@k``: share of the distinct gold paths present in the top k.

Aggregates are plain means over questions, overall, per ``kind`` and per ``repo``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

RECALL_CUTOFFS = (1, 5, 10)


@dataclass(frozen=True)
class Span:
    """A line range in one file (1-based, inclusive)."""

    path: str
    start_line: int
    end_line: int


@dataclass(frozen=True)
class GoldPlace:
    path: str
    start_line: int
    end_line: int
    symbol: str = ""

    @property
    def span(self) -> Span:
        return Span(self.path, self.start_line, self.end_line)


@dataclass(frozen=True)
class Question:
    id: str
    repo: str
    question: str
    kind: str
    gold: tuple[GoldPlace, ...]


def hits(retrieved: Span, gold: Span) -> bool:
    """Same path and overlapping line ranges."""
    return (
        retrieved.path == gold.path
        and retrieved.start_line <= gold.end_line
        and gold.start_line <= retrieved.end_line
    )


def gold_hit_by(retrieved: Span, gold: Sequence[Span]) -> list[int]:
    """Indices of the gold places ``retrieved`` hits."""
    return [i for i, g in enumerate(gold) if hits(retrieved, g)]


def recall_at(ranked: Sequence[Span], gold: Sequence[Span], k: int) -> float:
    if not gold:
        return 0.0
    found = {i for r in ranked[:k] for i in gold_hit_by(r, gold)}
    return len(found) / len(gold)


def all_gold_at(ranked: Sequence[Span], gold: Sequence[Span], k: int) -> float:
    return 1.0 if gold and recall_at(ranked, gold, k) == 1.0 else 0.0


def first_hit_rank(ranked: Sequence[Span], gold: Sequence[Span]) -> int | None:
    """1-based rank of the first range that hits any gold place."""
    for rank, r in enumerate(ranked, start=1):
        if gold_hit_by(r, gold):
            return rank
    return None


def mrr_at(ranked: Sequence[Span], gold: Sequence[Span], k: int) -> float:
    rank = first_hit_rank(ranked[:k], gold)
    return 0.0 if rank is None else 1.0 / rank


def ndcg_at(ranked: Sequence[Span], gold: Sequence[Span], k: int) -> float:
    if not gold or k <= 0:
        return 0.0
    credited: set[int] = set()
    dcg = 0.0
    for rank, r in enumerate(ranked[:k], start=1):
        new = [i for i in gold_hit_by(r, gold) if i not in credited]
        if new:
            credited.add(new[0])  # one gain per range, for one not-yet-found place
            dcg += 1.0 / math.log2(rank + 1)
    ideal = sum(1.0 / math.log2(rank + 1) for rank in range(1, min(len(gold), k) + 1))
    return dcg / ideal


def file_recall_at(ranked: Sequence[Span], gold: Sequence[Span], k: int) -> float:
    paths = {g.path for g in gold}
    if not paths:
        return 0.0
    return len(paths & {r.path for r in ranked[:k]}) / len(paths)


def cutoffs(k: int) -> tuple[int, ...]:
    """The recall cutoffs reported for a run with top-``k``: 1, 5, 10 up to k, and k."""
    return tuple(sorted({c for c in RECALL_CUTOFFS if c <= k} | {k}))


def question_metrics(ranked: Sequence[Span], gold: Sequence[Span], k: int) -> dict[str, float]:
    """Every per-question metric, keyed as in the ``--json`` output (e.g. ``recall@10``)."""
    row = {f"recall@{c}": recall_at(ranked, gold, c) for c in cutoffs(k)}
    row[f"mrr@{k}"] = mrr_at(ranked, gold, k)
    row[f"ndcg@{k}"] = ndcg_at(ranked, gold, k)
    row[f"file_recall@{k}"] = file_recall_at(ranked, gold, k)
    row[f"all_gold@{k}"] = all_gold_at(ranked, gold, k)
    return row


def recall_curve(ranked: Sequence[Span], gold: Sequence[Span], k: int) -> list[float]:
    """recall@1 … recall@k of one question."""
    return [recall_at(ranked, gold, c) for c in range(1, k + 1)]


@dataclass(frozen=True)
class Scored:
    """One evaluated question: its grouping keys and its metrics."""

    id: str
    repo: str
    kind: str
    metrics: dict[str, float]
    curve: tuple[float, ...] = ()


def mean_metrics(rows: Iterable[Scored]) -> dict[str, float]:
    """Mean of every metric over ``rows`` plus ``questions`` (their count)."""
    rows = list(rows)
    out: dict[str, float] = {"questions": float(len(rows))}
    if not rows:
        return out
    for key in rows[0].metrics:
        out[key] = sum(r.metrics[key] for r in rows) / len(rows)
    return out


def mean_curve(rows: Iterable[Scored]) -> list[float]:
    curves = [r.curve for r in rows if r.curve]
    if not curves:
        return []
    width = min(len(c) for c in curves)
    return [sum(c[i] for c in curves) / len(curves) for i in range(width)]


def aggregate(rows: Sequence[Scored]) -> dict[str, object]:
    """``overall``, ``by_kind`` and ``by_repo`` means (groups in sorted order)."""
    kinds = sorted({r.kind for r in rows})
    repos = sorted({r.repo for r in rows})
    return {
        "overall": mean_metrics(rows),
        "by_kind": {kd: mean_metrics(r for r in rows if r.kind == kd) for kd in kinds},
        "by_repo": {rp: mean_metrics(r for r in rows if r.repo == rp) for rp in repos},
    }
