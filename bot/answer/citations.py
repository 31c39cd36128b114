"""Find, check and repair the ``[n]`` citation markers of a generated answer (pure)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass

from bot.answer.result import NOT_FOUND_TEXT, Source

# [1], [1, 2], [1,2,3]; not [x] or [1.5]
_MARKER = re.compile(r"\[(\d+(?:\s*,\s*\d+)*)\]")
# Fenced blocks and inline code are code, where a[0] is an index, not a citation.
_CODE = re.compile(r"```.*?(?:```|\Z)|`[^`\n]*`", re.DOTALL)

UNVERIFIED_NOTE = "Some citations could not be verified and were removed."
UNCITED_NOTE = "This answer cites no source; check it against the sources below."


@dataclass(frozen=True)
class CitationCheck:
    cited: tuple[int, ...]  # valid numbers, in order of first use
    invalid: tuple[int, ...]
    missing: bool  # no valid citation in an answer that claims to have found something

    @property
    def ok(self) -> bool:
        return not self.invalid and not self.missing

    def problem(self, source_count: int) -> str:
        if self.invalid:
            names = ", ".join(f"[{n}]" for n in self.invalid)
            verb = "is" if len(self.invalid) == 1 else "are"
            return f"{names} {verb} not among the {source_count} sources given"
        return "it cites no source"


def _prose_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of the parts of ``text`` outside code."""
    spans, pos = [], 0
    for m in _CODE.finditer(text):
        spans.append((pos, m.start()))
        pos = m.end()
    spans.append((pos, len(text)))
    return spans


def markers(text: str) -> list[tuple[int, int, tuple[int, ...]]]:
    """Every citation marker outside code as (start, end, numbers)."""
    found = []
    for start, end in _prose_spans(text):
        for m in _MARKER.finditer(text, start, end):
            numbers = tuple(int(n) for n in re.split(r"\s*,\s*", m.group(1)))
            found.append((m.start(), m.end(), numbers))
    return found


def parse_citations(text: str) -> list[int]:
    """Cited numbers in order of first use (outside code)."""
    return list(dict.fromkeys(n for _, _, numbers in markers(text) for n in numbers))


def says_not_found(text: str) -> bool:
    return NOT_FOUND_TEXT.lower().rstrip(".") in text.lower()


def check_citations(text: str, source_count: int) -> CitationCheck:
    cited = parse_citations(text)
    valid = tuple(n for n in cited if 1 <= n <= source_count)
    invalid = tuple(n for n in cited if not 1 <= n <= source_count)
    return CitationCheck(
        cited=valid,
        invalid=invalid,
        missing=not valid and not says_not_found(text),
    )


def strip_invalid(text: str, source_count: int) -> str:
    """Drop numbers outside 1..source_count from every marker; drop emptied markers."""
    out, pos = [], 0
    for start, end, numbers in markers(text):
        keep = [n for n in numbers if 1 <= n <= source_count]
        out.append(text[pos:start].rstrip(" ") if not keep else text[pos:start])
        if keep:
            out.append(f"[{', '.join(str(n) for n in keep)}]")
        pos = end
    out.append(text[pos:])
    return "".join(out)


def renumber(text: str, sources: Sequence[Source]) -> tuple[str, list[Source]]:
    """Only the cited sources, numbered 1.. in order of first citation, and ``text`` with
    its markers rewritten to match (numbers outside ``sources`` are dropped)."""
    order = [n for n in parse_citations(text) if 1 <= n <= len(sources)]
    new = {old: i for i, old in enumerate(order, start=1)}
    out, pos = [], 0
    for start, end, numbers in markers(text):
        keep = list(dict.fromkeys(new[n] for n in numbers if n in new))
        out.append(text[pos:start].rstrip(" ") if not keep else text[pos:start])
        if keep:
            out.append(f"[{', '.join(str(n) for n in keep)}]")
        pos = end
    out.append(text[pos:])
    kept = [dataclasses.replace(sources[old - 1], number=i) for old, i in new.items()]
    return "".join(out), kept
