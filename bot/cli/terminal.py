"""Answering in a terminal: streamed text, cited sources with links, the retrieval trail.

Generated and indexed text is printed without control characters, so it cannot send a
terminal escape sequence (an OSC 8 hyperlink, a title change, a cursor move), and a URL
the answer writes is shown inert unless :mod:`bot.chat.links` permits it; the links printed
are the ones the application builds from the sources.
"""

from __future__ import annotations

from rich.console import Console

from bot.answer import Answer, Asker, Question
from bot.chat import NO_LINKS, answer_links, defang, strip_controls

SNIPPET_LINES = 12


def ask_in_terminal(
    question: Question,
    asker: Asker,
    console: Console,
    explain: bool = False,
    web_url: str = "https://github.com",
) -> Answer:
    """Answer ``question`` through the same Asker as the chat adapters (access, fallbacks
    when the model is down, the audit entry), streaming generated text as it arrives."""
    streamed: list[str] = []
    stream = _InertStream(console)

    def on_token(text: str) -> None:
        streamed.append(text)
        stream.feed(text)

    def on_step(text: str) -> None:
        if streamed:  # the model wrote before calling a tool: that was not the answer
            stream.close()
            console.print()
            streamed.clear()
        console.print(f"[dim]› {_escape(strip_controls(defang(text, NO_LINKS)))}[/]")

    answer = asker.answer(question, on_token, on_step)
    shown = defang(strip_controls(answer.text), answer_links(answer.sources, web_url))
    if streamed:
        stream.close()
        console.print()
        if "".join(streamed) != answer.text:  # citations were repaired or renumbered
            title = "Answer" if answer.mode == "agent" else "Corrected answer"
            console.print(f"\n[bold]{title}:[/]")
            console.print(shown, markup=False)
    else:
        console.print(shown, markup=False)
    print_sources(answer, console, web_url)
    for note in answer.notes:
        console.print(f"[yellow]note:[/] {note}")
    if explain:
        print_explain(answer, console)
        print_steps(answer, console)
    return answer


def _escape(text: str) -> str:
    return text.replace("[", "\\[")


def print_steps(answer: Answer, console: Console) -> None:
    """Every tool call of an agentic answer: its round, arguments and what it returned."""
    if answer.mode != "agent":
        return
    console.print(f"\n[bold]Tool calls[/] ({answer.rounds} rounds)")
    for step in answer.steps:
        result = f"error: {step.error}" if step.error else f"{step.places} places"
        args = strip_controls(step.arguments)
        console.print(
            f"  {step.round:>2}  {step.tool}({args})  → {result}, {step.chars} characters",
            markup=False,
        )


class _InertStream:
    """Prints streamed text as it comes, holding back a word until it is complete: a URL
    arrives in pieces, and only a whole one can be made inert. Nothing is linked while
    streaming (the sources are not known yet); the final text is shown again if it
    changed."""

    def __init__(self, console: Console) -> None:
        self._console = console
        self._pending = ""

    def feed(self, piece: str) -> None:
        self._pending += strip_controls(piece)
        cut = max(self._pending.rfind(" "), self._pending.rfind("\n"), self._pending.rfind("\t"))
        if cut >= 0:
            self._print(self._pending[: cut + 1])
            self._pending = self._pending[cut + 1 :]

    def close(self) -> None:
        self._print(self._pending)
        self._pending = ""

    def _print(self, text: str) -> None:
        if text:
            self._console.print(defang(text, NO_LINKS), end="", markup=False, highlight=False)


def print_sources(answer: Answer, console: Console, web_base: str) -> None:
    for s in answer.sources:
        heading = strip_controls(f"{s.label}  {s.chunk.symbol}")
        console.print(f"\n[bold]\\[{s.number}][/] ", end="", highlight=False)
        console.print(heading, markup=False, highlight=False)
        console.print(f"    {strip_controls(s.link(web_base))}", markup=False)
        lines = s.chunk.text.split("\n")  # line numbers count \n only, like the chunker
        for n, line in enumerate(lines[:SNIPPET_LINES], start=s.chunk.start_line):
            console.print(f"    {n:>5} │ {strip_controls(line)}", markup=False)
        if len(lines) > SNIPPET_LINES:
            console.print(f"          … {len(lines) - SNIPPET_LINES} more lines")


def print_explain(answer: Answer, console: Console) -> None:
    """Candidates in final order with fused ranks, per-list ranks and rerank scores."""
    console.print("\n[bold]Retrieval trail[/]")
    rerank = answer.reranker or "none configured (fused order kept)"
    console.print(f"  allowed repositories: {answer.allowed_repo_count}   reranker: {rerank}")
    ev = ", ".join(f"{k}={v}" for k, v in answer.evidence.items())
    console.print(f"  evidence: {ev}   answered: {answer.found}", markup=False)
    timings = ", ".join(f"{k} {v * 1000:.0f} ms" for k, v in answer.timings.items())
    console.print(f"  timings: {timings}", markup=False)
    console.print("  final  fused  bm25  knn  sym  rerank    location  symbol")
    for c in sorted(answer.explain, key=lambda c: c.final_rank):
        bm25 = c.ranks.get("bm25", "-")
        knn = c.ranks.get("knn", "-")
        sym = c.ranks.get("symbol", "-")
        score = "-" if c.rerank_score is None else f"{c.rerank_score:.4f}"
        where = strip_controls(f"{c.chunk.repo}/{c.chunk.location}  {c.chunk.symbol}")
        console.print(
            f"  {c.final_rank:>5}  {c.fused_rank:>5}  {bm25!s:>4}  {knn!s:>3}  {sym!s:>3}  {score:>7}    "
            f"{where}",
            markup=False,
        )
