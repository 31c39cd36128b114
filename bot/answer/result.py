"""The answer every front end renders, and the extractive answer used without an LLM."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from indexer.models import Chunk

GITHUB_WEB = "https://github.com"
NOT_FOUND_TEXT = "Not found in the indexed code."


@dataclass(frozen=True)
class Source:
    """A numbered source given to the reader (and to the LLM as ``[n]``)."""

    number: int
    chunk: Chunk
    score: float

    def link(self, web_base: str = GITHUB_WEB) -> str:
        """Commit-pinned link to the exact lines; a plain path when the commit is unknown."""
        c = self.chunk
        if not c.commit or c.repo.startswith("local/"):
            return f"{c.path}#L{c.start_line}-L{c.end_line}"
        # A path may hold characters that mean something in a URL ("#", "?", "%", spaces).
        return (
            f"{web_base.rstrip('/')}/{quote(c.repo, safe='/')}/blob/{c.commit}/"
            f"{quote(c.path, safe='/')}#L{c.start_line}-L{c.end_line}"
        )

    @property
    def label(self) -> str:
        c = self.chunk
        return f"{c.repo}/{c.path}:{c.start_line}-{c.end_line}"


@dataclass(frozen=True)
class Candidate:
    """One row of the retrieval trail that ``--explain`` shows."""

    chunk: Chunk
    fused_rank: int  # 1-based position after fusion
    fused_score: float
    ranks: dict[str, int]  # 1-based rank in each list that found it (bm25, knn, symbol)
    rerank_score: float | None = None
    final_rank: int = 0  # 1-based position after rerank (equals fused_rank without one)


@dataclass
class Answer:
    """What every front end renders.

    ``text`` carries ``[n]`` markers that refer to ``sources[n-1]``; links are rendered
    from the sources by the front end, never taken from generated text. ``timings`` are
    seconds per stage (search, rerank, evidence, generate, …).
    """

    question: str
    text: str
    sources: list[Source]
    found: bool = True
    used_llm: bool = False
    used_rerank: bool = False
    allowed_repo_count: int = 0
    withheld_private: bool = False
    # In a shared place: what only the asker is told about their access (that more may be
    # answered in private, GitHub could not confirm all of it), never part of the answer.
    asker_note: str = ""
    notes: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    explain: list[Candidate] = field(default_factory=list)
    evidence: dict[str, float | bool | None] = field(default_factory=dict)
    reranker: str = ""  # name of the reranker that ran, empty when none did
    # How it was written: "agent" (tool loop), "single" (one generation), "extractive".
    mode: str = "extractive"
    rounds: int = 0  # tool rounds of an agentic answer
    # Tokens the model calls for this answer used (bot.answer.usage), prompt and completion.
    tokens_in: int = 0
    tokens_out: int = 0
    steps: list[Any] = field(default_factory=list)  # bot.answer.agent.AgentStep per tool call
    # A part the answer needs failed (the language model, the search index, access
    # control): what is shown is a fallback, and asking again later may do better.
    unavailable: bool = False
    # ``text`` without the ``source_list`` of its sources it ends with (the line that
    # introduces the list included), for front ends that list the places themselves;
    # empty when the text lists none.
    lead: str = ""
    # The repositories searched for it: the allowed set of the place it is shown in, so
    # never one its audience may not read. Empty when nothing was searched.
    searched: list[str] = field(default_factory=list)


def source_list(sources: list[Source]) -> str:
    """One cited line per source: ``[n] symbol — path:start-end``."""
    return "\n".join(
        f"[{s.number}] {s.chunk.symbol} — {s.chunk.path}:{s.chunk.start_line}-{s.chunk.end_line}"
        for s in sources
    )


def extractive_answer(question: str, sources: list[Source], shown: int = 3) -> Answer:
    """The best sources themselves, each with its citation: no generation, nothing invented."""
    kept = sources[:shown]
    if not kept:
        return Answer(question, NOT_FOUND_TEXT, [], found=False)
    lead = "The most relevant code I found:"
    return Answer(question, f"{lead}\n{source_list(kept)}", kept, lead=lead)


def not_found_answer(question: str, closest: list[Source]) -> Answer:
    """The honest answer to weak evidence: say so, and show where to look next."""
    if not closest:
        return Answer(question, NOT_FOUND_TEXT, [], found=False)
    lead = f"{NOT_FOUND_TEXT}\nThe closest places to look:"
    return Answer(question, f"{lead}\n{source_list(closest)}", closest, found=False, lead=lead)
