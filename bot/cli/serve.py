"""The service commands of the ``codeask`` CLI: serve, worker, reconcile and repo admin."""

from __future__ import annotations

import functools
import getpass
import logging
import shlex
import signal
import sys
import threading
from typing import Annotated

import typer
from rich.console import Console

err = Console(stderr=True)
out = Console(highlight=False, soft_wrap=True)


def _logging() -> None:
    fmt = "%(asctime)s %(levelname)s %(name)s: %(message)s"
    logging.basicConfig(level=logging.INFO, format=fmt, stream=sys.stderr)
    logging.getLogger("alembic").setLevel(logging.WARNING)  # its INFO lines are per step


def serve() -> None:
    """Run the Slack, Teams and GitHub webhook endpoints (never indexes; see `worker`)."""
    from bot.chat import Mount
    from bot.server import run
    from bot.services import Services
    from bot.slack import slack_mount
    from bot.teams import mount_teams

    _logging()
    services = Services(migrate=False)
    services.engine  # noqa: B018  refuses a database that is not migrated, before anything loads
    asker = services.asker  # one answer pipeline (one embedding model) for every adapter
    # The models load before the port opens, so the first question does not pay for them
    # and a missing export stops the start with its message, not a question.
    services.embedder  # noqa: B018
    services.reranker  # noqa: B018
    # Chat adapters add their routes here: mounts.append(mount_slack), ...
    mounts: list[Mount] = [slack_mount(asker), functools.partial(mount_teams, asker=asker)]
    err.print(f"codeask serve on http://{services.bot.host}:{services.bot.port}")
    run(services, mounts=mounts)


def worker(
    once: Annotated[bool, typer.Option("--once", help="Exit when the queue is empty")] = False,
) -> None:
    """Take indexing jobs from the queue until stopped (several workers may run at once)."""
    from bot.metrics import metrics_listener
    from bot.services import Services
    from indexer.jobs import Worker, WorkerConfig

    _logging()
    services = Services(migrate=False)
    services.engine  # noqa: B018  refuses a database that is not migrated, before anything loads
    work = Worker(
        services.engine,
        services.store,
        services.embedder,
        services.embedding_cache,
        WorkerConfig.from_settings(services.indexer),
        token=services.git_token,
        on_job=services.metrics.job,
    )
    listener = metrics_listener(services.metrics)
    stop = threading.Event()

    def on_signal(signum: int, _frame: object) -> None:
        # Finish the job in hand, then exit; a second signal kills (the job is retaken).
        stop.set()
        signal.signal(signum, signal.SIG_DFL)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    logging.getLogger("indexer.jobs.worker").info("worker %s started", work.worker_id)
    done = work.run(stop, once=once)
    if listener is not None:
        listener.shutdown()
    services.close()
    if once:
        err.print(f"{done} job(s) processed")


def reconcile() -> None:
    """Queue an index job for every repo whose branch moved without a webhook (for a CronJob)."""
    from bot.server import run_reconcile
    from bot.services import Services

    _logging()
    services = Services()
    drifts = run_reconcile(services)
    for d in drifts:
        state = "queued" if d.queued else d.error or "already queued"
        out.print(f"{d.repo}: indexed {d.indexed[:12] or '-'}, head {d.head[:12] or '-'}: {state}")
    if not drifts:
        out.print("Every tracked repository is up to date.")


def repo(ctx: typer.Context) -> None:
    """Repository admin: add|list|remove|reindex|status (same as the chat commands)."""
    from bot.chat import Invoker, commands_for
    from bot.services import Services

    args = list(ctx.args)
    words = args if args and args[0] == "status" else ["repo", *args]
    services = Services()
    invoker = Invoker("cli", getpass.getuser())
    result = commands_for(services).run(invoker, shlex.join(words))
    if result.error:
        err.print(f"[red]error:[/] {result.text}", markup=True, highlight=False)
        raise typer.Exit(2)
    out.print(result.text, markup=False)


def register(app: typer.Typer) -> None:
    app.command()(serve)
    app.command()(worker)
    app.command()(reconcile)
    app.command(
        context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
        help="Repository admin: repo add OWNER/NAME [--branch B] | list | remove | reindex "
        "| status",
    )(repo)
