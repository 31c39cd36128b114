"""Definitions, references and literals of a piece of code, from tree-sitter tag queries.

Each grammar has a query file in ``queries/<language>.scm`` (the same capture names as
the tags queries of GitHub's code navigation): ``@definition.<kind>`` and
``@reference.<kind>`` around a ``@name``, ``@literal`` for string contents, ``@scope``
around a ``@name`` for a block that qualifies the definitions inside it without being one
(a namespace; ``@scope.methods`` when its functions are methods, a Rust ``impl``), and ``@receiver`` for the type a Go method belongs to. The Python here
is the same for every language; what differs per grammar is in those files.
"""

from __future__ import annotations

import functools
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

QUERIES = Path(__file__).with_name("queries")
MAX_TAGS = 2_000  # per call: a minified or generated file never blows the index up
MAX_LITERALS = 100
MAX_NAME = 200
_MAX_SOURCE = 200_000  # bytes parsed per call (a chunk is far smaller); the rest is not read
# Literals worth indexing: an env-var-like key or constant, a message, a dotted name.
_CONSTANT = re.compile(r"\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b|\b[A-Z][A-Z0-9]{3,}\b")
_CONSTANT_NAME = re.compile(r"\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b")  # in code: with an underscore
_DOTTED = re.compile(r"^[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)+$")
_SELF = re.compile(r"^(self|this|cls|super|\$this)\.")


@dataclass(frozen=True)
class Tag:
    """A name the code defines or references, on a 1-based line."""

    name: str
    kind: str  # function | method | class | type (alias) | constant | field | call | import | attribute
    role: str  # definition | reference
    line: int
    qualified: str  # ``Client.send`` for a method of class Client, else the name


def tags(language: str, source: bytes) -> list[Tag]:
    """The definitions and references in ``source``, in source order (none for a language
    without a query file, or for input the parser cannot take)."""
    found = _captures(language, source)
    if found is None:
        return []
    definitions, references, _, receivers = found
    classes = sorted(
        (node.start_byte, node.end_byte, name, kind != "scope")
        for kind, node, name in definitions
        if kind in ("class", "scope", "scope.methods")
    )
    out: list[Tag] = []
    for kind, node, name in definitions:
        if kind.startswith("scope"):
            continue
        owner = _owners(classes, node) or receivers.get(_span(node), [])
        qualified = ".".join([*owner, name])
        if kind == "function" and _in_class(classes, node):
            kind = "method"  # a function in a class (not in a namespace or module block)
        out.append(Tag(name, kind, "definition", node.start_point[0] + 1, qualified[:MAX_NAME]))
    for kind, node, name in references:
        out.append(Tag(name, kind, "reference", node.start_point[0] + 1, name))
    out.sort(key=lambda t: (t.line, t.role != "definition"))
    return out[:MAX_TAGS]


Owner = tuple[int, int, str, bool]  # (start byte, end byte, name, a class: not a scope)


def _around(classes: list[Owner], node: Any) -> list[Owner]:
    return [
        c
        for c in classes
        if c[0] <= node.start_byte and node.end_byte <= c[1] and (c[0], c[1]) != _span(node)
    ]


def _owners(classes: list[Owner], node: Any) -> list[str]:
    """The names of the class-like definitions and scopes around ``node``, outermost first."""
    return [c[2] for c in _around(classes, node)]


def _in_class(classes: list[Owner], node: Any) -> bool:
    return any(c[3] for c in _around(classes, node))


def _span(node: Any) -> tuple[int, int]:
    return node.start_byte, node.end_byte


def literals(language: str, source: bytes) -> list[str]:
    """Notable literals: string contents (messages, keys), CONSTANT_CASE names and dotted
    names (``os.environ``), each once, in order."""
    found = _captures(language, source)
    if found is None:
        return []
    _, references, strings, _ = found
    seen: dict[str, None] = {}
    for text in strings:
        value = text.strip().strip("\"'`")
        if 3 <= len(value) <= MAX_NAME and not value.isspace():
            seen.setdefault(value, None)
        for constant in _CONSTANT.findall(text):
            seen.setdefault(constant, None)
    head = source[:_MAX_SOURCE].decode("utf-8", "replace")
    for constant in _CONSTANT_NAME.findall(head):
        seen.setdefault(constant, None)
    for kind, _node, name in references:
        if kind == "attribute" and _DOTTED.match(_SELF.sub("", name)):
            seen.setdefault(_SELF.sub("", name), None)
        elif _CONSTANT.fullmatch(name):
            seen.setdefault(name, None)
    return [v for v in seen if v][:MAX_LITERALS]


Capture = tuple[str, Any, str]  # (kind, node, name text)


def _captures(
    language: str, source: bytes
) -> tuple[list[Capture], list[Capture], list[str], dict[tuple[int, int], list[str]]] | None:
    query = _query(language)
    if query is None or not source:
        return None
    try:
        tree = _parser(language).parse(source[:_MAX_SOURCE])
        matches = _cursor(query).matches(tree.root_node)
    except (RecursionError, ValueError, RuntimeError) as exc:
        log.debug("no tags for a %s file: %s", language, exc)
        return None
    definitions: list[Capture] = []
    references: list[Capture] = []
    strings: list[str] = []
    receivers: dict[tuple[int, int], list[str]] = {}  # a Go method's span -> its type
    for _pattern, captured in matches:
        if len(definitions) + len(references) >= MAX_TAGS and len(strings) >= MAX_LITERALS:
            break
        for node in captured.get("literal", ()):
            if len(strings) < 4 * MAX_LITERALS:
                strings.append(_text(node))
        names = captured.get("name", ())
        for node in captured.get("receiver", ()):
            for method in captured.get("definition.method", ()):
                receivers[_span(method)] = [_text(node)]
        if not names:
            continue
        name = _text(names[0])
        if len(name) < 2 or len(name) > MAX_NAME or "\n" in name:
            continue
        for capture, nodes in captured.items():
            role, _, kind = capture.partition(".")
            if role == "scope":  # @scope: a namespace; @scope.methods: a Rust impl
                definitions.append((capture, nodes[0], name))
            elif role == "definition" and kind:
                definitions.append((kind, nodes[0], name))
            elif role == "reference" and kind:
                references.append((kind, nodes[0], name.strip("\"'<>")))
    return definitions, references, strings, receivers


def _text(node: Any) -> str:
    return bytes(node.text or b"").decode("utf-8", "replace")


# Grammars that read another's query file first (TSX is TypeScript with markup).
_BASE_QUERIES = {"tsx": "typescript"}


@functools.cache
def _query(language: str) -> Any:
    names = [_BASE_QUERIES[language]] if language in _BASE_QUERIES else []
    paths = [QUERIES / f"{n}.scm" for n in [*names, language]]
    texts = [p.read_text() for p in paths if p.is_file()]
    if not texts:
        return None
    from tree_sitter import Query
    from tree_sitter_language_pack import get_language

    return Query(get_language(language), "\n".join(texts))  # type: ignore[arg-type]


def _parser(language: str) -> Any:
    # One per call, as the chunker does: a parser must not be shared between threads.
    from tree_sitter_language_pack import get_parser

    return get_parser(language)  # type: ignore[arg-type]


def _cursor(query: Any) -> Any:
    from tree_sitter import QueryCursor

    return QueryCursor(query)
