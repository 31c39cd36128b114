"""Adaptive Cards for Teams: citations as links, sources, feedback, and the size cap."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.answer import NOT_FOUND_TEXT, Answer, Source
from bot.answer.asking import LLM_DOWN_TEXT
from bot.answer.result import not_found_answer, source_list
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
    parse_retry,
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
            "value": f"[payments/retry.py:10-14](https://github.com/acme/payments/"
            f"blob/{COMMIT}/payments/retry.py#L10-L14) · RetryPolicy.backoff\\_delay"
            " · acme/payments",
        }
    ]
    assert [a["type"] for a in card["actions"]] == [
        "Action.Execute",
        "Action.Execute",
        "Action.ShowCard",
    ]
    actions = card["actions"][:2]
    # Universal Actions: the click is an invoke the bot answers with the clicker's card.
    assert all(a["type"] == "Action.Execute" and a["verb"] == "feedback" for a in actions)
    assert {a["data"]["verdict"] for a in actions} == set(VERDICTS)
    assert all(
        a["data"] | {"verdict": "x"}
        == {"action": "feedback", "question_id": "qid-1", "verdict": "x"}
        for a in actions
    )


def test_answer_without_sources_has_no_source_list() -> None:
    card = answer_card(Answer("q", "It is set in the CI settings.", []), "q2")
    assert [b["type"] for b in card["body"]] == ["TextBlock"]
    assert [a["type"] for a in card["actions"]] == ["Action.Execute", "Action.Execute"]


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


# --- sources, the sources view, notices --------------------------------------------------

# Adaptive Cards 1.5 (and Teams' CodeBlock): each element and action type a card may hold
# and its required fields.
REQUIRED = {
    "AdaptiveCard": {"body"},
    "TextBlock": {"text"},
    "CodeBlock": {"codeSnippet"},
    "FactSet": {"facts"},
    "Container": {"items"},
    "ActionSet": {"actions"},
    "Action.Submit": {"title"},
    "Action.Execute": {"title", "verb"},
    "Action.OpenUrl": {"title", "url"},
    "Action.ShowCard": {"title", "card"},
    "Table": {"columns", "rows"},
    "TableRow": {"cells"},
    "TableCell": {"items"},
}
CONTAINER_STYLES = {"default", "emphasis", "good", "attention", "warning", "accent"}


def _typed(node: Any) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    if isinstance(node, dict):
        if isinstance(node.get("type"), str):
            found.append(node)
        for value in node.values():
            found += _typed(value)
    elif isinstance(node, list):
        for value in node:
            found += _typed(value)
    return found


def _assert_valid(card: dict[str, Any], budget: int = CARD_BUDGET) -> None:
    assert card["type"] == "AdaptiveCard" and card["version"] == "1.5"
    for element in _typed({"body": card["body"], "actions": card.get("actions", [])}):
        assert element["type"] in REQUIRED, element
        assert REQUIRED[element["type"]] <= element.keys(), element
        if element["type"] == "Container" and "style" in element:
            assert element["style"] in CONTAINER_STYLES
        if element["type"] == "Action.OpenUrl":
            assert element["url"].startswith("https://github.com/acme/payments/blob/")
        if element["type"] == "CodeBlock":
            assert isinstance(element.get("startLineNumber", 1), int)
    assert _size(card) <= budget


def _long_source(n: int, lines: int, start: int = 100) -> Source:
    chunk = Chunk(
        repo="acme/payments",
        visibility="private",
        commit=COMMIT,
        path=f"payments/mod{n}.py",
        language="python",
        kind="source",
        symbol=f"mod{n}",
        start_line=start,
        end_line=start + lines - 1,
        text="\n".join(f"line_{i} = {i}" for i in range(lines)),
    )
    return Source(n, chunk, 1.0)


def _body_text(card: dict[str, Any]) -> str:
    return json.dumps(card["body"])


def _view(card: dict[str, Any]) -> list[dict[str, Any]]:
    [view] = [a for a in card["actions"] if a["type"] == "Action.ShowCard"]
    assert view["title"] == "Show sources"
    return list(view["card"]["body"])


def test_only_cited_sources_are_rows_and_every_source_is_in_the_sources_view() -> None:
    sources = [_long_source(n, 30) for n in range(1, 7)]
    card = answer_card(Answer("q", "It doubles [2] up to a cap [5].", sources), "q5")
    _assert_valid(card)
    body = _body_text(card)
    assert "payments/mod2.py:100-129" in body and "payments/mod5.py:100-129" in body
    assert all(f"payments/mod{n}.py" not in body for n in (1, 3, 4, 6))
    facts = next(b for b in card["body"] if b["type"] == "FactSet")["facts"]
    assert [f["title"] for f in facts] == ["[2]", "[5]"]
    view = _view(card)
    codes = [e for e in view if e["type"] == "CodeBlock"]
    assert len(codes) == 6 and {c["startLineNumber"] for c in codes} == {100}
    assert codes[0]["codeSnippet"].split("\n") == [f"line_{i} = {i}" for i in range(12)]
    assert codes[0]["language"] == "Python"
    more = [e["text"] for e in view if e["type"] == "TextBlock" and "more lines" in e["text"]]
    assert more == ["… 18 more lines in the cited range"] * 6
    opens = [a for e in view if e["type"] == "ActionSet" for a in e["actions"]]
    assert [a["title"] for a in opens] == ["View on GitHub"] * 6
    assert opens[0]["url"] == (
        f"https://github.com/acme/payments/blob/{COMMIT}/payments/mod1.py#L100-L129"
    )


def test_a_card_over_budget_drops_the_code_of_the_sources_view_before_the_answer() -> None:
    sources = [_long_source(n, 30) for n in range(1, 7)]
    answer = Answer("q", "It doubles [1]. " * 300, sources)
    full = answer_card(answer, "q6")
    budget = _size(full) - 100
    card = answer_card(answer, "q6", budget=budget)
    _assert_valid(card, budget)
    assert TRUNCATED_NOTE not in _body_text(card)
    view = _view(card)
    assert not [e for e in view if e["type"] == "CodeBlock"]
    assert len([e for e in view if e["type"] == "ActionSet"]) == 6


def test_not_found_card_is_a_warning_naming_the_searched_repos_without_feedback() -> None:
    closest = [_source(1, path="payments/near.py"), _source(2, path="payments/far.py")]
    answer = not_found_answer("where is the GPU autoscaler?", closest)
    answer.searched = ["acme/payments", "acme/web"]
    card = answer_card(answer, "q7")
    _assert_valid(card)
    warning = card["body"][0]
    assert warning["type"] == "Container" and warning["style"] == "warning"
    assert warning["items"][0]["text"].startswith(NOT_FOUND_TEXT)
    body = _body_text(card)
    assert body.count("payments/near.py:10-14") == 1 and body.count("payments/far.py:20-24") == 1
    assert "Searched: acme/payments, acme/web" in body
    assert [a["type"] for a in card["actions"]] == ["Action.ShowCard"]


def test_each_line_of_a_paragraph_stays_a_line_in_a_text_block() -> None:
    # A TextBlock joins lines a single newline separates; the not-found lead is two lines.
    card = answer_card(not_found_answer("q", [_source(1)]), "q7")
    lead = card["body"][0]["items"][0]["text"]
    assert lead == f"{NOT_FOUND_TEXT}\n\nThe closest places to look:"
    card = answer_card(
        Answer("q", "It **doubles**\nup to *30 s*  \nat most [1].", [_source(1)]), "q"
    )
    text = card["body"][0]["text"]
    assert text.startswith("It **doubles**\n\nup to _30 s_\n\nat most [[1]](https://")


def test_not_found_without_places_has_no_actions() -> None:
    card = answer_card(not_found_answer("q", []), "q8")
    _assert_valid(card)
    assert "actions" not in card and card["body"][0]["style"] == "warning"


def test_model_down_card_is_a_warning_with_retry_and_its_places_once() -> None:
    places = [_source(1, path="payments/near.py"), _source(2, path="payments/far.py")]
    text = f"{LLM_DOWN_TEXT}\n{source_list(places)}"
    answer = Answer("q", text, places, found=False, unavailable=True, lead=LLM_DOWN_TEXT)
    card = answer_card(answer, "q9")
    _assert_valid(card)
    assert card["body"][0]["style"] == "warning"
    assert card["body"][0]["items"][0]["text"].startswith("The language model is unavailable")
    body = _body_text(card)
    assert body.count("payments/near.py:10-14") == 1 and body.count("payments/far.py:20-24") == 1
    retry, view = card["actions"]
    assert retry["type"] == "Action.Submit" and retry["title"] == "Retry"
    assert retry["data"] == {"action": "retry", "question_id": "q9"}
    assert view["type"] == "Action.ShowCard"
    assert parse_retry(retry["data"]) == "q9"
    assert parse_retry({"action": {"type": "Action.Execute", "data": retry["data"]}}) == "q9"
    for bad in (None, {"action": "retry"}, {"action": "retry", "question_id": 7}, {"x": 1}):
        assert parse_retry(bad) is None
    assert parse_feedback(retry["data"]) is None
