"""When the evidence is too weak to answer: signals, the rule, and its calibration.

The decision is made before any language model runs, from signals search already has:

* ``best_cosine``: the highest cosine similarity between the question's embedding and the
  embedding text (header, symbol, start of code) of the top sources, with the same
  bi-encoder the index uses. It measures "is anything here about this at all".
* ``lexical_support``: whether that best chunk is also near the top of the BM25 list
  (rank <= ``LEXICAL_TOP``). Identifier questions (``split_arg_string: what happens…``) get
  modest cosine scores but a decisive lexical match, so lexical agreement lowers the bar
  by ``LEXICAL_MARGIN``.
* ``rerank_score``: the cross-encoder's score of the top source (after its activation),
  used instead of cosine when ``CODEASK_NOT_FOUND_RERANK_THRESHOLD`` is set, because the
  score scale depends on how the reranker was trained.

Default ``DEFAULT_COSINE_THRESHOLD = 0.25`` (all-MiniLM-L6-v2), from a first measurement
on the golden sets (koa and click indexes, 8 questions of every set asked against each):
the 16 answerable questions had a best cosine of 0.32-0.73 (median 0.50); the 64
unanswerable ones (other sets' questions against this corpus) 0.07-0.43 (median 0.23).
At 0.25 no answerable question was refused and 30 of 64 unanswerable ones were (0.20:
16 of 64; 0.30: 40 of 64). The default stays below the answerable minimum on purpose: a
wrong "not found" hides real code, while a weak answer still shows its sources and the
prompt tells the model to say "not found" itself. ``calibrate_threshold`` recomputes the
value from signals measured on the full golden sets (answerable: a set's own questions;
unanswerable: other sets' questions against its corpus), e.g. with ``AnswerPipeline.retrieve``
and ``Retrieval.signal``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

from bot.settings import DEFAULT_COSINE_THRESHOLD
from indexer.models import Hit

LEXICAL_MARGIN = 0.05
LEXICAL_TOP = 10
COSINE_SOURCES = 3  # how many top sources are embedded to find the best cosine


@dataclass(frozen=True)
class EvidenceSignal:
    """The raw numbers the weak-evidence rule looks at (shown by ``--explain``)."""

    best_cosine: float
    lexical_support: bool
    rerank_score: float | None = None

    def as_dict(self) -> dict[str, float | bool | None]:
        return asdict(self)


def evidence_signal(
    question_vector: np.ndarray,
    chunk_vectors: np.ndarray,
    hits: Sequence[Hit],
    rerank_score: float | None = None,
) -> EvidenceSignal:
    """Signal for ``hits`` (best first) whose embedding-text vectors are ``chunk_vectors``.

    Vectors are L2-normalised, so the dot product is the cosine similarity.
    """
    if not hits or chunk_vectors.shape[0] == 0:
        return EvidenceSignal(best_cosine=0.0, lexical_support=False, rerank_score=rerank_score)
    cosines = chunk_vectors @ np.asarray(question_vector, dtype=np.float32)
    best = int(np.argmax(cosines))
    bm25_rank = hits[best].ranks.get("bm25")
    return EvidenceSignal(
        best_cosine=round(float(cosines[best]), 4),
        lexical_support=bm25_rank is not None and bm25_rank <= LEXICAL_TOP,
        rerank_score=rerank_score,
    )


def is_weak(
    signal: EvidenceSignal,
    cosine_threshold: float = DEFAULT_COSINE_THRESHOLD,
    rerank_threshold: float | None = None,
) -> bool:
    """True when the evidence is too weak to answer from (say "not found" instead)."""
    if rerank_threshold is not None and signal.rerank_score is not None:
        return signal.rerank_score < rerank_threshold
    bar = cosine_threshold - (LEXICAL_MARGIN if signal.lexical_support else 0.0)
    return signal.best_cosine < bar


@dataclass(frozen=True)
class Calibration:
    threshold: float
    false_not_found_rate: float  # share of answerable questions that would be refused
    caught_rate: float  # share of unanswerable questions that would be refused


def calibrate_threshold(
    answerable: Sequence[float],
    unanswerable: Sequence[float],
    max_false_not_found: float = 0.05,
) -> Calibration:
    """The highest threshold that refuses at most ``max_false_not_found`` of answerable
    questions, given their best-source scores (cosine or rerank, one kind per call).

    A score below the threshold means "not found", so refusing answerable questions is the
    error bounded here; the unanswerable share caught is reported for the write-up.
    """
    if not answerable:
        raise ValueError("calibration needs at least one answerable question")
    ordered = sorted(answerable)
    allowed = int(max_false_not_found * len(ordered))  # answerable questions we may refuse
    threshold = ordered[allowed]  # scores strictly below this are refused
    refused = sum(1 for s in ordered if s < threshold)
    caught = sum(1 for s in unanswerable if s < threshold)
    return Calibration(
        threshold=round(float(threshold), 4),
        false_not_found_rate=refused / len(ordered),
        caught_rate=caught / len(unanswerable) if unanswerable else 0.0,
    )
