"""The ``codeask`` command line: short commands over the parts ``bot.services`` builds."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from bot.cli.db import db_app
from bot.cli.models import models_app
from bot.cli.serve import register as register_service_commands
from bot.services import Services
from bot.training import train_app
from indexer.errors import CodeaskError

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Ask questions about code.")
register_service_commands(app)  # serve, worker, reconcile, repo
app.add_typer(train_app, name="train")  # mine, reranker, gate
app.add_typer(db_app, name="db")  # upgrade, current, check
app.add_typer(models_app, name="models")  # export
err = Console(stderr=True, soft_wrap=True)
out = Console(highlight=False, soft_wrap=True)


@app.command()
def index(
    target: Annotated[str, typer.Argument(help="Folder, git work tree or git URL")] = ".",
    repo: Annotated[str | None, typer.Option(help="Repository name owner/name")] = None,
    visibility: Annotated[str, typer.Option(help="public | internal | private")] = "private",
    branch: Annotated[str | None, typer.Option(help="Branch to clone (URLs only)")] = None,
    full: Annotated[bool, typer.Option("--full", help="Re-index every file")] = False,
) -> None:
    """Index a repository (only files that changed since the last run)."""
    from indexer.errors import IndexingError
    from indexer.jobs import check_repo_name, index_repository
    from indexer.source import clone_or_update, is_remote_url, name_from_url, repo_name_for

    services = Services()
    settings = services.indexer
    if is_remote_url(target):
        # The name is also the clone's folder under the data dir: never "..", never a path.
        name = check_repo_name(repo or name_from_url(target))
        root = clone_or_update(target, settings.repos_dir / name, branch)
    else:
        root = Path(target).expanduser().resolve()
        if not root.is_dir():
            raise IndexingError(f"{root} is not a folder")
        name = check_repo_name(repo) if repo else repo_name_for(root)
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
            services.store,
            services.embedder,
            services.embedding_cache,
            visibility=visibility,
            max_file_bytes=settings.max_file_bytes,
            progress=progress,
            force=full,
        )
    err.print(
        f"[bold]{name}[/] at {report.commit[:12] or 'working tree'}: {report.files} files, "
        f"{report.changed_files} changed, {report.deleted_files} deleted, {report.chunks} chunks "
        f"written ({report.embedded} embedded"
        + (f", {report.carried} kept from renamed files" if report.carried else "")
        + f"), {len(report.skipped)} skipped, "
        f"{report.seconds:.1f} s"
    )
    if report.full_reason:
        err.print(f"  re-indexed in full: {report.full_reason}", markup=False)
    for reason, count in report.skipped_by_reason().items():
        err.print(f"  skipped {count:>5}  {reason}")
    if report.uncommitted:
        shown = ", ".join(report.uncommitted[:3]) + (" …" if len(report.uncommitted) > 3 else "")
        err.print(
            f"  {len(report.uncommitted)} files differ from {report.commit[:12]} (uncommitted: "
            f"{shown}); citations of them name the path, not lines of the commit",
            markup=False,
        )


AS_GITHUB_HELP = "Preview as this GitHub user would see it (same policy as the chat bot)"
PLACE_HELP = "Where the preview is asked: dm, or channel:[slack:|teams:]ID"


def _allowed_repos(
    services: Services, repo: list[str] | None, as_github: str | None, place: str | None
) -> frozenset[str]:
    """Everything indexed for the operator, else what ``--as-github`` gets in ``--place``."""
    from bot.cli.access import allowed_repo_set

    return allowed_repo_set(
        services,
        requested=repo,
        as_github=as_github,
        place=place,
        notify=_note,
    )


def _note(reason: str) -> None:
    err.print(f"[yellow]note:[/] {reason}")


@app.command()
def search(
    query: Annotated[str, typer.Argument(help="What to look for")],
    repo: Annotated[list[str] | None, typer.Option(help="Restrict to these repos")] = None,
    k: Annotated[int, typer.Option(help="Number of results", min=1, max=200)] = 10,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output")] = False,
    as_github: Annotated[str | None, typer.Option(help=AS_GITHUB_HELP)] = None,
    place: Annotated[str | None, typer.Option(help=PLACE_HELP)] = None,
) -> None:
    """Hybrid (BM25 + k-NN) search over the indexed code."""
    services = Services()
    repos = _allowed_repos(services, repo, as_github, place)
    hits = services.searcher.search(query, repos, k=k)
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
        out.print(
            f"{i:>2}. {c.repo} {c.path}:{c.start_line}-{c.end_line}  {c.symbol}  ({h.score:.4f})"
        )


def _names(
    kind: str,
    name: str,
    repo: list[str] | None,
    as_github: str | None,
    place: str | None,
    as_json: bool,
) -> None:
    from bot.answer import check_name, look_up

    check_name(name)
    services = Services()
    repos = _allowed_repos(services, repo, as_github, place)
    places = look_up(services.store, kind, name, repos)  # type: ignore[arg-type]
    web = services.acl.github_web_url
    if as_json:
        rows = [
            {
                "repo": p.chunk.repo,
                "path": p.chunk.path,
                "line": p.line,
                "start_line": p.chunk.start_line,
                "end_line": p.chunk.end_line,
                "symbol": p.chunk.symbol,
                "url": p.link(web),
            }
            for p in places
        ]
        out.print(json.dumps(rows, indent=2))
        return
    if not places:
        what = "definition" if kind == "defs" else "reference"
        out.print(f"No {what} of {name!r} in {len(repos)} indexed repositories you may read.")
    for p in places:
        out.print(f"{p.label}  {p.chunk.symbol}  {p.link(web)}")


@app.command()
def defs(
    name: Annotated[str, typer.Argument(help="A function, class, method or constant name")],
    repo: Annotated[list[str] | None, typer.Option(help="Restrict to these repos")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output")] = False,
    as_github: Annotated[str | None, typer.Option(help=AS_GITHUB_HELP)] = None,
    place: Annotated[str | None, typer.Option(help=PLACE_HELP)] = None,
) -> None:
    """Where NAME is defined (every repository you may read), with commit-pinned links."""
    _names("defs", name, repo, as_github, place, as_json)


@app.command()
def refs(
    name: Annotated[str, typer.Argument(help="A name, or a literal such as an env var")],
    repo: Annotated[list[str] | None, typer.Option(help="Restrict to these repos")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output")] = False,
    as_github: Annotated[str | None, typer.Option(help=AS_GITHUB_HELP)] = None,
    place: Annotated[str | None, typer.Option(help=PLACE_HELP)] = None,
) -> None:
    """Where NAME is used: calls, type uses, imports, and literals that hold it."""
    _names("refs", name, repo, as_github, place, as_json)


@app.command()
def ask(
    question: Annotated[str, typer.Argument(help="Your question")],
    repo: Annotated[list[str] | None, typer.Option(help="Restrict to these repos")] = None,
    explain: Annotated[
        bool, typer.Option("--explain", help="Show candidates, fused ranks and rerank scores")
    ] = False,
    as_github: Annotated[str | None, typer.Option(help=AS_GITHUB_HELP)] = None,
    place: Annotated[str | None, typer.Option(help=PLACE_HELP)] = None,
) -> None:
    """Answer a question from the indexed code, with citations."""
    from bot.answer import Question, check_question
    from bot.cli.access import cli_principal, notify_unindexed, parse_place
    from bot.cli.terminal import ask_in_terminal

    check_question(question)
    services = Services()
    platform, where = parse_place(place)
    principal = cli_principal(services, as_github, platform)
    only = frozenset(repo) if repo else None
    if only:
        notify_unindexed(services, only, _note)
    asked = Question(principal, where, question, only=only)
    ask_in_terminal(
        asked, services.asker, out, explain=explain, web_url=services.acl.github_web_url
    )


@app.command("eval")
def eval_(
    golden: Annotated[list[Path], typer.Argument(help="Golden sets (.jsonl) or folders of them")],
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output")] = False,
    k: Annotated[int, typer.Option("--k", help="Cut-off for recall, MRR and nDCG")] = 10,
    ablate: Annotated[bool, typer.Option("--ablate", help="Compare configurations")] = False,
    index_first: Annotated[
        bool, typer.Option("--index", help="First index the pinned corpora of the sets")
    ] = False,
    citations: Annotated[
        bool,
        typer.Option(
            "--citations",
            help="Also answer every question with the local test LLM and score the citations",
        ),
    ] = False,
    answers: Annotated[
        bool,
        typer.Option(
            "--answers",
            help="Also answer every question with the configured model (CODEASK_LLM_MODEL; "
            "the local test LLM when none is set) and score the answers",
        ),
    ] = False,
    mode: Annotated[
        str | None,
        typer.Option("--mode", help="Answer mode for --answers/--citations: auto, agent or single"),
    ] = None,
) -> None:
    """Score retrieval on golden questions (recall@k, MRR, nDCG; per kind and per repo).

    With --citations, also answer them (local test LLM) and score the answers' citations;
    --answers does the same with the configured model; --mode picks agent or single-shot.
    """
    if mode is not None and mode not in ("auto", "agent", "single"):
        raise typer.BadParameter("--mode is auto, agent or single")
    from eval.command import DEFAULT_REPORT_DIR, run_eval

    run_eval(
        Services(),
        golden,
        k=k,
        as_json=as_json,
        ablate=ablate,
        index=index_first,
        report_dir=DEFAULT_REPORT_DIR,
        out=out,
        err=err,
        citations=citations,
        answers=answers,
        mode=mode,
    )


@app.command()
def doctor() -> None:
    """Check every configured part end to end: one line each, exit 1 when one failed."""
    from bot.cli.doctor import run_checks

    colors = {"ok": "green", "warning": "yellow", "failed": "red", "skipped": "dim"}
    checks = run_checks(Services(migrate=False))
    for c in checks:
        out.print(f"[{colors[c.status]}]{c.status:<8}[/] {c.name:<16} ", end="")
        out.print(c.detail, markup=False, highlight=False)
    failed = [c.name for c in checks if c.status == "failed"]
    if failed:
        err.print(f"{len(failed)} check(s) failed: {', '.join(failed)}")
        raise typer.Exit(1)


@app.command("migrate-index")
def migrate_index(
    delete_old: Annotated[
        bool, typer.Option("--delete-old", help="Delete the previous index version after")
    ] = False,
) -> None:
    """OpenSearch: build the next index version for this configuration and move the alias."""
    from indexer.stores.opensearch import OpenSearchStore, migrate

    services = Services()
    settings = services.indexer
    if settings.store != "opensearch":
        raise typer.BadParameter("only for CODEASK_STORE=opensearch")
    store = services.store
    assert isinstance(store, OpenSearchStore)
    done = migrate(store, services.embedder.dimension, delete_old=delete_old)
    if done.old_index == done.new_index:
        err.print(f"{done.new_index} already fits this configuration; nothing changed.")
        return
    err.print(
        f"{settings.opensearch_index} now points to {done.new_index} ({done.copied} chunks copied)."
    )
    if done.reindex_needed:
        err.print("The vector dimension changed: run `codeask index` again for every repository.")


@app.command()
def audit(
    limit: Annotated[int, typer.Option(help="How many of the newest questions")] = 50,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output")] = False,
) -> None:
    """Who asked what, where, over which repos, and what was cited (never code)."""
    services = Services()
    try:
        entries = services.acl_store.audit_entries(limit)
    finally:
        services.close()
    if as_json:
        out.print(json.dumps([e.model_dump() for e in entries], indent=2), markup=False)
        return
    if not entries:
        out.print("No questions recorded.")
    for e in entries:
        who = f"{e.platform}:{e.user_id}" + (f" (@{e.github_login})" if e.github_login else "")
        cited = ", ".join(
            f"{c['repo']}/{c['path']}:{c['lines'][0]}-{c['lines'][1]}" for c in json.loads(e.cited)
        )
        out.print(f"{_when(e.ts)}  {who} in {e.place}: {e.question}", markup=False)
        out.print(
            f"    repos: {len(json.loads(e.allowed_repos))}  cited: {cited or '-'}", markup=False
        )


def _when(ts: float) -> str:
    from datetime import datetime

    return datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S")


@app.command()
def link(
    platform: Annotated[str, typer.Option(help="slack or teams")],
    user: Annotated[str, typer.Option(help="Chat user id (Slack TEAM:USER, Teams AAD id)")],
) -> None:
    """Print the one-time GitHub sign-in URL that links this chat user to their account."""
    from acl import OAuthLinker, Principal

    services = Services()
    try:
        url = OAuthLinker(services.acl, services.acl_store).start(Principal(platform, user))
    finally:
        services.close()
    out.print(url, markup=False)
    err.print(
        f"Send this to the user; it expires in {services.acl.link_state_ttl_seconds} s. "
        "After signing in they finish by sending the bot `link confirm CODE` from that chat "
        "account."
    )


@app.command()
def unlink(
    platform: Annotated[str, typer.Option(help="slack or teams")],
    user: Annotated[str, typer.Option(help="Chat user id")],
) -> None:
    """Remove a chat user's GitHub link: they read public repositories only from now on."""
    services = Services()
    try:
        removed = services.acl_store.unlink(platform, user)
    finally:
        services.close()
    out.print(f"Unlinked {platform}:{user}." if removed else f"{platform}:{user} was not linked.")


def main() -> None:
    try:
        app()
    except CodeaskError as exc:
        err.print("[red]error:[/] ", end="")
        err.print(str(exc), markup=False, highlight=False)  # a message may hold [brackets]
        sys.exit(2)


if __name__ == "__main__":
    main()
