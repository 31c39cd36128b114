"""Markdown (as language models write it) → Adaptive Card 1.5 elements, from its parsed form.

A TextBlock renders only bold, italics, links and lists: a heading becomes a bold
TextBlock, fenced code a Teams ``CodeBlock``, a table a ``Table``, a quote an emphasis
``Container``. Inline code loses its backticks (a TextBlock would show them). Text goes
through ``text`` (the caller's handling of the links and citations it writes).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from bot.chat import LinkPolicy, defang
from bot.chat.markdown import Node, parse, plain

Element = dict[str, Any]

# Teams' CodeBlock languages, by the names fences use for them.
_LANGUAGES = {
    "bash": "Bash",
    "sh": "Bash",
    "shell": "Bash",
    "zsh": "Bash",
    "console": "Bash",
    "c": "C",
    "cpp": "C++",
    "c++": "C++",
    "cc": "C++",
    "h": "C",
    "hpp": "C++",
    "cs": "C#",
    "csharp": "C#",
    "c#": "C#",
    "css": "CSS",
    "bat": "DOS",
    "cmd": "DOS",
    "go": "Go",
    "golang": "Go",
    "graphql": "GraphQL",
    "html": "HTML",
    "java": "Java",
    "js": "JavaScript",
    "javascript": "JavaScript",
    "jsx": "JavaScript",
    "json": "JSON",
    "objc": "ObjectiveC",
    "objectivec": "ObjectiveC",
    "perl": "Perl",
    "php": "PHP",
    "powershell": "PowerShell",
    "ps1": "PowerShell",
    "py": "Python",
    "python": "Python",
    "sql": "SQL",
    "ts": "TypeScript",
    "typescript": "TypeScript",
    "tsx": "TypeScript",
    "vb": "VbNet",
    "vbnet": "VbNet",
    "verilog": "Verilog",
    "vhdl": "VHDL",
    "xml": "XML",
}
_HEADING_SIZES = {1: "Large", 2: "Medium"}


def code_language(name: str) -> str:
    """Teams' CodeBlock language for a fence's or a chunk's language name."""
    return _LANGUAGES.get(name.lower(), "PlainText")


def escape(text: str) -> str:
    """``text`` with the characters TextBlock Markdown gives a meaning to escaped."""
    return re.sub(r"([\\\[\]*_`~])", r"\\\1", text)


