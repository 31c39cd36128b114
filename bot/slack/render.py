"""Answers as Slack Block Kit messages (pure functions, no Slack client).

The text itself is converted by :mod:`bot.slack.mrkdwn`. Section text is limited to 3000 characters and a message to 50 blocks,
so long answers are split across sections and, beyond that, across messages.

Generated text keeps only the links :mod:`bot.chat.links` permits; any other URL is shown
inert, and its text objects are ``verbatim`` so that Slack does not auto-link it either.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bot.answer import Answer, Source
from bot.chat import NO_LINKS, answer_links
from bot.slack.mrkdwn import (
    MAX_SECTION_CHARS,
    _lines_within,
    escape,
    inert_url,
    link,
    markdown_to_mrkdwn,
    split_mrkdwn,
)

__all__ = ["MAX_SECTION_CHARS", "escape", "inert_url", "link", "markdown_to_mrkdwn", "split_mrkdwn"]

Block = dict[str, Any]

MAX_BLOCKS = 50
MAX_CONTEXT_ELEMENTS = 10
MAX_FALLBACK_CHARS = 3000
SNIPPET_LINES = 15

ACTION_HELPFUL = "codeask_feedback_helpful"
ACTION_WRONG = "codeask_feedback_wrong"
ACTION_SOURCES = "codeask_show_sources"
ACTION_PRIVATE = "codeask_answer_privately"

SEARCHING_TEXT = "Searching the code…"
WRITING_TEXT = "Writing the answer…"


def _section(text: str, *, verbatim: bool = False) -> Block:
    return {"type": "section", "text": _mrkdwn(text, verbatim)}


def _context(texts: Sequence[str]) -> Block:
    return {
        "type": "context",
        "elements": [_mrkdwn(t[:MAX_SECTION_CHARS], False) for t in texts],
    }


def _mrkdwn(text: str, verbatim: bool) -> Block:
    # verbatim: Slack neither auto-links URLs nor turns names into mentions in the text;
    # links written as <url|text> still work. Set wherever generated text is shown.
    obj: Block = {"type": "mrkdwn", "text": text}
    if verbatim:
        obj["verbatim"] = True
    return obj


def _button(text: str, action_id: str, value: str, style: str | None = None) -> Block:
    button: Block = {
        "type": "button",
        "text": {"type": "plain_text", "text": text, "emoji": True},
        "action_id": action_id,
        "value": value,
    }
    if style:
        button["style"] = style
    return button


def source_line(source: Source, web_base: str) -> str:
    """``[n] repo path:start-end · symbol`` with the location linked to the pinned lines."""
    c = source.chunk
    where = link(source.link(web_base), f"{c.repo} {c.path}:{c.start_line}-{c.end_line}")
    symbol = f" · `{escape(c.symbol)}`" if c.symbol else ""
    return f"*[{source.number}]* {where}{symbol}"


def sources_block(sources: Sequence[Source], web_base: str) -> Block:
    """The compact sources list: one context element per source (Slack allows ten)."""
    lines = [source_line(s, web_base) for s in sources]
    if len(lines) > MAX_CONTEXT_ELEMENTS:
        rest = len(lines) - (MAX_CONTEXT_ELEMENTS - 1)
        lines = [*lines[: MAX_CONTEXT_ELEMENTS - 1], f"…and {rest} more"]
    return _context(lines)


@dataclass(frozen=True)
class SlackMessage:
    """One ``chat.postMessage`` / ``chat.update``: notification text plus blocks."""

    text: str
    blocks: list[Block]


def answer_messages(answer: Answer, question_id: str, web_base: str) -> list[SlackMessage]:
    """The final answer: text sections, notes, sources and buttons.

    Nothing in it tells a channel that the asker could get more in private: that note goes
    to the asker alone (:func:`bot.slack.private.withheld_message`).

    Usually one message; an answer too long for 50 blocks continues in further messages,
    and the sources and buttons always close the last one.
    """
    citations = {s.number: s.link(web_base) for s in answer.sources}
    body = markdown_to_mrkdwn(answer.text, citations, answer_links(answer.sources, web_base))
    sections = [_section(piece, verbatim=True) for piece in split_mrkdwn(body)]
    tail: list[Block] = []
    if answer.notes:
        notes = [f":warning: {escape(n)}" for n in answer.notes]
        tail.append(_context(notes[:MAX_CONTEXT_ELEMENTS]))
    if answer.sources:
        tail.append(sources_block(answer.sources, web_base))
    elements = [
        _button(":thumbsup: Helpful", ACTION_HELPFUL, question_id),
        _button(":thumbsdown: Wrong", ACTION_WRONG, question_id),
    ]
    if answer.sources:
        elements.append(_button("Show sources", ACTION_SOURCES, question_id))
    tail.append(
        {"type": "actions", "block_id": f"codeask_answer:{question_id}", "elements": elements}
    )

    messages: list[list[Block]] = []
    current: list[Block] = []
    for block in sections:
        if len(current) == MAX_BLOCKS:
            messages.append(current)
            current = []
        current.append(block)
    if len(current) + len(tail) > MAX_BLOCKS:
        messages.append(current)
        current = []
    current.extend(tail)
    messages.append(current)
    fallback = _fallback(body)
    return [
        SlackMessage(fallback if i == 0 else f"{fallback} (continued)", blocks)
        for i, blocks in enumerate(messages)
    ]


def _fallback(mrkdwn: str) -> str:
    """Notification text: the start of the answer, never cut inside an escape or a link."""
    if len(mrkdwn) <= MAX_FALLBACK_CHARS:
        return mrkdwn
    return _lines_within(mrkdwn, MAX_FALLBACK_CHARS - 1)[0] + "…"


STEPS_SHOWN = 4  # the latest tool steps an agentic answer's placeholder lists


def progress_message(partial: str = "", steps: Sequence[str] = ()) -> SlackMessage:
    """The placeholder, then each tool step as it happens ("Reading `src/app.py` 10–40"),
    then the answer as it streams (citations not yet linked, and no URL the text writes:
    its sources are not known yet)."""
    done = [f":white_check_mark: {_step(t)}" for t in steps[-STEPS_SHOWN:-1]]
    current = f"{_step(steps[-1])}…" if steps else SEARCHING_TEXT
    if not partial.strip():
        lines = [*done, f":mag: {current}"]
        return SlackMessage(_fallback(current), [_context(["\n".join(lines)])])
    text = partial
    if text.count("```") % 2 == 1:
        text += "\n```"  # close a code block that is still being written
    body = markdown_to_mrkdwn(text, links=NO_LINKS)
    if len(body) > MAX_SECTION_CHARS:
        body = "…" + body[-(MAX_SECTION_CHARS - 1) :]  # the newest part is what matters
    trail = [f":white_check_mark: {_step(t)}" for t in steps[-STEPS_SHOWN:]]
    return SlackMessage(
        _fallback(body),
        [
            *([_context(["\n".join(trail)])] if trail else []),
            _section(body, verbatim=True),
            _context([f":hourglass_flowing_sand: {WRITING_TEXT}"]),
        ],
    )


def _step(text: str) -> str:
    """A step line as inert mrkdwn: the model chose its words, so no link or mention."""
    return markdown_to_mrkdwn(text[:200], links=NO_LINKS)


def source_details(sources: Sequence[Source], web_base: str) -> SlackMessage:
    """ "Show sources": each source's location, link and first lines of code."""
    blocks: list[Block] = []
    for s in sources:
        lines = s.chunk.text.split("\n")
        snippet = escape("\n".join(lines[:SNIPPET_LINES]))
        if len(lines) > SNIPPET_LINES:
            snippet += f"\n… {len(lines) - SNIPPET_LINES} more lines"
        code = f"```\n{snippet[: MAX_SECTION_CHARS - 10]}\n```"
        blocks.append(_section(source_line(s, web_base)))
        blocks.append(_section(code))
        if len(blocks) >= MAX_BLOCKS - 1:
            break
    if not blocks:
        blocks.append(_section("This answer has no sources."))
    return SlackMessage(f"Sources ({len(sources)})", blocks)


def text_message(text: str, *, code: bool = False) -> SlackMessage:
    """A plain reply (command results, errors): Markdown converted, split into sections."""
    body = f"```\n{escape(text)}\n```" if code else markdown_to_mrkdwn(text)
    blocks = [_section(piece) for piece in split_mrkdwn(body)][:MAX_BLOCKS]
    return SlackMessage(_fallback(body), blocks)


def help_message(rows: Sequence[Mapping[str, str]], command: str) -> SlackMessage:
    """``help`` as ``/codeask`` sees it: a list of commands, admin ones only for admins."""
    ask = f"Ask with `{command} ask <question>`, or mention me in a channel."
    blocks = [_section(ask)]
    for title, admin in (("Commands", ""), ("Admin commands", "yes")):
        lines = [
            f"• `{escape(command)} {escape(r['command'])}`  {escape(r['does'])}"
            for r in rows
            if r["admin"] == admin
        ]
        if lines:
            blocks.append(_section(f"*{title}*\n" + "\n".join(lines)))
    return SlackMessage(f"{command} commands", blocks)
