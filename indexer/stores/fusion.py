"""Reciprocal rank fusion of ranked lists (Cormack et al., k=60)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

RRF_K = 60


def rrf(
    lists: Mapping[str, Sequence[str]],
    k: int = RRF_K,
    weights: Mapping[str, float] | None = None,
) -> list[tuple[str, float, dict[str, int]]]:
    """Fuse ranked id lists into ``(id, score, {list: 1-based rank})``, best first.

    Ties are broken by id so the result does not depend on the order of ``lists``.
    """
    scores: dict[str, float] = {}
    ranks: dict[str, dict[str, int]] = {}
    for name, ids in lists.items():
        weight = 1.0 if weights is None else weights.get(name, 1.0)
        seen: set[str] = set()
        for rank, doc_id in enumerate(ids, start=1):
            if doc_id in seen:
                continue
            seen.add(doc_id)
            scores[doc_id] = scores.get(doc_id, 0.0) + weight / (k + rank)
            ranks.setdefault(doc_id, {})[name] = rank
    ordered = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
    return [(doc_id, score, ranks[doc_id]) for doc_id, score in ordered]
