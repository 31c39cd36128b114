"""Pairs from the indexed snapshot: doc comments and prose that name a definition.

* docstring / leading doc comment → the same definition with that text removed (so the
  model must match the description to the code, not copy words across);
* a Markdown/RST paragraph mentioning an identifier in code markup → that identifier's
  definition, when exactly one definition carries the name.
"""

from __future__ import annotations

import dataclasses
import keyword
import re
from collections.abc import Sequence

from bot.answer import pair_text
from bot.training.history import target_of
from bot.training.pairs import TrainingPair
from indexer.models import Chunk

MIN_WORDS = 4
MAX_QUERY_CHARS = 500
MIN_BODY_LINES = 2
MAX_NAMES_PER_PARAGRAPH = 3

_PY_DEF = re.compile(r"^\s*(async\s+def|def|class)\b")
_PY_DOC_OPEN = re.compile(r"^\s*[rRuUbB]?(\"\"\"|''')")
_BLOCK_OPEN = re.compile(r"^\s*/\*\*?")
_LINE_COMMENT = re.compile(r"^\s*(//+|#+)\s?")
_MENTION = re.compile(r"(?::[\w:]+:)?`{1,2}~?([A-Za-z_$][\w$.]*)(?:\(\))?`{1,2}")
_INLINE_TAG = re.compile(r"\{@\w+\s+([^}]*)\}")
_HTML = re.compile(r"</?\w+[^>]*>")
_HEADING_LINE = re.compile(r"^\s*(#{1,6}\s|[=\-~^\"'`#*+]{3,}\s*$)")
_FIELD = re.compile(r"^\s*(@\w+|:(param|type|return|returns|rtype|raises)\b)")
_COMMON = frozenset(
    {
        "self",
        "this",
        "true",
        "false",
        "null",
        "none",
        "undefined",
        "str",
        "int",
        "bool",
        "list",
        "dict",
        "object",
        "string",
    }
)


def _python_docstring(lines: list[str]) -> tuple[int, int, str] | None:
    start = next((i for i, ln in enumerate(lines) if _PY_DEF.match(ln)), None)
    if start is None:
        return None
    colon = next(
        (
            i
            for i in range(start, min(len(lines), start + 15))
            if lines[i].split("#")[0].rstrip().endswith(":")
        ),
        None,
    )
    if colon is None:
        return None
    j = colon + 1
    while j < len(lines) and not lines[j].strip():
        j += 1
    if j >= len(lines):
        return None
    m = _PY_DOC_OPEN.match(lines[j])
    if not m:
        return None
    quote = m.group(1)
    rest = lines[j][m.end() :]
    if quote in rest:
        return j, j, rest.split(quote)[0]
    body = [rest]
    for k in range(j + 1, len(lines)):
        if quote in lines[k]:
            body.append(lines[k].split(quote)[0])
            return j, k, "\n".join(body)
        body.append(lines[k])
    return None


def _leading_comment(lines: list[str]) -> tuple[int, int, str] | None:
    if not lines:
        return None
    if _BLOCK_OPEN.match(lines[0]):
        for k, ln in enumerate(lines):
            if "*/" in ln:
                text = "\n".join(lines[: k + 1])
                text = re.sub(r"/\*\*?|\*/", "", text)
                text = "\n".join(re.sub(r"^\s*\*\s?", "", t) for t in text.splitlines())
                return 0, k, text
        return None
    k = 0
    while (
        k < len(lines) and _LINE_COMMENT.match(lines[k]) and not lines[k].lstrip().startswith("#!")
    ):
        k += 1
    if k == 0:
        return None
    return 0, k - 1, "\n".join(_LINE_COMMENT.sub("", ln, count=1) for ln in lines[:k])


def description(raw: str) -> str:
    """The summary a doc comment gives: its first paragraphs, without tags or markup."""
    text = _HTML.sub(" ", _INLINE_TAG.sub(r"\1", raw))
    paragraphs, current = [], []
    for line in text.splitlines():
        if _FIELD.match(line):
            break  # parameter/return fields describe types, not behaviour
        if line.strip():
            current.append(line.strip())
        elif current:
            paragraphs.append(" ".join(current))
            current = []
    if current:
        paragraphs.append(" ".join(current))
    return " ".join(paragraphs[:2])[:MAX_QUERY_CHARS].strip()


def without_lines(chunk: Chunk, first: int, last: int) -> Chunk:
    """``chunk`` with its 0-based text lines ``first..last`` removed (what the model reads)."""
    lines = chunk.text.split("\n")
    return dataclasses.replace(chunk, text="\n".join(lines[:first] + lines[last + 1 :]))


