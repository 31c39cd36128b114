"""The ``codeask`` command line: short commands over the library."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from bot.answer import Answer, extractive_answer
from indexer.errors import CodeaskError
from indexer.settings import IndexerSettings

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Ask questions about code.")
err = Console(stderr=True, soft_wrap=True)
out = Console(highlight=False, soft_wrap=True)


def _settings() -> IndexerSettings:
    return IndexerSettings()


def _open(settings: IndexerSettings):  # type: ignore[no-untyped-def]
    from indexer.embedding import load_embedder
    from indexer.search import Searcher
    from indexer.stores import open_store

    store = open_store(settings)
    embedder = load_embedder(settings.embed_model, settings.embed_threads, settings.embed_batch_size)
    return store, embedder, Searcher(store, embedder)


def _all_repos(store) -> frozenset[str]:  # type: ignore[no-untyped-def]
    return frozenset(s.repo for s in store.repo_states())


@app.command()
def index(
    target: Annotated[str, typer.Argument(help="Folder, git work tree or git URL")] = ".",
    repo: Annotated[str | None, typer.Option(help="Repository name owner/name")] = None,
    visibility: Annotated[str, typer.Option(help="public | internal | private")] = "private",
    branch: Annotated[str | None, typer.Option(help="Branch to clone (URLs only)")] = None,
    full: Annotated[bool, typer.Option("--full", help="Re-index every file")] = False,
) -> None:
    """Index a repository (only files that changed since the last run)."""
    from indexer.embed_cache import SqliteEmbeddingCache
    from indexer.errors import IndexingError
    from indexer.gitrepo import clone_or_update, is_remote_url, name_from_url, repo_name_for
    from indexer.indexing import index_repository

    settings = _settings()
    if is_remote_url(target):
        name = repo or name_from_url(target)
        root = clone_or_update(target, settings.repos_dir / name, branch)
    else:
        root = Path(target).expanduser().resolve()
        if not root.is_dir():
            raise IndexingError(f"{root} is not a folder")
        name = repo or repo_name_for(root)
    store, embedder, _ = _open(settings)
    cache = SqliteEmbeddingCache(settings.data_path / "embeddings.db")
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(),
        console=err,
        transient=True,
    ) as bar:
        tasks: dict[str, TaskID] = {}

        def progress(stage: str, done: int, total: int) -> None:
            if stage not in tasks:
                tasks[stage] = bar.add_task(f"{stage:>6}", total=total)
            bar.update(tasks[stage], completed=done, total=total)

        report = index_repository(
            root,
            name,
            store,
            embedder,
            cache,
            visibility=visibility,
            max_file_bytes=settings.max_file_bytes,
            progress=progress,
            force=full,
        )
    err.print(
        f"[bold]{name}[/] at {report.commit[:12] or 'working tree'}: {report.files} files, "
        f"{report.changed_files} changed, {report.deleted_files} deleted, {report.chunks} chunks "
        f"written ({report.embedded} embedded), {len(report.skipped)} skipped, "
        f"{report.seconds:.1f} s"
    )
    for reason, count in report.skipped_by_reason().items():
        err.print(f"  skipped {count:>5}  {reason}")


@app.command()
def search(
    query: Annotated[str, typer.Argument(help="What to look for")],
    repo: Annotated[list[str] | None, typer.Option(help="Restrict to these repos")] = None,
    k: Annotated[int, typer.Option(help="Number of results")] = 10,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output")] = False,
) -> None:
    """Hybrid (BM25 + k-NN) search over the indexed code."""
    store, _, searcher = _open(_settings())
    repos = frozenset(repo) if repo else _all_repos(store)
    hits = searcher.search(query, repos, k=k)
    if as_json:
        rows = [
            {
                "repo": h.chunk.repo,
                "path": h.chunk.path,
                "start_line": h.chunk.start_line,
                "end_line": h.chunk.end_line,
                "symbol": h.chunk.symbol,
                "kind": h.chunk.kind,
                "score": round(h.score, 6),
            }
            for h in hits
        ]
        out.print(json.dumps(rows, indent=2))
        return
    if not hits:
        out.print("No results.")
    for i, h in enumerate(hits, start=1):
        c = h.chunk
        out.print(f"{i:>2}. {c.repo} {c.path}:{c.start_line}-{c.end_line}  {c.symbol}  ({h.score:.4f})")


@app.command()
def ask(
    question: Annotated[str, typer.Argument(help="Your question")],
    repo: Annotated[list[str] | None, typer.Option(help="Restrict to these repos")] = None,
    explain: Annotated[
        bool, typer.Option("--explain", help="Show candidates, fused ranks and rerank scores")
    ] = False,
) -> None:
    """Answer a question from the indexed code, with citations."""
    from bot.terminal import ask_in_terminal

    settings = _settings()
    store, _, searcher = _open(settings)
    repos = frozenset(repo) if repo else _all_repos(store)
    ask_in_terminal(question, repos, searcher, settings.data_path, out, explain=explain)


def _print_answer(answer: Answer) -> None:
    out.print(answer.text)
    for s in answer.sources:
        out.print(f"\n[bold][{s.number}][/] {s.label}  {s.chunk.symbol}")
        out.print(f"    {s.link()}")
        snippet = s.chunk.text.splitlines()
        for n, line in enumerate(snippet[:12], start=s.chunk.start_line):
            out.print(f"    {n:>5} │ {line}", markup=False)
        if len(snippet) > 12:
            out.print(f"          … {len(snippet) - 12} more lines")


@app.command("eval")
def eval_(
    golden: Annotated[list[Path], typer.Argument(help="Golden sets (.jsonl) or folders of them")],
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output")] = False,
    k: Annotated[int, typer.Option("--k", help="Cut-off for recall, MRR and nDCG")] = 10,
    ablate: Annotated[bool, typer.Option("--ablate", help="Compare configurations")] = False,
    index_first: Annotated[
        bool, typer.Option("--index", help="First index the pinned corpora of the sets")
    ] = False,
) -> None:
    """Score retrieval on golden questions (recall@k, MRR, nDCG; per kind and per repo)."""
    from eval.command import DEFAULT_REPORT_DIR, run_eval

    run_eval(
        golden,
        k=k,
        as_json=as_json,
        ablate=ablate,
        index=index_first,
        report_dir=DEFAULT_REPORT_DIR,
        out=out,
        err=err,
    )


def main() -> None:
    try:
        app()
    except CodeaskError as exc:
        err.print(f"[red]error:[/] {exc}")
        sys.exit(2)


if __name__ == "__main__":
    main()
