"""Turn ranked hits into the numbered sources of a prompt, within a size budget."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from bot.answer.result import Source
from indexer.models import Chunk, Hit

_NOT_SIGNATURE = ("@", "#", "//", "/*", "*", '"""', "'''", "<!--")


@dataclass(frozen=True)
class ContextEntry:
    """A numbered source and whether its full text goes into the prompt (else one line)."""

    source: Source
    full: bool
    # When only the first part of the text fits the budget: how many characters are given.
    cut_at: int | None = None

    @property
    def summary(self) -> str:
        return summary_line(self.source.chunk)

    @property
    def text(self) -> str:
        """The source text as the prompt gives it."""
        text = self.source.chunk.text
        if self.cut_at is None or self.cut_at >= len(text):
            return text
        return text[: self.cut_at] + f"\n[… cut: {len(text) - self.cut_at} more characters]"


def _same_file(a: Chunk, b: Chunk) -> bool:
    return (a.repo, a.path, a.commit) == (b.repo, b.path, b.commit)


def _touches(a: Chunk, b: Chunk) -> bool:
    """Overlapping or directly adjacent line ranges (1-based, inclusive)."""
    return a.start_line <= b.end_line + 1 and b.start_line <= a.end_line + 1


def merge_chunks(a: Chunk, b: Chunk) -> Chunk:
    """One chunk covering both ranges; the text stays exactly the covered source lines."""
    first, second = (a, b) if a.start_line <= b.start_line else (b, a)
    lines = first.text.split("\n")
    if second.end_line > first.end_line:
        tail = second.text.split("\n")
        lines += tail[first.end_line + 1 - second.start_line :]
    symbols = list(dict.fromkeys(s for s in (first.symbol, second.symbol) if s))
    return replace(
        first,
        end_line=max(first.end_line, second.end_line),
        text="\n".join(lines),
        symbol=", ".join(symbols),
    )


def merge_spans(hits: Sequence[Hit]) -> list[Hit]:
    """Merge hits of one file whose ranges overlap or touch.

    Input is best first; a merged group takes the place of its best member, its best
    score and that member's ranks.
    """
    merged: list[Hit] = []
    for hit in hits:
        current = hit
        position: int | None = None
        changed = True
        while changed:  # a merge can make the span touch another group as well
            changed = False
            for i, group in enumerate(merged):
                if _same_file(group.chunk, current.chunk) and _touches(group.chunk, current.chunk):
                    current = Hit(
                        chunk=merge_chunks(group.chunk, current.chunk),
                        score=max(group.score, current.score),
                        ranks=group.ranks or current.ranks,
                    )
                    merged.pop(i)
                    position = i if position is None else min(position, i)
                    changed = True
                    break
        if position is None:
            merged.append(current)
        else:
            merged.insert(position, current)
    return merged


def signature(chunk: Chunk) -> str:
    """The first line that declares something (skips decorators, comments and blanks)."""
    for line in chunk.text.split("\n"):
        stripped = line.strip()
        if stripped and not stripped.startswith(_NOT_SIGNATURE):
            return stripped[:160]
    return ""


def summary_line(chunk: Chunk) -> str:
    parts = [f"{chunk.repo}/{chunk.path}:{chunk.start_line}-{chunk.end_line}"]
    if chunk.symbol:
        parts.append(chunk.symbol)
    sig = signature(chunk)
    if sig:
        parts.append(f"`{sig}`")
    return " — ".join(parts)


def build_context(hits: Sequence[Hit], char_budget: int) -> list[ContextEntry]:
    """Numbered sources, best first: full text while it fits ``char_budget``, then one-line
    summaries (which are always given, so every source stays citable)."""
    entries: list[ContextEntry] = []
    used = 0
    for number, hit in enumerate(merge_spans(hits), start=1):
        size = len(hit.chunk.text)
        source = Source(number, hit.chunk, hit.score)
        if used + size <= char_budget:
            used += size
            entries.append(ContextEntry(source, True))
        elif number == 1:  # the best source is always given, but never past the budget
            used = char_budget
            entries.append(ContextEntry(source, True, cut_at=char_budget))
        else:
            entries.append(ContextEntry(source, False))
    return entries
