"""Adaptive Cards for Teams: citations as links, sources, feedback, and the size cap."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.answer import Answer, Source
from bot.chat import CommandResult
from bot.chat.feedback import VERDICTS
from bot.teams.render import (
    CARD_BUDGET,
    TRUNCATED_LIST,
    TRUNCATED_NOTE,
    answer_card,
    command_card,
    linked_text,
    parse_feedback,
    progress_text,
)
from bot.teams.turns import looks_like_command
from indexer.models import Chunk

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def _source(
    n: int, path: str = "payments/retry.py", symbol: str = "RetryPolicy.backoff_delay"
) -> Source:
    chunk = Chunk(
        repo="acme/payments",
        visibility="private",
        commit=COMMIT,
        path=path,
        language="python",
        kind="source",
        symbol=symbol,
        start_line=10 * n,
        end_line=10 * n + 4,
        text="def backoff_delay(self, attempt): ...",
        header="",
        blob_sha="b" * 40,
    )
    return Source(n, chunk, 1.0 / n)


def _size(card: dict[str, object]) -> int:
    return len(json.dumps(card, ensure_ascii=False).encode())


def test_citations_become_links_to_the_commit_pinned_lines() -> None:
    text = linked_text("Doubles [1], capped [2]; see also [7].", [_source(1), _source(2)])
    first = f"https://github.com/acme/payments/blob/{COMMIT}/payments/retry.py#L10-L14"
    assert text == (
        f"Doubles [[1]]({first}), capped "
        f"[[2]](https://github.com/acme/payments/blob/{COMMIT}/payments/retry.py#L20-L24); "
        "see also [7]."
    )


def test_link_uses_the_configured_github_host_and_escapes_parentheses() -> None:
    source = _source(1, path="docs/setup (old).md")
    text = linked_text("[1]", [source], "https://github.example.com/")
    assert text.startswith("[[1]](https://github.example.com/acme/payments/blob/")
    assert text.endswith("docs/setup%20%28old%29.md#L10-L14)")


def test_answer_card_has_answer_sources_notices_and_feedback() -> None:
    answer = Answer("q", "It doubles [1].", [_source(1)], notes=["Regenerated once."])
    card = answer_card(answer, "qid-1", notices=["Only public repositories were searched."])
    assert card["type"] == "AdaptiveCard" and card["version"] == "1.5"
    texts = [b["text"] for b in card["body"] if b["type"] == "TextBlock"]
    assert texts[0].startswith("It doubles [[1]](https://github.com/")
    assert texts[1:3] == ["Only public repositories were searched.", "Regenerated once."]
    facts = next(b for b in card["body"] if b["type"] == "FactSet")["facts"]
    assert facts == [
        {
            "title": "[1]",
            "value": f"[acme/payments/payments/retry.py:10-14](https://github.com/acme/payments/"
            f"blob/{COMMIT}/payments/retry.py#L10-L14) — RetryPolicy.backoff\\_delay",
        }
    ]
    actions = card["actions"]
    # Universal Actions: the click is an invoke the bot answers with the clicker's card.
    assert all(a["type"] == "Action.Execute" and a["verb"] == "feedback" for a in actions)
    assert {a["data"]["verdict"] for a in actions} == set(VERDICTS)
    assert all(
        a["data"] | {"verdict": "x"}
        == {"action": "feedback", "question_id": "qid-1", "verdict": "x"}
        for a in actions
    )


def test_answer_without_sources_has_no_source_list() -> None:
    card = answer_card(Answer("q", "Not found in the indexed code.", [], found=False), "q2")
    assert [b["type"] for b in card["body"]] == ["TextBlock"]


def test_long_answer_is_shortened_with_a_note_and_keeps_every_source() -> None:
    sources = [_source(n) for n in range(1, 7)]
    text = " ".join(f"Word{i} [{1 + i % 6}]" for i in range(20_000))
    card = answer_card(Answer("q", text, sources), "q3")
    assert _size(card) <= CARD_BUDGET
    texts = [b["text"] for b in card["body"] if b["type"] == "TextBlock"]
    assert TRUNCATED_NOTE in texts
    assert texts[0].startswith("Word0 [[1]](")
    assert len(next(b for b in card["body"] if b["type"] == "FactSet")["facts"]) == 6
    assert _size(card) > CARD_BUDGET - 2_000  # shortened no more than needed


@settings(max_examples=25, deadline=None)
@given(
    text=st.text(min_size=0, max_size=40_000),
    paths=st.lists(st.text(min_size=1, max_size=3_000), min_size=0, max_size=8),
)
def test_answer_card_never_exceeds_the_budget(text: str, paths: list[str]) -> None:
    sources = [_source(i, path=p) for i, p in enumerate(paths, start=1)]
    card = answer_card(Answer("q", text, sources), "q4", budget=8_000)
    assert _size(card) <= 8_000
    assert card["actions"]  # feedback always survives


def test_command_card_shows_lines_and_marks_errors() -> None:
    ok = command_card(CommandResult(["Registered acme/payments.", "Indexing is queued."]))
    assert [b["text"] for b in ok["body"]] == ["Registered acme/payments.", "Indexing is queued."]
    assert "actions" not in ok
    error = command_card(CommandResult(["Only codeask admins can run that command."], error=True))
    assert error["body"][0]["color"] == "Attention"


def test_command_card_shortens_a_huge_listing() -> None:
    lines = [f"acme/repo{i:05d}  ready  main@0123456789ab  2 minutes ago" for i in range(2_000)]
    card = command_card(CommandResult(lines))
    assert _size(card) <= CARD_BUDGET
    assert card["body"][-1]["text"] == TRUNCATED_LIST and len(card["body"]) > 100


def test_feedback_is_read_from_submit_and_execute_payloads() -> None:
    data = {"action": "feedback", "question_id": "q1", "verdict": "helpful"}
    assert parse_feedback(data) == parse_feedback(
        {"action": {"type": "Action.Execute", "data": data}}
    )
    parsed = parse_feedback(data)
    assert parsed is not None and (parsed.question_id, parsed.verdict) == ("q1", "helpful")
    for bad in (
        None,
        "feedback",
        {"action": "other", "question_id": "q1", "verdict": "helpful"},
        {"action": "feedback", "question_id": "", "verdict": "helpful"},
        {"action": "feedback", "question_id": "q1", "verdict": "meh"},
        {"action": {"data": "nope"}},
    ):
        assert parse_feedback(bad) is None


def test_progress_text_marks_an_unfinished_answer() -> None:
    assert progress_text("") == "Searching the indexed code …"
    assert progress_text("It doubles  ") == "It doubles …"


def test_commands_are_told_apart_from_questions() -> None:
    for command in (
        "help",
        "whoami",
        "link",
        "repo list",
        "repo add acme/x --branch dev",
        "channel grant acme/x",
        "status",
        "status acme/x",
        "REPO LIST",
    ):
        assert looks_like_command(command), command
    for question in (
        "help me find the retry code",
        "repo of the billing service?",
        "status codes returned by the API",
        "how does link() work",
        "",
    ):
        assert not looks_like_command(question), question
