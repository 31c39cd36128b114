"""Ranking adjustments by what the question asks for."""

from __future__ import annotations

from indexer.models import Chunk, SearchRequest
from indexer.stores.contract import fuse
from indexer.stores.query import example_weight, kind_weights, symbol_terms


def chunk(path: str, kind: str) -> Chunk:
    return Chunk("acme/app", path, 1, 3, "x = 1", "x", "python", kind)


def test_implementation_questions_rank_tests_and_docs_lower() -> None:
    weights = kind_weights("how is the retry delay computed?")
    assert weights["test"] < 1.0 and weights["docs"] < 1.0
    assert kind_weights("where is the retry delay tested?")["test"] == 1.0
    assert kind_weights("what does the README say about installing?")["docs"] == 1.0


def test_fusion_prefers_source_but_keeps_tests_and_docs() -> None:
    src, test, doc = (
        chunk("app/retry.py", "source"),
        chunk("tests/test_retry.py", "test"),
        chunk("docs/retry.md", "docs"),
    )
    request = SearchRequest("how is the retry delay computed", frozenset({"acme/app"}), k=3)
    ranked = {"bm25": [test.id, doc.id, src.id], "knn": [test.id, doc.id, src.id]}
    hits = fuse(request, ranked, [src, test, doc])
    assert hits[0].chunk.kind == "source"
    assert {h.chunk.kind for h in hits} == {"source", "test", "docs"}  # lower, never hidden
    asked = SearchRequest("where is the retry delay tested", frozenset({"acme/app"}), k=3)
    assert fuse(asked, ranked, [src, test, doc])[0].chunk.kind == "test"
    plain = SearchRequest(request.text, request.repos, k=3, question_weights=False)
    assert [h.chunk.kind for h in fuse(plain, ranked, [src, test, doc])] == [
        "test",
        "docs",
        "source",
    ]


def test_symbol_terms_are_the_identifiers_a_question_names() -> None:
    assert symbol_terms("What does TokenBucket.refill do with STRIPE_WEBHOOK_SECRET?") == [
        "tokenbucket",
        "refill",
        "stripe_webhook_secret",
    ]
    # A lower-case receiver is a variable, not a definition to look for.
    assert symbol_terms("How does setting ctx.body reach the socket via app.use?") == [
        "body",
        "use",
    ]
    assert symbol_terms("how is the retry delay computed") == []
    assert symbol_terms("what is __init__ for in calculate_mrr") == ["init", "calculate_mrr"]


def test_example_programs_rank_lower_unless_asked_for() -> None:
    src, example = chunk("src/click/core.py", "source"), chunk("examples/repo/setup.py", "source")
    request = SearchRequest("which Python version does setup declare", frozenset({"acme/app"}), k=2)
    ranked = {"bm25": [example.id, src.id], "knn": [example.id, src.id]}
    assert fuse(request, ranked, [src, example])[0].chunk == src
    asked = SearchRequest("is there an example of a setup file", frozenset({"acme/app"}), k=2)
    assert fuse(asked, ranked, [src, example])[0].chunk == example
    assert example_weight("anything", "docs/samples/app.py") < 1.0
    assert example_weight("anything", "src/resamples/app.py") == 1.0  # a word, not a folder
