"""Markdown as language models write it, parsed once into plain nodes every renderer shares.

markdown-it-py does the parsing (CommonMark, plus tables and strikethrough). Raw HTML and
``<url>`` autolinks are not parsed: they stay text, so a renderer's text handling
(:data:`WRITTEN`) meets every link form the model may write, in one place, and decides
with the link policy whether it stays live. Text keeps its characters unescaped; each
renderer escapes for its platform.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import pairwise

from markdown_it import MarkdownIt
from markdown_it.token import Token

from bot.chat.links import URL

_PARSER = (
    MarkdownIt("commonmark", {"html": False})
    .enable(["table", "strikethrough"])
    .disable(["autolink", "html_inline", "html_block"])
)

# What text may write as a link, in Markdown, HTML or Slack's form, or bare, and the
# citation markers. The parser has already made real Markdown links into nodes; what
# reaches this is text that only looks like one (HTML, Slack's <url|text>, a bare URL, a
# link the parser declined such as "[x](javascript:…)"). A Markdown link's label may hold
# one level of brackets ("[[1]](…)"), its target one level of parentheses and a title.
WRITTEN = re.compile(
    r"(?P<image>!\[(?P<alt>[^\[\]\n]*)\]\((?P<iurl>[^()\s]*)(?:\s+\"[^\"\n]*\")?\))"
    r"|(?P<link>\[(?P<ltext>(?:[^\[\]\n]|\[[^\[\]\n]*\])*)\]"
    r"\((?P<url>[^()\s]*(?:\([^()\s]*\)[^()\s]*)*)(?:\s+\"[^\"\n]*\")?\))"
    r"|(?P<angle><(?P<aurl>[a-zA-Z][a-zA-Z0-9+.\-]*:[^>\s|]*)(?:\|(?P<atext>[^>\n]*))?>)"
    r"|(?P<anchor>(?i:<a\s[^>\n]*?href\s*=\s*[\"']?(?P<hurl>[^\"'\s>]+)[\"']?[^>\n]*>"
    r"(?P<htext>[^<\n]*)</a\s*>))"
    rf"|(?P<bare>{URL.pattern})"
    r"|(?P<cite>\[(?P<nums>\d+(?:\s*,\s*\d+)*)\])"
)
# (form, its URL group, its label group) for the forms of WRITTEN that carry a URL; an
# image is at most a link, never shown.
WRITTEN_FORMS = (
    ("image", "iurl", "alt"),
    ("link", "url", "ltext"),
    ("angle", "aurl", "atext"),
    ("anchor", "hurl", "htext"),
)


def citation_numbers(match: re.Match[str]) -> list[int]:
    """The numbers of a ``cite`` match of :data:`WRITTEN`: ``[1, 2]`` is 1 and 2."""
    return [int(n) for n in match.group("nums").split(",")]


@dataclass
class Node:
    """One block or inline element.

    ``info`` is the delimiter an inline element was written with ("*", "__").
    Blocks: paragraph, heading (``level``), code (``text``, ``info`` the language), list
    (``ordered``, ``start``; children are items), item, quote, table (children are rows,
    the first the header), row, cell, rule. Inline: text and code (``text``), strong, em,
    strike, link (``url``), image (``url``; children are the alt text), break.
    ``blank_before``: a blank line separated the block from the one before it.
    """

    kind: str
    children: list[Node] = field(default_factory=list)
    text: str = ""
    info: str = ""
    url: str = ""
    level: int = 0
    ordered: bool = False
    start: int = 1
    blank_before: bool = False
    lines: tuple[int, int] = (0, 0)  # a block's source lines, [first, end)


def parse(text: str) -> list[Node]:
    """The blocks of ``text``. The nodes are shared by every caller that parses the same
    text (an answer is rendered for a message and its fallback, or for two platforms):
    renderers read them and never change them."""
    return list(_parsed(text))


@lru_cache(maxsize=32)
def _parsed(text: str) -> tuple[Node, ...]:
    root = Node("root")
    _build(_PARSER.parse(text), root)
    _mark_blank_lines(root.children)
    return tuple(root.children)


def plain(nodes: list[Node]) -> str:
    """The text of inline nodes without their formatting (a link's label, a table cell)."""
    out = []
    for node in nodes:
        if node.kind in ("text", "code"):
            out.append(node.text)
        elif node.kind == "break":
            out.append(" ")
        else:
            out.append(plain(node.children))
    return "".join(out)


_BLOCKS = {
    "paragraph": "paragraph",
    "heading": "heading",
    "bullet_list": "list",
    "ordered_list": "list",
    "list_item": "item",
    "blockquote": "quote",
    "table": "table",
    "tr": "row",
    "th": "cell",
    "td": "cell",
    "strong": "strong",
    "em": "em",
    "s": "strike",
    "link": "link",
}
_TRANSPARENT = {"thead", "tbody"}  # rows sit directly in the table


def _build(tokens: list[Token], parent: Node) -> None:
    stack = [parent]
    for token in tokens:
        top = stack[-1]
        if token.nesting == 1:
            if token.type.removesuffix("_open") in _TRANSPARENT:
                stack.append(top)
                continue
            node = _open(token)
            top.children.append(node)
            stack.append(node)
        elif token.nesting == -1:
            stack.pop()
        elif token.type == "inline":
            _build(token.children or [], top)
        elif token.type in ("fence", "code_block"):
            code = Node("code", text=token.content.rstrip("\n"), info=token.info.strip())
            top.children.append(_placed(code, token))
        elif token.type == "hr":
            top.children.append(_placed(Node("rule"), token))
        elif token.type in ("text", "html_inline", "html_block"):
            _append_text(top, token.content)
        elif token.type == "code_inline":
            top.children.append(Node("code", text=token.content))
        elif token.type in ("softbreak", "hardbreak"):
            top.children.append(Node("break"))
        elif token.type == "image":
            alt = Node("image", url=str(token.attrGet("src") or ""))
            _build(token.children or [], alt)
            top.children.append(alt)


def _open(token: Token) -> Node:
    kind = _BLOCKS.get(token.type.removesuffix("_open"), "text")
    node = _placed(Node(kind, info=token.markup), token)
    if kind == "heading":
        node.level = int(token.tag[1:])
    elif kind == "list":
        node.ordered = token.type == "ordered_list_open"
        node.start = int(str(token.attrGet("start") or 1))
    elif kind == "link":
        node.url = str(token.attrGet("href") or "")
    return node


def _placed(node: Node, token: Token) -> Node:
    if token.map:
        node.lines = (token.map[0], token.map[1])
    return node


def _append_text(parent: Node, text: str) -> None:
    if not text:
        return
    # The parser splits text at every character that might have started markup; joined
    # back, WRITTEN sees "[1, 2]" or "<a href=…>" whole.
    if parent.children and parent.children[-1].kind == "text":
        parent.children[-1].text += text
    else:
        parent.children.append(Node("text", text=text))


def _mark_blank_lines(blocks: list[Node]) -> None:
    for before, node in pairwise(blocks):
        node.blank_before = node.lines[0] > before.lines[1]
    for node in blocks:
        if node.kind in ("list", "item", "quote"):
            _mark_blank_lines(node.children)