class CardMarkdown:
    """Renders parsed Markdown as card elements; ``text`` turns a text run into TextBlock
    Markdown (escaped, its links and citations decided), ``link`` a written link."""

    def __init__(
        self,
        text: Callable[[str], str],
        link: Callable[[str, str], str],
        links: LinkPolicy,
        *,
        code_bold: bool = False,
    ) -> None:
        self.text, self.link, self.links, self.code_bold = text, link, links, code_bold

    def elements(self, markdown: str) -> list[Element]:
        return self.blocks(parse(markdown))

    def inline_markdown(self, markdown: str) -> str:
        """One line as TextBlock Markdown (a command's output line, a notice)."""
        blocks = parse(markdown)
        if len(blocks) == 1 and blocks[0].kind == "paragraph":
            return self.inline(blocks[0].children)
        return self.text(markdown)

    def blocks(self, nodes: list[Node]) -> list[Element]:
        out: list[Element] = []
        separate = False
        for node in nodes:
            if node.kind == "rule":
                separate = True
                continue
            made = self.block(node)
            if made and separate:
                made[0]["separator"] = True
                separate = False
            out += made
        return out

    def block(self, node: Node) -> list[Element]:
        if node.kind == "heading":
            size = _HEADING_SIZES.get(node.level)
            block = text_block(self.inline(node.children, bold=True), weight="Bolder")
            if size:
                block["size"] = size
            return [block]
        if node.kind == "code":
            language = code_language(node.info.split(" ")[0])
            snippet = defang(node.text, self.links)
            return [{"type": "CodeBlock", "codeSnippet": snippet, "language": language}]
        if node.kind == "list":
            return self.bullets(node, 0)
        if node.kind == "quote":
            return [{"type": "Container", "style": "emphasis", "items": self.blocks(node.children)}]
        if node.kind == "table":
            return [self.table(node)]
        if node.kind == "paragraph":
            return [text_block(self.lines(node.children))]
        return [text_block(self.inline(node.children))]

    def lines(self, nodes: list[Node]) -> str:
        """A paragraph's text, each line break a blank line: a TextBlock, like Markdown,
        joins lines that a single newline separates."""
        lines: list[list[Node]] = [[]]
        for node in nodes:
            if node.kind == "break":
                lines.append([])
            else:
                lines[-1].append(node)
        return "\n\n".join(self.inline(line) for line in lines)

    def bullets(self, node: Node, depth: int) -> list[Element]:
        out: list[Element] = []
        lines: list[str] = []

        def flush() -> None:
            if lines:
                out.append(text_block("\n".join(lines)))
                lines.clear()

        for i, item in enumerate(node.children):
            marker = f"{node.start + i}." if node.ordered else "-"
            first = True
            for child in item.children:
                if child.kind == "paragraph":
                    text = self.inline(child.children)
                    lines.append(f"{'    ' * depth}{marker} {text}" if first else text)
                elif child.kind == "list":
                    nested = self.bullets(child, depth + 1)
                    if len(nested) == 1 and nested[0]["type"] == "TextBlock":
                        lines.append(nested[0]["text"])
                    else:
                        flush()
                        out += nested
                else:
                    if first:
                        lines.append(f"{'    ' * depth}{marker}")
                    flush()
                    out += self.block(child)
                first = False
        flush()
        return out

    def table(self, node: Node) -> Element:
        width = max(len(row.children) for row in node.children)
        rows = []
        for r, row in enumerate(node.children):
            cells = [self.inline(c.children) for c in row.children]
            cells += [""] * (width - len(cells))
            rows.append(
                {
                    "type": "TableRow",
                    "cells": [
                        {
                            "type": "TableCell",
                            "items": [text_block(c, weight="Bolder" if r == 0 else None)],
                        }
                        for c in cells
                    ],
                }
            )
        return {
            "type": "Table",
            "columns": [{"width": 1} for _ in range(width)],
            "rows": rows,
            "firstRowAsHeader": True,
        }

    def inline(self, nodes: list[Node], *, bold: bool = False) -> str:
        out = []
        for i, node in enumerate(nodes):
            if node.kind == "text":
                out.append(self.text(node.text))
            elif node.kind == "code":
                code = escape(defang(node.text, self.links))
                out.append(f"**{code}**" if self.code_bold and not bold and code.strip() else code)
            elif node.kind == "break":
                out.append("\n")
            elif node.kind in ("link", "image"):
                out.append(self.link(node.url, plain(node.children)))
            else:
                out.append(self.styled(nodes, i, bold))
        return "".join(out)

    def styled(self, nodes: list[Node], i: int, bold: bool) -> str:
        node = nodes[i]
        strong = node.kind == "strong"
        inner = self.inline(node.children, bold=bold or strong)
        if node.kind == "strike" or (strong and bold) or not inner.strip():
            return inner  # TextBlock has no strikethrough, and no bold inside bold
        before, after = plain(nodes[:i])[-1:], plain(nodes[i + 1 :])[:1]
        if node.kind == "em" and (before.isalnum() or after.isalnum()):
            return f"{escape(node.info)}{inner}{escape(node.info)}"  # "2*3*4", snake_case
        return f"**{inner}**" if strong else f"_{inner}_"


def text_block(
    text: str,
    *,
    subtle: bool = False,
    weight: str | None = None,
    color: str | None = None,
    spacing: str | None = None,
) -> Element:
    block: Element = {"type": "TextBlock", "text": text, "wrap": True}
    if subtle:
        block["isSubtle"] = True
    for key, value in (("weight", weight), ("color", color), ("spacing", spacing)):
        if value:
            block[key] = value
    return block
