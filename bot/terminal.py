"""Answering in a terminal: streamed text, cited sources with links, the retrieval trail."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from bot.answer import Answer
from bot.pipeline import AnswerPipeline
from bot.rerank import load_reranker
from bot.settings import BotSettings
from indexer.search import Searcher

SNIPPET_LINES = 12


def ask_in_terminal(
    question: str,
    repos: frozenset[str],
    searcher: Searcher,
    data_dir: Path,
    console: Console,
    explain: bool = False,
    settings: BotSettings | None = None,
    web_url: str = "https://github.com",
) -> Answer:
    """Answer ``question`` from ``repos``, streaming generated text as it arrives."""
    settings = settings or BotSettings()
    pipeline = AnswerPipeline(searcher, settings, reranker=load_reranker(settings, data_dir))
    streamed: list[str] = []

    def on_token(text: str) -> None:
        streamed.append(text)
        console.print(text, end="", markup=False, highlight=False)

    answer = pipeline.answer(question, repos, on_token if pipeline.llm else None)
    if streamed:
        console.print()
        if "".join(streamed) != answer.text:  # citations were repaired after streaming
            console.print("\n[bold]Corrected answer:[/]")
            console.print(answer.text, markup=False)
    else:
        console.print(answer.text, markup=False)
    print_sources(answer, console, web_url)
    for note in answer.notes:
        console.print(f"[yellow]note:[/] {note}")
    if explain:
        print_explain(answer, console)
    return answer


def print_sources(answer: Answer, console: Console, web_base: str) -> None:
    for s in answer.sources:
        console.print(f"\n[bold]\\[{s.number}][/] {s.label}  {s.chunk.symbol}", highlight=False)
        console.print(f"    {s.link(web_base)}", markup=False)
        lines = s.chunk.text.split("\n")  # line numbers count \n only, like the chunker
        for n, line in enumerate(lines[:SNIPPET_LINES], start=s.chunk.start_line):
            console.print(f"    {n:>5} │ {line}", markup=False)
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
        console.print(
            f"  {c.final_rank:>5}  {c.fused_rank:>5}  {bm25!s:>4}  {knn!s:>3}  {sym!s:>3}  {score:>7}    "
            f"{c.chunk.repo}/{c.chunk.location}  {c.chunk.symbol}",
            markup=False,
        )
