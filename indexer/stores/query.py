"""What a question asks for, as far as ranking needs to know (pure, rule-based).

The rules were chosen on the golden sets (eval/results/latest.md has the ablation rows):
implementation questions are best answered by source, so test and documentation chunks
are ranked lower unless the question asks about tests or docs; they are never removed.
"""

from __future__ import annotations

import re

from indexer.source import identifiers_in

# RRF weight of each ranked list: BM25 over code tokens is the stronger signal for code;
# the general-purpose sentence embedding adds recall for paraphrased questions; the symbol
# list (identifiers named in the question against the names chunks define) puts the
# definition of a named thing first without drowning the other lists (eval: weight 0.5
# gave MRR@10 0.672 -> 0.693, weight 1.0 less).
LIST_WEIGHTS = {"bm25": 1.0, "knn": 0.5, "symbol": 0.5}
_MIN_SYMBOL_TERM = 3  # shorter parts of a dotted name (``os``, ``db``) match too much

_TESTS = re.compile(r"\b(tests?|tested|testing|specs?|fixtures?|asserts?|mocks?)\b", re.I)
_DOCS = re.compile(
    r"\b(docs?|documentation|documented|readme|changelog|changes|release notes|guide|tutorial"
    r"|manual|history|migrat\w*)\b",
    re.I,
)
TEST_WEIGHT = 0.5
DOCS_WEIGHT = 0.6
# Example programs (``examples/``, ``samples/``, ``demo/``) restate the library's API in
# many near-identical small files: they crowd implementation and config questions
# (eval: R@10 0.823 -> 0.835, multi-hop all gold 0.526 -> 0.579 at 0.5) unless asked for.
_EXAMPLE_PATH = re.compile(r"(^|/)(examples?|samples?|demos?)/")
_EXAMPLES = re.compile(r"\b(examples?|samples?|demos?)\b", re.I)
EXAMPLE_WEIGHT = 0.5


def symbol_terms(question: str) -> list[str]:
    """The code identifiers a question names, as whole lower-case symbol terms.

    ``TokenBucket.refill`` -> ``tokenbucket``, ``refill``; ``STRIPE_WEBHOOK_SECRET`` ->
    ``stripe_webhook_secret``. Plain words are not identifiers: a question without
    ``snake_case``, ``camelCase``, ``dotted.names`` or ``CONSTANTS`` has no symbol list.
    """
    names: dict[str, None] = {}
    for ident in identifiers_in(question):
        parts = ident.split(".")
        if len(parts) > 1 and parts[0][:1].islower():
            parts = parts[1:]  # ``ctx.body``, ``app.use``: a variable, then the member
        for part in parts:
            word = part.lower().strip("_")
            if len(word) >= _MIN_SYMBOL_TERM:
                names.setdefault(word, None)
    return list(names)


def example_weight(question: str, path: str) -> float:
    """Score multiplier for a chunk at ``path``: lower for example programs, unless the
    question asks for examples."""
    if _EXAMPLE_PATH.search(path) and not _EXAMPLES.search(question):
        return EXAMPLE_WEIGHT
    return 1.0


def kind_weights(question: str) -> dict[str, float]:
    """Score multipliers per chunk kind for ``question`` (kinds not listed keep 1.0)."""
    return {
        "test": 1.0 if _TESTS.search(question) else TEST_WEIGHT,
        "docs": 1.0 if _DOCS.search(question) else DOCS_WEIGHT,
    }
