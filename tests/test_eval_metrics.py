"""Retrieval metrics: the hit rule, each metric on hand-checked rankings, and invariants."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from eval.metrics import (
    Scored,
    Span,
    aggregate,
    all_gold_at,
    cutoffs,
    file_recall_at,
    first_hit_rank,
    hits,
    mean_curve,
    mrr_at,
    ndcg_at,
    question_metrics,
    recall_at,
    recall_curve,
)

GOLD = Span("src/core.py", 10, 20)


@pytest.mark.parametrize(
    ("retrieved", "expected"),
    [
        (Span("src/core.py", 10, 20), True),  # identical
        (Span("src/core.py", 1, 10), True),  # touches the first line
        (Span("src/core.py", 20, 40), True),  # touches the last line
        (Span("src/core.py", 12, 14), True),  # inside
        (Span("src/core.py", 1, 100), True),  # contains
        (Span("src/core.py", 1, 9), False),  # ends just before
        (Span("src/core.py", 21, 30), False),  # starts just after
        (Span("src/other.py", 10, 20), False),  # same lines, other file
        (Span("core.py", 10, 20), False),  # paths must be equal, not a suffix
    ],
)
def test_a_chunk_hits_gold_only_with_same_path_and_overlapping_lines(
    retrieved: Span, expected: bool
) -> None:
    assert hits(retrieved, GOLD) is expected


def test_single_gold_metrics_on_a_hand_checked_ranking() -> None:
    ranked = [Span("a.py", 1, 5), Span("b.py", 1, 5), Span("src/core.py", 15, 30)]
    gold = [GOLD]
    assert first_hit_rank(ranked, gold) == 3
    assert recall_at(ranked, gold, 1) == 0.0
    assert recall_at(ranked, gold, 2) == 0.0
    assert recall_at(ranked, gold, 3) == 1.0
    assert mrr_at(ranked, gold, 10) == pytest.approx(1 / 3)
    assert mrr_at(ranked, gold, 2) == 0.0  # beyond the cut-off counts as not found
    assert ndcg_at(ranked, gold, 10) == pytest.approx(1 / math.log2(4))
    assert file_recall_at(ranked, gold, 3) == 1.0
    assert file_recall_at(ranked, gold, 2) == 0.0


def test_multihop_recall_counts_places_and_all_gold_needs_every_place() -> None:
    gold = [Span("a.py", 1, 10), Span("b.py", 1, 10), Span("c.py", 1, 10)]
    ranked = [Span("a.py", 5, 6), Span("x.py", 1, 2), Span("b.py", 9, 30), Span("c.py", 10, 11)]
    assert recall_at(ranked, gold, 1) == pytest.approx(1 / 3)
    assert recall_at(ranked, gold, 3) == pytest.approx(2 / 3)
    assert all_gold_at(ranked, gold, 3) == 0.0
    assert all_gold_at(ranked, gold, 4) == 1.0
    assert mrr_at(ranked, gold, 10) == 1.0
    # gains at ranks 1, 3, 4; ideal gains at ranks 1, 2, 3
    dcg = 1 + 1 / math.log2(4) + 1 / math.log2(5)
    idcg = 1 + 1 / math.log2(3) + 1 / math.log2(4)
    assert ndcg_at(ranked, gold, 10) == pytest.approx(dcg / idcg)
    assert file_recall_at(ranked, gold, 3) == pytest.approx(2 / 3)


def test_two_chunks_of_one_gold_place_are_credited_once_in_ndcg() -> None:
    gold = [Span("a.py", 1, 200), Span("b.py", 1, 10)]
    split = [Span("a.py", 1, 100), Span("a.py", 101, 200)]
    assert ndcg_at(split, gold, 10) == pytest.approx(1 / (1 + 1 / math.log2(3)))
    assert recall_at(split, gold, 10) == 0.5


def test_one_chunk_covering_two_gold_places_gains_once() -> None:
    gold = [Span("a.py", 1, 5), Span("a.py", 10, 15)]
    ranked = [Span("a.py", 1, 15)]
    assert recall_at(ranked, gold, 1) == 1.0  # recall counts places
    assert ndcg_at(ranked, gold, 10) == pytest.approx(1 / (1 + 1 / math.log2(3)))


def test_nothing_retrieved_scores_zero_everywhere() -> None:
    metrics = question_metrics([], [GOLD], 10)
    assert set(metrics) == {
        "recall@1",
        "recall@5",
        "recall@10",
        "mrr@10",
        "ndcg@10",
        "file_recall@10",
        "all_gold@10",
    }
    assert all(v == 0.0 for v in metrics.values())


def test_cutoffs_follow_k() -> None:
    assert cutoffs(10) == (1, 5, 10)
    assert cutoffs(3) == (1, 3)
    assert cutoffs(20) == (1, 5, 10, 20)
    assert "recall@20" in question_metrics([GOLD], [GOLD], 20)


def test_aggregate_means_per_kind_and_per_repo() -> None:
    rows = [
        Scored("q1", "o/a", "concept", {"recall@1": 1.0}, (1.0, 1.0)),
        Scored("q2", "o/a", "identifier", {"recall@1": 0.0}, (0.0, 1.0)),
        Scored("q3", "o/b", "concept", {"recall@1": 0.0}, (0.0, 0.0)),
    ]
    summary = aggregate(rows)
    assert summary["overall"] == {"questions": 3.0, "recall@1": pytest.approx(1 / 3)}
    assert summary["by_kind"] == {
        "concept": {"questions": 2.0, "recall@1": 0.5},
        "identifier": {"questions": 1.0, "recall@1": 0.0},
    }
    assert summary["by_repo"] == {
        "o/a": {"questions": 2.0, "recall@1": 0.5},
        "o/b": {"questions": 1.0, "recall@1": 0.0},
    }
    assert mean_curve(rows) == pytest.approx([1 / 3, 2 / 3])


# --- invariants ----------------------------------------------------------------------

paths = st.sampled_from(["a.py", "b.py", "c.py"])


@st.composite
def spans(draw: st.DrawFn) -> Span:
    start = draw(st.integers(1, 60))
    return Span(draw(paths), start, start + draw(st.integers(0, 15)))


rankings = st.lists(spans(), max_size=15)
golds = st.lists(spans(), min_size=1, max_size=3)


@given(rankings, golds, st.integers(1, 15))
def test_every_metric_lies_between_zero_and_one(ranked, gold, k) -> None:  # type: ignore[no-untyped-def]
    for value in question_metrics(ranked, gold, k).values():
        assert 0.0 <= value <= 1.0 + 1e-9


@given(rankings, golds)
def test_recall_never_drops_as_k_grows(ranked, gold) -> None:  # type: ignore[no-untyped-def]
    curve = recall_curve(ranked, gold, 15)
    assert all(a <= b for a, b in itertools.pairwise(curve))


@given(rankings, golds, st.integers(1, 15))
def test_relations_between_metrics(ranked, gold, k) -> None:  # type: ignore[no-untyped-def]
    recall, mrr = recall_at(ranked, gold, k), mrr_at(ranked, gold, k)
    assert (recall > 0) == (mrr > 0) == (ndcg_at(ranked, gold, k) > 0)
    assert all_gold_at(ranked, gold, k) <= recall
    if len(gold) == 1:
        assert recall == (1.0 if mrr > 0 else 0.0)
    # a place hit means its file is in the top k
    assert (recall > 0) <= (file_recall_at(ranked, gold, k) > 0)


@given(golds)
def test_retrieving_exactly_the_gold_is_perfect(gold) -> None:  # type: ignore[no-untyped-def]
    distinct = list(dict.fromkeys(gold))
    # gold places that overlap each other can share a chunk; keep the test to disjoint ones
    disjoint = [g for i, g in enumerate(distinct) if not any(hits(g, h) for h in distinct[:i])]
    metrics = question_metrics(disjoint, disjoint, 10)
    assert metrics.pop("recall@1") == pytest.approx(1 / len(disjoint))
    assert all(v == pytest.approx(1.0) for v in metrics.values())


@given(rankings, golds, st.integers(1, 15))
def test_results_past_k_do_not_change_metrics_at_k(ranked, gold, k) -> None:  # type: ignore[no-untyped-def]
    top = (ranked + [Span("z.py", 1, 1)] * k)[:k]  # exactly k results, then more
    noise = [Span("a.py", 1, 100)] * 5
    assert question_metrics(top + noise, gold, k) == question_metrics(top, gold, k)
