"""Answers and command results as Teams Adaptive Cards (schema 1.5): pure functions over data.

Teams rejects a message over about 28 KB including the activity envelope, so a card is
kept under ``CARD_BUDGET`` bytes of JSON: the answer text is shortened first (with a note
pointing at the sources), then trailing sources are dropped.

The answer's Markdown becomes card elements (:mod:`bot.teams.elements`: TextBlocks, bold
headings, CodeBlock, Table). TextBlock Markdown turns ``[text](url)`` and bare URLs into
links, so generated text keeps only the links :mod:`bot.chat.links` permits and shows
every other URL inert. No image or hero element is built from an answer.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bot.answer import GITHUB_WEB, Answer, Source
from bot.chat import (
    APP_TEXT,
    NO_LINKS,
    CommandResult,
    LinkPolicy,
    answer_links,
    cited_sources,
    defang,
    inert,
    is_notice,
    lead_text,
    split_url,
)
from bot.chat.markdown import WRITTEN, WRITTEN_FORMS, citation_numbers
from bot.teams.elements import CardMarkdown, Element, escape, text_block
from bot.teams.sources import safe_url, searched_text, source_fact, source_url, sources_view

CARD_CONTENT_TYPE = "application/vnd.microsoft.card.adaptive"
CARD_SCHEMA = "http://adaptivecards.io/schemas/adaptive-card.json"
CARD_VERSION = "1.5"
# Room for the activity envelope (ids, conversation, entities) under Teams' ~28 KB cap.
CARD_BUDGET = 24_000
TRUNCATED_NOTE = "… (answer shortened to fit Teams; more in the sources below)"
TRUNCATED_LIST = "… (list shortened to fit Teams)"
FEEDBACK_ACTION = "feedback"
RETRY_ACTION = "retry"
UNDO = "undo"  # the verdict of the button that takes a vote back (bot.teams.votes)
# Button titles per verdict of bot.chat.feedback.VERDICTS.
VERDICT_TITLES = {"helpful": "Helpful", "wrong": "Wrong or unhelpful"}

Card = dict[str, Any]


@dataclass(frozen=True)
class Feedback:
    """What a feedback button sends back: ``question_id`` ties it to the audited question."""

    question_id: str
    verdict: str  # one of bot.chat.feedback.VERDICTS, or UNDO


def linked_text(text: str, sources: list[Source], web_base: str = GITHUB_WEB) -> str:
    """``[n]`` markers become Markdown links to the commit-pinned lines of source ``n``.

    Markers with no such source stay as written. A link the text writes itself stays a
    link only to a URL the answer's sources permit (:func:`bot.chat.links.answer_links`);
    any other URL, and every image, is shown as inert text.
    """
    return _written_links(
        text, {s.number: s for s in sources}, answer_links(sources, web_base), web_base
    )


def _written_links(
    text: str,
    by_number: dict[int, Source],
    links: LinkPolicy,
    web_base: str,
    *,
    escape_rest: bool = False,
) -> str:
    """``text`` with its citations and the links it writes decided; with ``escape_rest``
    (a text run of parsed Markdown) what lies between them is escaped too."""
    out, pos = [], 0
    for match in WRITTEN.finditer(text):
        between = text[pos : match.start()]
        out.append(escape(between) if escape_rest else between)
        pos = match.end()
        if match.group("cite"):
            out.append("".join(_citation(n, by_number, web_base) for n in citation_numbers(match)))
        elif match.group("bare"):
            url = split_url(match)[0]
            pos = match.start() + len(url)
            out.append(_written_link(url, "", by_number, links, web_base))
        else:
            _, url_group, label_group = next(f for f in WRITTEN_FORMS if match.group(f[0]))
            label = match.group(label_group) or ""
            out.append(_written_link(match.group(url_group), label, by_number, links, web_base))
    rest = text[pos:]
    out.append(escape(rest) if escape_rest else rest)
    # A "!" the text put before a link made here would turn that link into an image.
    return re.sub(r"!(?=\[)", r"\\!", "".join(out))


def _citation(number: int, by_number: dict[int, Source], web_base: str) -> str:
    source = by_number.get(number)
    return f"[{number}]" if source is None else f"[[{number}]]({source_url(source, web_base)})"


def _written_link(
    url: str, label: str, by_number: dict[int, Source], links: LinkPolicy, web_base: str
) -> str:
    if links.permits(url) and url.startswith(("http://", "https://")):
        return f"[{escape(defang(label, links)) or escape(url)}]({safe_url(url)})"
    shown = escape(inert(url))
    if not label.strip():
        return shown
    return f"{_written_links(label, by_number, links, web_base)} ({shown})"


def _card_markdown(
    by_number: dict[int, Source], links: LinkPolicy, web_base: str, *, code_bold: bool = False
) -> CardMarkdown:
    return CardMarkdown(
        lambda text: _written_links(text, by_number, links, web_base, escape_rest=True),
        lambda url, label: _written_link(url, label, by_number, links, web_base),
        links,
        code_bold=code_bold,
    )


_APP_TEXT = _card_markdown({}, APP_TEXT, GITHUB_WEB, code_bold=True)


def answer_card(
    answer: Answer,
    question_id: str,
    *,
    notices: list[str] | None = None,
    web_base: str = GITHUB_WEB,
    budget: int = CARD_BUDGET,
) -> Card:
    """The answer with linked citations, its cited sources one per row, any notices, the
    feedback buttons and "Show sources" (every source: its cited lines, numbered, and a
    "View on GitHub" button).

    A notice (nothing found, or a part such as the language model down) sits in a warning
    container, lists its places once, names the repositories searched (the answer's, so
    only what the place's audience may read) and has no feedback buttons; one from a part
    being down offers Retry. Over ``budget``, the sources view drops its code first, then
    the text is shortened, then trailing sources are dropped.
    """
    shape = _Shape(
        question_id,
        [*(notices or []), *answer.notes],
        frozenset(s.number for s in cited_sources(answer)),
        is_notice(answer),
        answer.unavailable,
        tuple(answer.searched),
        web_base,
    )
    sources = list(answer.sources)
    text = lead_text(answer)
    for code in (True, False):
        card = _answer_card(shape, text, sources, truncated=False, code=code)
        if _size(card) <= budget:
            return card
    # Shorten the answer at a line or word boundary: binary search on the kept length.
    low, high = 0, len(text)
    while low < high:
        mid = (low + high + 1) // 2
        trial = _answer_card(shape, _cut(text, mid), sources, truncated=True, code=False)
        if _size(trial) <= budget:
            low = mid
        else:
            high = mid - 1
    if low > 0:
        return _answer_card(shape, _cut(text, low), sources, truncated=True, code=False)
    while sources:  # the sources alone overflow (absurdly long paths): keep the first ones
        sources.pop()
        card = _answer_card(shape, "", sources, truncated=True, code=False)
        if _size(card) <= budget:
            return card
    bare = dataclasses.replace(shape, notices=[])
    return _answer_card(bare, "", [], truncated=True, code=False)


STEPS_SHOWN = 4  # the latest tool steps an agentic answer's progress lists


def progress_text(partial: str, steps: Sequence[str] = ()) -> str:
    """The text of a 1:1 answer while it is still being written: the latest tool steps
    ("Reading `src/app.py` 10–40"), then the text so far (no URL it writes is a link yet:
    its sources are not known until it is done)."""
    trail = [f"✓ {_written_links(t[:200], {}, NO_LINKS, GITHUB_WEB)}" for t in steps[-STEPS_SHOWN:]]
    if not partial.strip():
        current = trail.pop()[2:] if trail else "Searching the indexed code"
        return "\n\n".join([*trail, f"{current} …"])
    body = _written_links(partial.rstrip(), {}, NO_LINKS, GITHUB_WEB) + " …"
    return "\n\n".join([*trail, body])


def command_card(result: CommandResult, budget: int = CARD_BUDGET) -> Card:
    """A command's output, one block per line (``lines`` already carry every row)."""
    color = "Attention" if result.error else None

    def build(lines: list[str], shortened: bool) -> Card:
        body = [_text(_APP_TEXT.inline_markdown(line), color=color) for line in lines]
        return _card([*body, _text(TRUNCATED_LIST)] if shortened else body)

    card = build(result.lines, False)
    if _size(card) <= budget:
        return card
    low, high = 0, len(result.lines)  # binary search on how many lines fit
    while low < high:
        mid = (low + high + 1) // 2
        if _size(build(result.lines[:mid], True)) <= budget:
            low = mid
        else:
            high = mid - 1
    return build(result.lines[:low], True)


def help_card(rows: Sequence[dict[str, str]]) -> Card:
    """``help`` as Teams users send it (plain messages): commands, admin ones for admins."""
    body = [_text("Ask me in a message here, or mention me in a channel.")]
    for title, admin in (("Commands", ""), ("Admin commands", "yes")):
        facts = [{"title": r["command"], "value": r["does"]} for r in rows if r["admin"] == admin]
        if facts:
            body.append(_text(title, weight="Bolder", spacing="Medium"))
            body.append({"type": "FactSet", "facts": facts})
    return _card(body)


def text_card(text: str, *, attention: bool = False) -> Card:
    """A short message (errors, notices) as a card, so every bot reply looks alike."""
    color = "Attention" if attention else None
    return _card([_text(_APP_TEXT.inline_markdown(text), color=color)])


def _action_data(value: object, name: str) -> dict[str, Any] | None:
    """The data of an ``Action.Submit`` / ``Action.Execute`` payload for action ``name``."""
    if not isinstance(value, dict):
        return None
    data: object = value
    action = value.get("action")
    if isinstance(action, dict):  # an adaptiveCard/action invoke: {"action": {"data": …}}
        data = action.get("data")
    if not isinstance(data, dict) or data.get("action") != name:
        return None
    return data


def parse_retry(value: object) -> str | None:
    """The question id a Retry button sends back, or None."""
    data = _action_data(value, RETRY_ACTION)
    question_id = data.get("question_id") if data else None
    return question_id if isinstance(question_id, str) and question_id else None


def parse_feedback(value: object) -> Feedback | None:
    """The feedback in an ``Action.Submit`` / ``Action.Execute`` payload, or None."""
    data = _action_data(value, FEEDBACK_ACTION)
    if data is None:
        return None
    question_id, verdict = data.get("question_id"), data.get("verdict")
    if (
        not isinstance(question_id, str)
        or not question_id
        or verdict not in (*VERDICT_TITLES, UNDO)
    ):
        return None
    return Feedback(question_id, verdict)


def feedback_action(title: str, question_id: str, verdict: str) -> dict[str, Any]:
    """A vote button: ``Action.Execute``, so Teams sends an ``adaptiveCard/action`` invoke
    and shows the card the bot answers with to the clicker alone."""
    return {
        "type": "Action.Execute",
        "title": title,
        "verb": FEEDBACK_ACTION,
        "data": {"action": FEEDBACK_ACTION, "question_id": question_id, "verdict": verdict},
    }


def attachment(card: Card) -> dict[str, Any]:
    """The card as a Bot Framework attachment."""
    return {"contentType": CARD_CONTENT_TYPE, "content": card}


# --- building blocks ---------------------------------------------------------------


@dataclass(frozen=True)
class _Shape:
    """What stays the same while a card is fitted to its budget."""

    question_id: str
    notices: list[str]
    cited: frozenset[int]  # numbers of the sources shown as rows
    notice: bool
    unavailable: bool
    searched: tuple[str, ...]
    web_base: str


def _answer_card(
    shape: _Shape, text: str, sources: list[Source], *, truncated: bool, code: bool
) -> Card:
    web_base = shape.web_base
    body: list[dict[str, Any]] = []
    if text:
        by_number = {s.number: s for s in sources}
        links = answer_links(sources, web_base)
        elements = _card_markdown(by_number, links, web_base).elements(text)
        if shape.notice:  # a warning, not an answer
            elements = [{"type": "Container", "style": "warning", "items": elements}]
        body += elements
    if truncated:
        body.append(_text(TRUNCATED_NOTE, subtle=True))
    for notice in shape.notices:
        body.append(_text(notice, subtle=True))
    rows = [s for s in sources if s.number in shape.cited]
    if rows:
        if not shape.notice:  # a notice's text introduces its places itself
            body.append(_text("Sources", weight="Bolder", spacing="Medium"))
        facts = [{"title": f"[{s.number}]", "value": source_fact(s, web_base)} for s in rows]
        body.append({"type": "FactSet", "facts": facts})
    if shape.notice and shape.searched and not shape.unavailable:
        body.append(_text(searched_text(shape.searched), subtle=True))
    actions: list[dict[str, Any]] = []
    if shape.unavailable:
        actions.append(
            {
                "type": "Action.Submit",
                "title": "Retry",
                "style": "positive",
                "data": {"action": RETRY_ACTION, "question_id": shape.question_id},
            }
        )
    elif not shape.notice:
        actions += [
            feedback_action(title, shape.question_id, verdict)
            for verdict, title in VERDICT_TITLES.items()
        ]
    if sources:
        actions.append(sources_view(sources, web_base, code=code))
    return _card(body, actions)


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    head = text[:limit]
    for sep in ("\n", " "):
        at = head.rfind(sep)
        if at > limit // 2:
            return head[:at].rstrip()
    return head


_text = text_block


def _card(body: list[Element], actions: list[dict[str, Any]] | None = None) -> Card:
    card: Card = {
        "type": "AdaptiveCard",
        "$schema": CARD_SCHEMA,
        "version": CARD_VERSION,
        "body": body,
        "msteams": {"width": "Full"},
    }
    if actions:
        card["actions"] = actions
    return card


def _size(card: Card) -> int:
    return len(json.dumps(card, ensure_ascii=False).encode())
