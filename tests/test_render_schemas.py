"""Every Slack message and Teams card the renderers build validates against the platforms'
published structure: Block Kit (tests/schemas/slack_blocks.json) and Adaptive Cards 1.5
with Teams' CodeBlock (tests/schemas/adaptive_card_1_5.json), limits and enums included.

The schemas are JSON Schema draft 2020-12; every object in them rejects unknown
properties, so a mistyped key fails here before Slack or Teams refuses the message.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from jsonschema import Draft202012Validator, FormatChecker
from jsonschema.exceptions import best_match

from acl import Place, Principal
from acl.permissions import REASON_CHANNEL
from bot.answer import Answer, AnsweredQuestion, Source
from bot.answer.asking import LLM_DOWN_TEXT
from bot.answer.result import not_found_answer, source_list
from bot.chat import CommandResult
from bot.chat.commands import help_result
from bot.slack.app import COMMAND
from bot.slack.home import HomeData, RepoFreshness, dm_url, home_view
from bot.slack.private import (
    private_answer_messages,
    shared_messages,
    unvoted_message,
    vote_message,
    withheld_message,
)
from bot.slack.render import (
    SlackMessage,
    answer_messages,
    help_message,
    progress_message,
    source_details,
    text_message,
)
from bot.teams.render import answer_card, command_card, help_card, text_card
from bot.teams.sources import sources_view
from bot.teams.turns import EMPTY, NOT_HERE, NOT_SENT_PRIVATELY, WELCOME, asker_note_card
from bot.teams.votes import card_invoke_body, voted_answer_card, with_vote
from scripts.preview.views import answers as preview_answers
from scripts.preview.views import home_data as preview_home_data
from tests.test_answer_rendering import CORPUS, LONG_ANSWER, WEB, _answer, _source

SCHEMAS = Path(__file__).parent / "schemas"
Payload = dict[str, Any]


def _is_uri(value: object) -> bool:
    """An absolute URI (RFC 3986: a scheme; a web URL also needs a host). jsonschema only
    checks "uri" with an optional package, so the check is made here."""
    if not isinstance(value, str) or any(c.isspace() for c in value):
        return False
    parts = urlsplit(value)
    if not parts.scheme or not parts.scheme[0].isalpha():
        return False
    return bool(parts.netloc) if parts.scheme in ("http", "https") else True


FORMATS = FormatChecker()
FORMATS.checks("uri")(_is_uri)


@cache
def _validator(name: str) -> Draft202012Validator:
    schema = json.loads((SCHEMAS / name).read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema, format_checker=FORMATS)


SLACK = "slack_blocks.json"
CARDS = "adaptive_card_1_5.json"


def _errors(schema: str, payload: Payload) -> list[str]:
    """Readable errors: the path into the payload and the best-matching reason."""
    errors = list(_validator(schema).iter_errors(payload))
    if not errors:
        return []
    shown = [best_match(errors), *errors[:5]]
    return [
        f"{'/'.join(map(str, e.absolute_path)) or '(root)'}: {_short(e.message)}" for e in shown
    ]


def _short(message: str) -> str:
    # A message quotes the failing value whole; keep its start and the reason at its end.
    return message if len(message) <= 300 else f"{message[:80]} … {message[-160:]}"


# --- what the renderers build -------------------------------------------------------------

QID = "q1"


def _closest() -> list[Source]:
    return [_source(1), _source(2)]


def _not_found() -> Answer:
    answer = not_found_answer("where is the GPU autoscaler?", _closest())
    answer.searched = [f"acme/repo{n:02d}" for n in range(14)]
    return answer


def _model_down() -> Answer:
    text = f"{LLM_DOWN_TEXT}\n{source_list(_closest())}"
    return Answer("q", text, _closest(), found=False, unavailable=True, lead=LLM_DOWN_TEXT)


def answers() -> dict[str, Answer]:
    """Every kind of answer the renderers meet: the corpus, notices, notes, long text."""
    out = {f"corpus-{i}": _answer(text) for i, text in enumerate(CORPUS)}
    out["corpus-40k"] = _answer(LONG_ANSWER)
    out |= {f"preview-{key}": answer for key, answer in preview_answers().items()}
    out["not-found"] = _not_found()
    bare = not_found_answer("q", [])
    bare.searched = ["acme/api"]
    out["not-found-no-places"] = bare
    out["model-down"] = _model_down()
    out["index-down"] = Answer("q", "The code search index is unavailable.", [], unavailable=True)
    noted = _answer(CORPUS[0])
    noted.notes = ["GitHub could not confirm your access to acme/private; it was left out."] * 12
    noted.withheld_private, noted.asker_note = True, REASON_CHANNEL
    out["withheld-notes"] = noted
    many = [_source(n) for n in range(1, 15)]
    out["many-sources"] = Answer("q", " ".join(f"[{n}]" for n in range(1, 15)), many)
    out["no-sources"] = Answer("q", "It is set in the CI settings.", [])
    return out


def _answered(answer: Answer) -> AnsweredQuestion:
    return AnsweredQuestion(
        QID,
        Principal("slack", "T1:U1"),
        Place("channel", "C1"),
        answer.question,
        answer.sources,
        answer.text,
        tuple(answer.notes),
        answer.found,
    )


def _home_views() -> Iterator[tuple[str, Payload]]:
    yield "home-preview-admin", home_view(preview_home_data())
    sign_in = "https://github.com/login/oauth/authorize?client_id=abc&state=s1"
    dm = dm_url("T1", "A0CODEASK")
    yield "home-not-linked", home_view(HomeData(None, [], link_url=sign_in, dm_url=dm))
    yield "home-not-linked-no-link", home_view(HomeData(None, [], access_note="Public only <x>"))
    repos = [
        RepoFreshness(f"acme/r{n:03d}", "private", "abc1234", "3 min ago", "2 behind", "main")
        for n in range(120)
    ]
    admin = HomeData(
        "alice",
        repos,
        admin=True,
        index_status=[f"acme/r{n:03d}: ready" for n in range(120)],
        failures=[f"acme/r{n:03d}: clone failed" for n in range(60)],
        dm_url=dm,
    )
    yield "home-admin-many", home_view(admin)


def slack_payloads() -> Iterator[tuple[str, Payload]]:
    """(name, payload) for every Slack message and view."""

    def each(name: str, messages: list[SlackMessage]) -> Iterator[tuple[str, Payload]]:
        for i, m in enumerate(messages):
            yield f"{name}#{i}", {"text": m.text, "blocks": m.blocks}

    question = "why does Result<T, E> fail? see https://evil.example/x " + "word " * 600
    for key, answer in answers().items():
        yield from each(f"answer-{key}", answer_messages(answer, QID, WEB))
        for shareable in (True, False):
            private = private_answer_messages(answer, question, QID, WEB, shareable=shareable)
            yield from each(f"private-{key}-share={shareable}", private)
        yield from each(f"shared-{key}", shared_messages(_answered(answer), "U0SHARER", WEB))
        yield from each(f"sources-{key}", [source_details(answer.sources, WEB)])
    for offer_dm in (True, False):
        yield from each(
            f"withheld-dm={offer_dm}", [withheld_message(REASON_CHANNEL, QID, offer_dm=offer_dm)]
        )
    for verdict in ("helpful", "wrong"):
        yield from each(f"vote-{verdict}", [vote_message(verdict, QID)])
    yield from each("unvoted", [unvoted_message()])
    for admin in (False, True):
        yield from each(
            f"help-admin={admin}", [help_message(help_result(admin=admin).rows, COMMAND)]
        )
    steps = ["Searching `retry`", "Reading `src/app.py` 10–40", "Listing https://evil.example"] * 2
    yield from each("progress-start", [progress_message()])
    yield from each("progress-steps", [progress_message("", steps)])
    yield from each("progress-partial", [progress_message("Code:\n```\nx = 1")])
    yield from each("progress-long", [progress_message(LONG_ANSWER, steps)])
    yield from each("text", [text_message("Repository `acme/x` **added**; see <https://x.io>.")])
    yield from each("text-code", [text_message("a <b> & c\n" * 400, code=True)])
    yield from _home_views()


def teams_cards() -> Iterator[tuple[str, Payload]]:
    """(name, card) for every Teams card, the sources views as cards of their own too."""
    for key, answer in answers().items():
        card = answer_card(answer, QID, web_base=WEB)
        yield f"answer-{key}", card
        yield f"answer-{key}-notices", answer_card(answer, QID, notices=["A notice."], web_base=WEB)
        for vote in ("helpful", "wrong", None):
            voted = voted_answer_card(_answered(answer), vote, WEB)
            yield f"voted-{key}-{vote}", card_invoke_body(voted)["value"]
        yield f"with-vote-{key}", with_vote(card, QID, "helpful")
        if answer.sources:
            view = sources_view(answer.sources, WEB, code=True)
            yield f"sources-{key}", {**view["card"], "version": "1.5"}
    note = Answer("q", "x", [], withheld_private=True, asker_note=REASON_CHANNEL)
    yield "asker-note-dm", asker_note_card("where <is> https://evil.example?", QID, note)
    note.withheld_private = False
    yield "asker-note", asker_note_card("where?", QID, note)
    for admin in (False, True):
        yield f"help-admin={admin}", help_card(help_result(admin=admin).rows)
    yield "welcome", text_card(WELCOME)
    yield "empty", text_card(EMPTY)
    yield "not-here", text_card(NOT_HERE, attention=True)
    yield "not-sent", text_card(NOT_SENT_PRIVATELY)
    yield "command", command_card(CommandResult(["`acme/x` added", "see https://x.io"]))
    yield "command-error", command_card(CommandResult(["no such repo"], error=True))
    yield "command-huge", command_card(CommandResult([f"acme/r{n}: ready" for n in range(5000)]))


SLACK_PAYLOADS = dict(slack_payloads())
TEAMS_CARDS = dict(teams_cards())


@pytest.mark.parametrize("name", sorted(SLACK_PAYLOADS))
def test_every_slack_message_and_view_is_valid_block_kit(name: str) -> None:
    assert _errors(SLACK, SLACK_PAYLOADS[name]) == []


@pytest.mark.parametrize("name", sorted(TEAMS_CARDS))
def test_every_teams_card_is_a_valid_adaptive_card(name: str) -> None:
    assert _errors(CARDS, TEAMS_CARDS[name]) == []


def test_the_payloads_cover_every_type_the_renderers_emit() -> None:
    def types(node: object) -> set[str]:
        if isinstance(node, dict):
            own = {node["type"]} if isinstance(node.get("type"), str) else set()
            return own.union(*(types(v) for v in node.values()))
        if isinstance(node, list):
            return set().union(*(types(v) for v in node))
        return set()

    slack = types(list(SLACK_PAYLOADS.values()))
    assert slack == {
        "section", "context", "actions", "header", "divider", "home",
        "mrkdwn", "plain_text", "button",
    }  # fmt: skip
    teams = types(list(TEAMS_CARDS.values()))
    assert teams >= {
        "AdaptiveCard", "TextBlock", "Container", "FactSet", "Table", "TableRow", "TableCell",
        "ActionSet", "CodeBlock", "Action.Submit", "Action.Execute", "Action.OpenUrl",
        "Action.ShowCard",
    }  # fmt: skip


# --- the schemas bite ------------------------------------------------------------------------


def test_a_section_text_over_3000_characters_is_rejected() -> None:
    message = {
        "text": "x",
        "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": "x" * 3001}}],
    }
    [first, *_] = _errors(SLACK, message)
    assert first.startswith("blocks/0/text/text:") and "is too long" in first
    message["blocks"][0]["text"]["text"] = "x" * 3000
    assert _errors(SLACK, message) == []


def test_slack_limits_and_enums_are_enforced() -> None:
    button = {"type": "button", "text": {"type": "plain_text", "text": "Go"}, "style": "danger"}
    ok = {"text": "x", "blocks": [{"type": "actions", "elements": [button]}]}
    assert _errors(SLACK, ok) == []
    bad_cases = [
        {**ok, "blocks": [{"type": "divider"}] * 51},
        {**ok, "blocks": [{"type": "actions", "elements": [{**button, "style": "secondary"}]}]},
        {**ok, "blocks": [{"type": "actions", "elements": [{**button, "url": "not a url"}]}]},
        {**ok, "blocks": [{"type": "context", "elements": [{"type": "mrkdwn", "text": "a"}] * 11}]},
        {
            **ok,
            "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": "a", "emoji": True}}],
        },
        {**ok, "blocks": [{"type": "header", "text": {"type": "plain_text", "text": "h" * 151}}]},
        {**ok, "blocks": [{"type": "sectoin", "text": {"type": "mrkdwn", "text": "a"}}]},
        {"type": "home", "blocks": [{"type": "divider"}] * 101},
    ]
    for bad in bad_cases:
        assert _errors(SLACK, bad), bad
    assert _errors(SLACK, {"type": "home", "blocks": [{"type": "divider"}] * 100}) == []


def test_a_container_style_danger_and_an_unknown_textblock_property_are_rejected() -> None:
    card = text_card("Hello")
    assert _errors(CARDS, card) == []
    danger = {**card, "body": [{"type": "Container", "style": "danger", "items": card["body"]}]}
    assert any(e.startswith("body/0/style:") and "'danger'" in e for e in _errors(CARDS, danger))
    typo = {**card, "body": [{**card["body"][0], "warp": True}]}
    assert any("'warp' was unexpected" in e for e in _errors(CARDS, typo))
    old = {**card, "version": "1.4"}
    assert _errors(CARDS, old)
    show = {
        "type": "Action.ShowCard",
        "title": "More",
        "card": {"type": "AdaptiveCard", "body": []},
    }
    assert _errors(CARDS, {**card, "actions": [show]}) == []
    no_url = {**card, "actions": [{"type": "Action.OpenUrl", "title": "Go"}]}
    assert _errors(CARDS, no_url)
