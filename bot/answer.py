"""The answer every front end renders, and the extractive answer used without an LLM."""

from __future__ import annotations

from dataclasses import dataclass, field

from indexer.models import Chunk, Hit

GITHUB_WEB = "https://github.com"


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
        return (
            f"{web_base.rstrip('/')}/{c.repo}/blob/{c.commit}/{c.path}"
            f"#L{c.start_line}-L{c.end_line}"
        )

    @property
    def label(self) -> str:
        c = self.chunk
        return f"{c.repo}/{c.path}:{c.start_line}-{c.end_line}"


@dataclass
class Answer:
    question: str
    text: str
    sources: list[Source]
    found: bool = True
    used_llm: bool = False
    used_rerank: bool = False
    allowed_repo_count: int = 0
    withheld_private: bool = False
    notes: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)


def extractive_answer(question: str, hits: list[Hit], shown: int = 3) -> Answer:
    """The best chunks themselves, each with its citation: no generation, nothing invented."""
    sources = [Source(i, h.chunk, h.score) for i, h in enumerate(hits[:shown], start=1)]
    if not sources:
        return Answer(question, "Not found in the indexed code.", [], found=False)
    parts = []
    for s in sources:
        parts.append(f"[{s.number}] {s.chunk.symbol} — {s.chunk.path}:{s.chunk.start_line}-{s.chunk.end_line}")
    text = "The most relevant code I found:\n" + "\n".join(parts)
    return Answer(question, text, sources)
