"""Answers as Slack Block Kit messages (pure functions, no Slack client).

Slack's mrkdwn is not Markdown: bold is ``*x*``, links are ``<url|text>``, and ``&``,
``<`` and ``>`` must be escaped everywhere, or a generated ``<!channel>`` would ping a
whole channel. Section text is limited to 3000 characters and a message to 50 blocks,
so long answers are split across sections and, beyond that, across messages.

Generated text keeps only the links :mod:`bot.chat.links` permits; any other URL is shown
inert, and its text objects are ``verbatim`` so that Slack does not auto-link it either.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from bot.answer import Answer, Source
from bot.chat import APP_TEXT, NO_LINKS, URL, LinkPolicy, answer_links, defang, inert, split_url

Block = dict[str, Any]

MAX_SECTION_CHARS = 3000
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

_FENCE = re.compile(r"```[^\n`]*\n?(.*?)(?:```|\Z)", re.DOTALL)
_INLINE_CODE = re.compile(r"`([^`\n]+)`")
_INLINE = re.compile(
    r"(?P<image>!\[(?P<alt>[^\]\n]*)\]\((?P<iurl>https?://[^)\s]+)\))"
    r"|(?P<link>\[(?P<ltext>[^\]\n]+)\]\((?P<url>https?://[^)\s]+)\))"
    r"|(?P<slack><(?P<surl>https?://[^>\s|]+)\|(?P<sltext>[^>\n]*)>)"
    r"|(?P<auto><(?P<aurl>https?://[^>\s|]+)>)"
    r"|(?P<anchor><a\s[^>\n]*?href\s*=\s*[\"']?(?P<hurl>[^\"'\s>]+)[\"']?[^>\n]*>"
    r"(?P<htext>[^<\n]*)</a\s*>)"
    rf"|(?P<bare>{URL.pattern})"
    r"|(?P<cite>\[(?P<nums>\d+(?:\s*,\s*\d+)*)\])"
    r"|(?P<bold>\*\*(?P<btext>[^\n]+?)\*\*|__(?P<btext2>[^\n]+?)__)"
    r"|(?P<strike>~~(?P<stext>[^\n]+?)~~)"
    r"|(?P<ital>(?<![\w*])\*(?P<itext>[^\s*](?:[^*\n]*[^\s*])?)\*(?![\w*]))"
)
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$")
_BULLET = re.compile(r"^(\s*)[-*+]\s+(.*)$")
_QUOTE = re.compile(r"^\s{0,3}>\s?(.*)$")


def escape(text: str) -> str:
    """Slack's three control characters, as Slack documents them."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _link_text(text: str) -> str:
    # "|" ends a link's URL part and ">" ends the link; neither may appear in its label.
    return escape(text.replace("|", "¦"))


def link(url: str, text: str) -> str:
    """``<url|text>``, or the bare text when ``url`` is not a web URL (a local repo)."""
    if not url.startswith(("http://", "https://")):
        return _link_text(text)
    # Slack's control characters and whitespace never pass inside a link's URL part:
    # "<" there would let generated text open a control sequence such as <!channel>.
    url = url.replace("|", "%7C").replace(">", "%3E").replace("<", "%3C")
    url = re.sub(r"\s", lambda m: quote(m.group()), url)
    return f"<{url}|{_link_text(text)}>"


def markdown_to_mrkdwn(
    text: str, citations: Mapping[int, str] | None = None, links: LinkPolicy = APP_TEXT
) -> str:
    """Markdown (as language models write it) → Slack mrkdwn.

    ``citations`` maps source numbers to URLs: ``[n]`` becomes a link to that source;
    numbers without a URL stay plain text. Code keeps its content, escaped. ``links``
    decides which URLs the text itself writes stay links: the default suits the
    application's own text; generated text passes the policy of its answer, and every
    other URL becomes :func:`inert_url` (images are never shown, at most linked).
    """
    citations = citations or {}
    out: list[str] = []
    pos = 0
    for m in _FENCE.finditer(text):
        out.append(_prose(text[pos : m.start()], citations, links))
        code = defang(m.group(1).rstrip("\n"), links)
        out.append(f"```\n{escape(code)}\n```" if code else "```\n```")
        pos = m.end()
    out.append(_prose(text[pos:], citations, links))
    return "".join(out)


def inert_url(url: str, label: str = "") -> str:
    """A URL that must not be a link: inline code, defanged (see :func:`bot.chat.links.inert`).

    Slack auto-links a bare URL unless the text object is ``verbatim``; the defanged text
    still reads as a URL but leaves Slack no scheme and no host name to link, even where
    ``verbatim`` does not apply (the notification text), and inline code keeps "_" or
    "*" in it from turning into formatting.
    """
    shown = f"`{escape(inert(url))}`"
    return f"{_plain(label, NO_LINKS)} ({shown})" if label.strip() else shown


def _plain(text: str, links: LinkPolicy) -> str:
    return escape(defang(text, links))