def _doc_comment(chunk: Chunk) -> tuple[int, int, str] | None:
    lines = chunk.text.split("\n")
    found = _python_docstring(lines) if chunk.language == "python" else None
    return found or _leading_comment(lines)


def without_doc_comment(chunk: Chunk) -> Chunk:
    """``chunk`` without its docstring or leading doc comment (unchanged when it has none).

    Hard negatives of a docstring pair go through this too: were only the positive
    stripped, "the text repeats the query's words" would mark a candidate as *wrong*, and
    the model would learn to push down exactly the lexical matches that answer questions.
    """
    if chunk.kind != "source":
        return chunk
    found = _doc_comment(chunk)
    return chunk if found is None else without_lines(chunk, found[0], found[1])


def docstring_pairs(chunks: Sequence[Chunk], time: float) -> list[TrainingPair]:
    pairs = []
    for chunk in chunks:
        if chunk.kind != "source":
            continue
        found = _doc_comment(chunk)
        if found is None:
            continue
        first, last, raw = found
        query = description(raw)
        stripped = without_lines(chunk, first, last)
        body = [ln for ln in stripped.text.split("\n") if ln.strip()]
        if len(query.split()) < MIN_WORDS or len(body) < MIN_BODY_LINES:
            continue
        pairs.append(
            TrainingPair(
                query=query,
                positive=target_of(chunk),
                positive_text=pair_text(stripped),
                source="docstring",
                time=time,
            )
        )
    return pairs


def definitions_by_name(chunks: Sequence[Chunk]) -> dict[str, list[Chunk]]:
    """Source definitions under every dotted suffix of their symbol (``A.b`` and ``b``)."""
    index: dict[str, list[Chunk]] = {}
    for chunk in chunks:
        if chunk.kind != "source" or not chunk.symbol or " " in chunk.symbol:
            continue
        parts = chunk.symbol.split(".")
        for i in range(len(parts)):
            index.setdefault(".".join(parts[i:]), []).append(chunk)
    return index


def _resolve(name: str, index: dict[str, list[Chunk]]) -> Chunk | None:
    parts = name.strip(".").split(".")
    for i in range(len(parts)):  # click.Context.invoke → Context.invoke → invoke
        found = index.get(".".join(parts[i:]))
        if found:
            return found[0] if len(found) == 1 else None
    return None


def _is_changelog(path: str) -> bool:
    """Release notes name many symbols in one breath; they describe no single definition."""
    name = path.rsplit("/", 1)[-1].upper()
    return name.startswith(("CHANGES", "CHANGELOG", "HISTORY", "NEWS", "RELEASE")) or (
        "/CHANGES" in path.upper() or "/CHANGELOG" in path.upper()
    )


def _plausible_name(name: str) -> bool:
    """Skip code-marked English words (`start`, `value`): a bare short lowercase word is ambiguous."""
    bare = name.split(".")[-1]
    if len(bare) < 3 or keyword.iskeyword(bare) or bare.lower() in _COMMON:
        return False
    distinctive = "." in name or "_" in bare or not bare.islower() or len(bare) >= 6
    return distinctive


def _is_prose(paragraph: str) -> bool:
    first = paragraph.lstrip()
    return not (
        first.startswith(("```", "~~~", ">>>", "$ ", "..", "|"))
        or paragraph.startswith(("    ", "\t"))
    )


def docs_pairs(chunks: Sequence[Chunk], time: float) -> list[TrainingPair]:
    index = definitions_by_name(chunks)
    pairs = []
    for chunk in chunks:
        if chunk.kind != "docs" or _is_changelog(chunk.path):
            continue
        for block in re.split(r"\n\s*\n", chunk.text):
            paragraph = "\n".join(ln for ln in block.split("\n") if not _HEADING_LINE.match(ln))
            if not paragraph.strip() or not _is_prose(paragraph):
                continue
            query = " ".join(_MENTION.sub(r"\1", paragraph).split())[:MAX_QUERY_CHARS]
            if len(query.split()) < MIN_WORDS + 1:
                continue
            seen: list[str] = []
            for m in _MENTION.finditer(paragraph):
                name = m.group(1)
                if not _plausible_name(name):
                    continue
                target = _resolve(name, index)
                if target is None or target.id in seen:
                    continue
                seen.append(target.id)
                pairs.append(
                    TrainingPair(
                        query=query,
                        positive=target_of(target),
                        positive_text=pair_text(target),
                        source="docs",
                        time=time,
                    )
                )
                if len(seen) >= MAX_NAMES_PER_PARAGRAPH:
                    break
    return pairs
