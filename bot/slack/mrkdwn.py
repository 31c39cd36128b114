"""Markdown (as language models write it) → Slack mrkdwn, from its parsed form.

Slack's mrkdwn is not Markdown: bold is ``*x*``, links are ``<url|text>``, and ``&``,
``<`` and ``>`` must be escaped everywhere, or a generated ``<!channel>`` would ping a
whole channel. mrkdwn has no headings or tables: a heading is bold, a table is
preformatted text with aligned columns.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from urllib.parse import quote

from bot.chat import APP_TEXT, NO_LINKS, LinkPolicy, defang, inert, split_url
from bot.chat.markdown import WRITTEN, WRITTEN_FORMS, Node, citation_numbers, parse, plain

MAX_SECTION_CHARS = 3000
BULLETS = ("•", "◦", "▪")
INDENT = "    "
RULE = "───────"


def markdown_to_mrkdwn(
    text: str, citations: Mapping[int, str] | None = None, links: LinkPolicy = APP_TEXT
) -> str:
    """Markdown → Slack mrkdwn.

    ``citations`` maps source numbers to URLs: ``[n]`` becomes a link to that source;
    numbers without a URL stay plain text. Code keeps its content, escaped. ``links``
    decides which URLs the text itself writes stay links: the default suits the
    application's own text; generated text passes the policy of its answer, and every
    other URL becomes :func:`inert_url` (images are never shown, at most linked).
    """
    out = _Mrkdwn(citations or {}, links).blocks(parse(text), 0)
    # Whatever formatting split a URL across nodes, none the policy forbids is left whole.
    return defang(out, links)


class _Mrkdwn:
    def __init__(self, citations: Mapping[int, str], links: LinkPolicy) -> None:
        self.citations = citations
        self.links = links

    def blocks(self, nodes: list[Node], depth: int) -> str:
        out = ""
        for i, node in enumerate(nodes):
            if i:
                out += "\n\n" if node.blank_before else "\n"
            out += self.block(node, depth)
        return out

    def block(self, node: Node, depth: int) -> str:
        if node.kind == "paragraph":
            return self.inline(node.children)
        if node.kind == "heading":
            inner = self.inline(node.children, bold=True)
            return f"*{inner}*" if inner.strip() else ""
        if node.kind == "code":
            return _code_block(escape(defang(node.text, self.links)))
        if node.kind == "list":
            return self.bullets(node, depth)
        if node.kind == "quote":
            # Slack renders a literal ">" at the start of a line as a quote, one level only.
            lines = self.blocks(node.children, depth).split("\n")
            return "\n".join(line if line.startswith(">") else f">{line}" for line in lines)
        if node.kind == "table":
            return _code_block(self.table(node))
        if node.kind == "rule":
            return RULE
        return self.inline(node.children)

    def bullets(self, node: Node, depth: int) -> str:
        lines = []
        for i, item in enumerate(node.children):
            marker = f"{node.start + i}." if node.ordered else BULLETS[min(depth, 2)]
            lead = f"{INDENT * depth}{marker} "
            body = self.blocks(item.children, depth + 1)
            if body.startswith((">", "```")):  # these only work at the start of a line
                body = "\n" + body
            lines.append(lead + body)
        return "\n".join(lines)

    def table(self, node: Node) -> str:
        rows = [
            [defang(plain(c.children), self.links) for c in row.children] for row in node.children
        ]
        width = max(len(r) for r in rows)
        rows = [r + [""] * (width - len(r)) for r in rows]
        widths = [max(len(r[i]) for r in rows) for i in range(width)]
        lines = [
            " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows
        ]
        lines.insert(1, "-+-".join("-" * w for w in widths))
        return escape("\n".join(lines))

    def inline(self, nodes: list[Node], *, bold: bool = False) -> str:
        out = []
        for i, node in enumerate(nodes):
            if node.kind == "text":
                out.append(self.text(node.text))
            elif node.kind == "code":
                out.append(f"`{_plain(node.text, self.links)}`" if node.text.strip() else node.text)
            elif node.kind == "break":
                out.append("\n")
            elif node.kind in ("link", "image"):
                out.append(_written_link(node.url, plain(node.children), self.links))
            else:
                out.append(self.styled(nodes, i, bold))
        return "".join(out)

    def styled(self, nodes: list[Node], i: int, bold: bool) -> str:
        node = nodes[i]
        strong = node.kind == "strong"
        inner = self.inline(node.children, bold=bold or strong)
        if (strong and bold) or not inner.strip():
            return inner  # a heading is bold already; Slack has no bold inside bold
        mark = {"strong": "*", "em": "_", "strike": "~"}[node.kind]
        before = plain(nodes[:i])[-1:]
        after = plain(nodes[i + 1 :])[:1]
        if before.isalnum() or after.isalnum():
            if node.kind == "em":  # "2*3*4" or snake_case: what was written, not italics
                return f"{node.info}{inner}{node.info}"
            # Slack formats only at word boundaries; a zero-width space makes one.
            return f"\u200b{mark}{inner}{mark}\u200b"
        return f"{mark}{inner}{mark}"

    def text(self, text: str) -> str:
        out, pos = [], 0
        for m in WRITTEN.finditer(text):
            out.append(escape(text[pos : m.start()]))
            pos = m.end()
            if m.group("cite"):
                out.append("".join(_citation(n, self.citations) for n in citation_numbers(m)))
            elif m.group("bare"):
                url = split_url(m)[0]
                pos = m.start() + len(url)  # a closing ")" or a full stop is the sentence's
                out.append(link(url, url) if self.links.permits(url) else inert_url(url))
            else:
                _, url_group, label_group = next(f for f in WRITTEN_FORMS if m.group(f[0]))
                out.append(
                    _written_link(m.group(url_group), m.group(label_group) or "", self.links)
                )
        out.append(escape(text[pos:]))
        return "".join(out)


def _code_block(code: str) -> str:
    return f"```\n{code}\n```" if code else "```\n```"


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


def _written_link(url: str, label: str, links: LinkPolicy) -> str:
    """A link the text wrote: live only when permitted, its label never carrying a URL."""
    if not links.permits(url) or not url.startswith(("http://", "https://")):
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
