"""Line spans: the shapes chunking works with before they become chunks (pure functions)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

MAX_LINES = 120  # a definition longer than this is split at inner block boundaries
TINY_LINES = 2  # one- and two-line neighbours (constants, imports) are merged
MERGED_MAX_LINES = 30
WINDOW_LINES = 50

_ASSIGNED_NAME = re.compile(
    r"^\s*(?:export\s+)?(?:const\s+|let\s+|var\s+)?([A-Za-z_$][\w$.]*)\s*[:=]"
)


@dataclass
class Span:
    start: int  # 0-based row, inclusive
    end: int  # 0-based row, inclusive
    symbol: str
    scope: tuple[str, ...] = field(default_factory=tuple)  # enclosing signatures


def drop_nested(spans: list[Span]) -> list[Span]:
    """Keep the outermost of spans that contain one another (sorted by start)."""
    kept: list[Span] = []
    for span in spans:
        if kept and span.start >= kept[-1].start and span.end <= kept[-1].end:
            continue
        kept.append(span)
    return kept


def gap_spans(
    lines: list[str],
    covered: list[Span],
    start: int,
    end: int,
    scope: tuple[str, ...],
    symbol: str,
) -> list[Span]:
    """Chunks for the non-blank lines in ``start..end`` that no span covers."""
    taken = [False] * (end - start + 1)
    for span in covered:
        for row in range(max(span.start, start), min(span.end, end) + 1):
            taken[row - start] = True
    out: list[Span] = []
    row = start
    while row <= end:
        if taken[row - start] or not lines[row].strip():
            row += 1
            continue
        first = row
        while row <= end and not taken[row - start]:
            row += 1
        last = row - 1
        while not lines[last].strip():
            last -= 1
        for piece in window_spans(lines, first, last, symbol, scope):
            if not symbol:
                piece.symbol = assigned_names(lines[piece.start : piece.end + 1])
            out.append(piece)
    return out


def assigned_names(block: list[str]) -> str:
    names = []
    for line in block:
        if line[:1].isspace():
            continue
        m = _ASSIGNED_NAME.match(line)
        if m and m.group(1) not in names:
            names.append(m.group(1))
        if len(names) == 3:
            break
    return ", ".join(names) if names else "<module>"


def merge_tiny(spans: list[Span], lines: list[str]) -> list[Span]:
    """Merge runs of tiny neighbouring spans (one-line constants, short helpers)."""
    merged: list[Span] = []
    for span in spans:
        prev = merged[-1] if merged else None
        if (
            prev is not None
            and span.end - span.start + 1 <= TINY_LINES
            and prev.end - prev.start + 1 <= MERGED_MAX_LINES - TINY_LINES
            and span.scope == prev.scope
            and span.start > prev.end
            and all(not ln.strip() for ln in lines[prev.end + 1 : span.start])
            and span.start - prev.end <= 2
            and (prev.end - prev.start + 1 <= TINY_LINES or ", " in prev.symbol)
        ):
            if span.symbol not in prev.symbol.split(", "):
                prev.symbol = f"{prev.symbol}, {span.symbol}"
            prev.end = span.end
            continue
        merged.append(Span(span.start, span.end, span.symbol, span.scope))
    return merged


def window_spans(
    lines: list[str],
    start: int,
    end: int,
    symbol: str,
    scope: tuple[str, ...] = (),
    size: int = WINDOW_LINES,
) -> list[Span]:
    """Windows of at most ``size`` lines, preferring to end just before a blank line."""
    out: list[Span] = []
    row = start
    while row <= end:
        stop = min(row + size - 1, end)
        if stop < end:
            for cand in range(stop, row + size // 2, -1):
                if not lines[cand + 1].strip():
                    stop = cand
                    break
        while row <= stop and not lines[row].strip():
            row += 1
        last = stop
        while last >= row and not lines[last].strip():
            last -= 1
        if last >= row:
            out.append(Span(row, last, symbol, scope))
        row = stop + 1
    return out
