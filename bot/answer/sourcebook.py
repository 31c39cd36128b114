"""Every place an answer read, numbered once, and the fenced text the model reads of it.

The agent's tools return places (chunks, or exact line ranges of them); the book gives
each distinct place a number the first time it is returned, so the final answer's ``[n]``
refer to exactly what was read. Each place is checked against the allowed repositories as
it enters the book, so nothing outside them can be numbered, shown or cited.

Tool output is untrusted data in the prompt: every place sits between BEGIN SOURCE and
END SOURCE markers that carry a random token drawn once per question, which no indexed
text can know in advance and so cannot forge.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, replace

from bot.answer.result import Source
from indexer.errors import AccessDenied
from indexer.models import Chunk

PREVIEW_LINES = 6
LINE_CHARS = 240  # a longer line is cut in what the model reads (minified code)


def excerpt(chunk: Chunk, first: int, last: int) -> Chunk:
    """The lines ``first``..``last`` of ``chunk`` (clamped to it) as a chunk of their own."""
    first = max(first, chunk.start_line)
    last = min(last, chunk.end_line)
    lines = chunk.text.split("\n")[first - chunk.start_line : last - chunk.start_line + 1]
    return replace(chunk, start_line=first, end_line=last, text="\n".join(lines))


def numbered_lines(chunk: Chunk, limit: int | None = None) -> str:
    """The chunk's lines with their line numbers, long lines cut, at most ``limit`` lines."""
    lines = chunk.text.split("\n")
    shown = lines if limit is None else lines[:limit]
    out = [f"{chunk.start_line + i:>5}  {_cut(line)}" for i, line in enumerate(shown)]
    if len(shown) < len(lines):
        out.append(f"      … {len(lines) - len(shown)} more lines")
    return "\n".join(out)


def _cut(line: str) -> str:
    return line if len(line) <= LINE_CHARS else line[:LINE_CHARS] + " …[cut]"


@dataclass(frozen=True)
class _Key:
    repo: str
    path: str
    start: int
    end: int
    commit: str


class SourceBook:
    """The numbered places of one question; only chunks of ``repos`` may enter."""

    def __init__(self, repos: frozenset[str], marker: str | None = None) -> None:
        self.repos = repos
        self.marker = marker or secrets.token_hex(8)
        self.sources: list[Source] = []
        self._numbers: dict[_Key, int] = {}

    def __len__(self) -> int:
        return len(self.sources)

    def add(self, chunk: Chunk, score: float = 0.0) -> Source:
        """The place's number: the one it already has, or the next one."""
        if chunk.repo not in self.repos:
            raise AccessDenied(
                "A tool result fell outside the repositories you may read; nothing was shown."
            )
        key = _Key(chunk.repo, chunk.path, chunk.start_line, chunk.end_line, chunk.commit)
        number = self._numbers.get(key)
        if number is not None:
            return self.sources[number - 1]
        source = Source(len(self.sources) + 1, chunk, score)
        self.sources.append(source)
        self._numbers[key] = source.number
        return source

    def fenced(self, source: Source, body: str, note: str = "") -> str:
        """One place as the model reads it: its heading, then ``body`` between markers."""
        c = source.chunk
        symbol = f" ({c.symbol})" if c.symbol else ""
        n = source.number
        heading = f"[{n}] {c.repo}/{c.path}:{c.start_line}-{c.end_line}{symbol}{note}"
        return f"{heading}\nBEGIN SOURCE {n} {self.marker}\n{body}\nEND SOURCE {n} {self.marker}"


@dataclass(frozen=True)
class Place:
    """A place a tool found: the chunk (or exact lines) it cites and the text shown of it."""

    chunk: Chunk
    body: str
    score: float = 0.0
    note: str = ""  # said after the heading, e.g. that an earlier answer showed it


def preview(chunk: Chunk, lines: int = PREVIEW_LINES, score: float = 0.0) -> Place:
    """The first lines of a place, numbered: what a search result shows."""
    return Place(chunk, numbered_lines(chunk, lines), score)


def render_places(
    book: SourceBook, header: str, places: list[Place], limit_chars: int
) -> tuple[str, int]:
    """``header`` and as many places as fit in ``limit_chars``, numbered as they are shown
    (a place cut for room gets no number, so nothing unread can be cited); the text and how
    many places were shown."""
    parts = [header]
    used = len(header)
    shown = 0
    for place in places:
        probe = book.fenced(Source(len(book) + 1, place.chunk, 0.0), place.body)
        if used + len(probe) + 2 > limit_chars and shown:
            break
        if used + len(probe) + 2 > limit_chars:  # not even one place fits whole: cut its body
            room = max(limit_chars - used - 200, 0)
            body = place.body[:room] + "\n      …[cut: output budget]"
            place = Place(place.chunk, body, place.score, place.note)
        source = book.add(place.chunk, place.score)
        block = book.fenced(source, place.body, place.note)
        parts.append(block)
        used += len(block) + 2
        shown += 1
    if shown < len(places):
        parts.append(
            f"({len(places) - shown} more results not shown: this round's output budget is "
            "spent. Narrow the query or read a specific range.)"
        )
    return "\n\n".join(parts), shown
