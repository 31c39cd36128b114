"""What a question asks for, as far as ranking needs to know (pure, rule-based).

The rules were chosen on the golden sets (eval/results/latest.md has the ablation rows):
implementation questions are best answered by source, so test and documentation chunks
are ranked lower unless the question asks about tests or docs; they are never removed.
"""

from __future__ import annotations

import re

# RRF weight of each ranked list: BM25 over code tokens is the stronger signal for code;
# the general-purpose sentence embedding adds recall for paraphrased questions.
LIST_WEIGHTS = {"bm25": 1.0, "knn": 0.5}

_TESTS = re.compile(r"\b(tests?|tested|testing|specs?|fixtures?|asserts?|mocks?)\b", re.I)
_DOCS = re.compile(
    r"\b(docs?|documentation|documented|readme|changelog|changes|release notes|guide|tutorial"
    r"|manual|history|migrat\w*)\b",
    re.I,
)
TEST_WEIGHT = 0.5
DOCS_WEIGHT = 0.6


def kind_weights(question: str) -> dict[str, float]:
    """Score multipliers per chunk kind for ``question`` (kinds not listed keep 1.0)."""
    return {
        "test": 1.0 if _TESTS.search(question) else TEST_WEIGHT,
        "docs": 1.0 if _DOCS.search(question) else DOCS_WEIGHT,
    }
