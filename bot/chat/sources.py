"""What every front end shows of an answer's sources, decided once (pure).

Under an answer go the sources its text cites, one per row; the rest wait behind "Show
sources", whose view shows each source's cited lines with their line numbers. A reply
that is not an answer (nothing found, or a part such as the language model down) is a
notice: it lists its places once and names the repositories that were searched.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bot.answer import Answer, Source, parse_citations
from bot.chat.links import NO_LINKS, LinkPolicy, defang

SHOWN_LINES = 12  # of each source in the sources view
LINE_CHARS = 160  # a longer line (minified code) is cut in the sources view
SEARCHED_SHOWN = 10  # repositories named in a not-found notice; the rest are counted


def is_notice(answer: Answer) -> bool:
    """Not an answer to rate: nothing was found, or a part it needs failed."""
    return answer.unavailable or not answer.found


def cited_sources(answer: Answer) -> list[Source]:
    """The sources the text cites, in their numbered order; every source when it cites
    none (an uncited answer says to check it against them)."""
    cited = set(parse_citations(answer.text))
    shown = [s for s in answer.sources if s.number in cited]
    return shown or list(answer.sources)


def uncited_sources(answer: Answer) -> list[Source]:
    """The sources that only the sources view shows."""
    shown = {s.number for s in cited_sources(answer)}
    return [s for s in answer.sources if s.number not in shown]


def lead_text(answer: Answer) -> str:
    """The text to show above the rows of sources: without the list it may end with."""
    return answer.lead or answer.text


@dataclass(frozen=True)
class Excerpt:
    """Lines of a source for the sources view, numbered from ``first_line``."""

    first_line: int
    lines: list[str]
    more: int  # lines of the cited range not shown

    @property
    def last_line(self) -> int:
        return self.first_line + len(self.lines) - 1

    def numbered(self) -> str:
        """Each line behind its line number, the numbers right-aligned."""
        width = len(str(self.last_line))
        return "\n".join(
            f"{n:>{width}}  {line}".rstrip() for n, line in enumerate(self.lines, self.first_line)
        )


def excerpt(source: Source, links: LinkPolicy = NO_LINKS, limit: int = SHOWN_LINES) -> Excerpt:
    """The cited lines of ``source``, from the first line of its range, at most ``limit``.

    Line numbers count ``\\n`` only, as the chunker does; a cited range longer than
    ``limit`` lines is shown from its start (its signature) with the rest counted. Indexed
    text is untrusted: a URL in it stays a URL only where ``links`` permits it.
    """
    chunk = source.chunk
    lines = chunk.text.split("\n")
    span = max(chunk.end_line - chunk.start_line + 1, 1)
    lines = lines[: min(span, len(lines))]
    shown = [_cut(defang(line, links)) for line in lines[:limit]]
    return Excerpt(chunk.start_line, shown, len(lines) - len(shown))


def _cut(line: str) -> str:
    line = line.rstrip()
    return line if len(line) <= LINE_CHARS else line[: LINE_CHARS - 1] + "…"


def searched_repos(names: Sequence[str], limit: int = SEARCHED_SHOWN) -> tuple[list[str], int]:
    """The repositories to name as searched (an answer's ``searched``), and how many more."""
    return list(names[:limit]), max(len(names) - limit, 0)


def source_row(source: Source) -> tuple[str, str, str]:
    """(``path:start-end``, symbol, repository): one row under an answer."""
    c = source.chunk
    return f"{c.path}:{c.start_line}-{c.end_line}", c.symbol, c.repo