def _prose(text: str, citations: Mapping[int, str], links: LinkPolicy) -> str:
    lines = []
    for line in text.split("\n"):
        if m := _HEADING.match(line):
            inner = _with_inline_code(m.group(1).replace("**", ""), citations, links)
            lines.append(f"*{inner}*" if inner else "")
        elif m := _BULLET.match(line):
            lines.append(f"{m.group(1)}• {_with_inline_code(m.group(2), citations, links)}")
        elif m := _QUOTE.match(line):
            # Slack renders a literal ">" at the start of a line as a quote.
            lines.append(f">{_with_inline_code(m.group(1), citations, links)}")
        else:
            lines.append(_with_inline_code(line, citations, links))
    return "\n".join(lines)


def _with_inline_code(text: str, citations: Mapping[int, str], links: LinkPolicy) -> str:
    out, pos = [], 0
    for m in _INLINE_CODE.finditer(text):
        out.append(_inline(text[pos : m.start()], citations, links))
        out.append(f"`{_plain(m.group(1), links)}`")
        pos = m.end()
    out.append(_inline(text[pos:], citations, links))
    return "".join(out)


def _inline(text: str, citations: Mapping[int, str], links: LinkPolicy) -> str:
    out, pos = [], 0
    for m in _INLINE.finditer(text):
        out.append(escape(text[pos : m.start()]))
        pos = m.end()
        if m.group("image"):  # never an image; a permitted URL is at most a link
            out.append(_written_link(m.group("iurl"), m.group("alt"), links))
        elif m.group("link"):
            out.append(_written_link(m.group("url"), m.group("ltext"), links))
        elif m.group("slack"):
            out.append(_written_link(m.group("surl"), m.group("sltext"), links))
        elif m.group("auto"):
            out.append(_written_link(m.group("aurl"), "", links))
        elif m.group("anchor"):
            out.append(_written_link(m.group("hurl"), m.group("htext"), links))
        elif m.group("bare"):
            url = split_url(m)[0]
            pos = m.start() + len(url)  # a closing ")" or a full stop is the sentence's
            out.append(link(url, url) if links.permits(url) else inert_url(url))
        elif m.group("cite"):
            nums = [int(n) for n in re.split(r"\s*,\s*", m.group("nums"))]
            out.append("".join(_citation(n, citations) for n in nums))
        elif m.group("bold"):
            inner = m.group("btext") or m.group("btext2") or ""
            out.append(f"*{_inline(inner, citations, links)}*")
        elif m.group("strike"):
            out.append(f"~{_inline(m.group('stext'), citations, links)}~")
        else:
            out.append(f"_{_inline(m.group('itext'), citations, links)}_")
    out.append(escape(text[pos:]))
    return "".join(out)


def _written_link(url: str, label: str, links: LinkPolicy) -> str:
    """A link the text wrote: live only when permitted, its label never carrying a URL."""
    if not links.permits(url):
        return inert_url(url, label)
    return link(url, defang(label, links) or url)


def _citation(number: int, citations: Mapping[int, str]) -> str:
    url = citations.get(number, "")
    return link(url, f"[{number}]") if url.startswith("http") else f"[{number}]"


def split_mrkdwn(text: str, limit: int = MAX_SECTION_CHARS) -> list[str]:
    """Pieces of at most ``limit`` characters, cut at line ends; a cut code block is
    closed at the end of one piece and reopened at the start of the next."""
    reserve = len("\n```") + len("```\n")
    if limit <= reserve + 1:
        raise ValueError("limit too small")
    pieces: list[str] = []
    current = ""
    in_code = False
    for line in _lines_within(text, limit - reserve):
        # A line that opens a block must leave room for the "```" a later cut closes it with.
        in_code_after = in_code != (line.count("```") % 2 == 1)
        candidate = f"{current}\n{line}" if current else line
        if len(candidate) + (len("\n```") if in_code_after else 0) > limit and current:
            pieces.append(current + ("\n```" if in_code else ""))
            candidate = ("```\n" if in_code else "") + line
        current = candidate
        in_code = in_code_after
    if current.strip():
        pieces.append(current)
    return pieces or [""]


def _lines_within(text: str, width: int) -> list[str]:
    out = []
    for line in text.split("\n"):
        while len(line) > width:
            cut = line.rfind(" ", 0, width)
            cut = cut if cut > width // 2 else width
            # Never cut inside an escape such as "&amp;" or a link "<url|text>".
            amp = line.rfind("&", 0, cut)
            if amp != -1 and ";" not in line[amp:cut] and cut - amp < 6:
                cut = amp
            lt = line.rfind("<", 0, cut)
            if lt > 0 and ">" not in line[lt:cut]:
                cut = lt
            out.append(line[:cut])
            line = line[cut:].lstrip(" ")
        out.append(line)
    return out


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
    """The final answer: text sections, notes, the withheld offer, sources and buttons.

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
    if answer.withheld_private:
        tail.append(
            {
                "type": "actions",
                "block_id": f"codeask_private:{question_id}",
                "elements": [
                    _button(":lock: Answer me in a DM", ACTION_PRIVATE, question_id, "primary")
                ],
            }
        )
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
