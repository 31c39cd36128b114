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
from bot.chat import (
    NO_LINKS,
    LinkPolicy,
    answer_links,
    cited_sources,
    excerpt,
    is_notice,
    lead_text,
    searched_repos,
    source_row,
)
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
MAX_SOURCE_ROWS = 10  # under an answer; the sources view shows them all

ACTION_HELPFUL = "codeask_feedback_helpful"
ACTION_WRONG = "codeask_feedback_wrong"
ACTION_SOURCES = "codeask_show_sources"
ACTION_PRIVATE = "codeask_answer_privately"
ACTION_RETRY = "codeask_retry"
# Buttons that open a URL ("View on GitHub", the App Home's): Slack still sends each
# click, which is only acknowledged.
OPEN_URL_PREFIX = "codeask_open"
ACTION_OPEN_SOURCE = f"{OPEN_URL_PREFIX}_source"

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


def _button(
    text: str, action_id: str, value: str = "", style: str | None = None, *, url: str = ""
) -> Block:
    """A button that sends ``value`` back to the app, or (``url``) opens a link."""
    button: Block = {
        "type": "button",
        "text": {"type": "plain_text", "text": text, "emoji": True},
        "action_id": action_id,
    }
    button |= {"url": url} if url else {"value": value}
    if style:
        button["style"] = style
    return button


def source_line(source: Source, web_base: str) -> str:
    """``[n] path:start-end · symbol · repo`` with the location linked to the pinned lines."""
    where, symbol, repo = source_row(source)
    linked = link(source.link(web_base), where)
    shown_symbol = f" · `{escape(symbol)}`" if symbol else ""
    return f"*[{source.number}]* {linked}{shown_symbol} · {escape(repo)}"


def source_rows(sources: Sequence[Source], web_base: str) -> list[Block]:
    """One source per row, in section text (full size, so every location is easy to tap)."""
    rows = [source_line(s, web_base) for s in sources[:MAX_SOURCE_ROWS]]
    if len(sources) > MAX_SOURCE_ROWS:
        rows.append(f"…and {len(sources) - MAX_SOURCE_ROWS} more under *Show sources*")
    # verbatim: a path is indexed text, and Slack would link a "www.x.com" in it.
    return [_section(piece, verbatim=True) for piece in split_mrkdwn("\n".join(rows))]


def searched_line(answer: Answer) -> str:
    """``Searched: `a/b`, `c/d` and 3 more``: only the repositories of the answer's place."""
    names, more = searched_repos(answer.searched)
    shown = ", ".join(f"`{escape(n)}`" for n in names)
    return f"Searched: {shown}" + (f" and {more} more" if more else "")


@dataclass(frozen=True)
class SlackMessage:
    """One ``chat.postMessage`` / ``chat.update``: notification text plus blocks."""

    text: str
    blocks: list[Block]


def answer_messages(answer: Answer, question_id: str, web_base: str) -> list[SlackMessage]:
    """The final answer: text sections, notes, the cited sources one per row and buttons
    ("Show sources" holds the uncited ones).

    Nothing in it tells a channel that the asker could get more in private: that note goes
    to the asker alone (:func:`bot.slack.private.withheld_message`).

    A notice (nothing found, or a part such as the language model down) starts with a
    warning, lists its places once, names the repositories searched (the answer's, so
    only what the place's audience may read) and has no feedback buttons; one from a
    part being down offers Retry. Usually one message; an answer too long for 50 blocks
    continues in further messages, and the sources and buttons always close the last one.
    """
    notice = is_notice(answer)  # nothing found, or a part down: no rating, the places once
    citations = {s.number: s.link(web_base) for s in answer.sources}
    body = markdown_to_mrkdwn(lead_text(answer), citations, answer_links(answer.sources, web_base))
    if notice:
        body = f":warning: {body}"
    sections = [_section(piece, verbatim=True) for piece in split_mrkdwn(body)]
    tail: list[Block] = []
    if answer.notes:
        notes = [f":warning: {escape(n)}" for n in answer.notes]
        tail.append(_context(notes[:MAX_CONTEXT_ELEMENTS]))
    if answer.sources:
        tail += source_rows(cited_sources(answer), web_base)
    if notice and answer.searched and not answer.unavailable:
        tail.append(_context([searched_line(answer)]))
    elements = [
        _button(":thumbsup: Helpful", ACTION_HELPFUL, question_id),
        _button(":thumbsdown: Wrong", ACTION_WRONG, question_id),
    ]
    if notice:
        elements = [_button(":repeat: Retry", ACTION_RETRY, question_id, "primary")]
        elements = elements if answer.unavailable else []
    if answer.sources:
        elements.append(_button("Show sources", ACTION_SOURCES, question_id))
    answer_id = f"codeask_answer:{question_id}"  # what a follow-up finds the answer by
    if elements:
        tail.append({"type": "actions", "block_id": answer_id, "elements": elements})
    else:
        sections[0]["block_id"] = answer_id

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
    """ "Show sources": each source's row, its cited lines with their numbers and a
    "View on GitHub" button to the commit-pinned lines."""
    blocks: list[Block] = []
    links = answer_links(sources, web_base)
    for s in sources:
        if len(blocks) + 2 > MAX_BLOCKS:
            break
        row = _section(source_line(s, web_base), verbatim=True)
        url = s.link(web_base)
        if url.startswith(("http://", "https://")):
            row["accessory"] = _button(
                "View on GitHub", f"{ACTION_OPEN_SOURCE}:{s.number}", url=url
            )
        blocks += [row, _section(_excerpt_code(s, links), verbatim=True)]
    if not blocks:
        blocks.append(_section("This answer has no sources."))
    return SlackMessage(f"Sources ({len(sources)})", blocks)


def _excerpt_code(source: Source, links: LinkPolicy) -> str:
    shown = excerpt(source, links)
    kept: list[str] = []
    room = MAX_SECTION_CHARS - 80  # the fence and the count of lines not shown
    for line in escape(shown.numbered()).split("\n"):  # whole lines: never half an escape
        room -= len(line) + 1
        if room < 0:
            break
        kept.append(line)
    more = shown.more + len(shown.lines) - len(kept)
    tail = f"\n… {more} more lines in the cited range" if more else ""
    return "```\n" + "\n".join(kept) + tail + "\n```"


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
