"""``codeask db``: the metadata database's migrations (upgrade, current, check)."""

from __future__ import annotations

import importlib
import time
from typing import Annotated

import typer
from rich.console import Console
from sqlalchemy import MetaData
from sqlalchemy.engine import Engine

db_app = typer.Typer(no_args_is_help=True, help="The metadata database: migrations.")
out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)


# Every module that defines a table of the metadata database. A new table module goes here,
# or `codeask db check` cannot see its table (the migrations never import models).
TABLE_MODULES = (
    "indexer.jobs.registry",
    "acl.models",
    "bot.answer.records",
    "bot.chat.feedback",
)


def table_metadata() -> MetaData:
    """The metadata of every codeask table, whatever was imported before."""
    from sqlmodel import SQLModel

    for name in TABLE_MODULES:
        importlib.import_module(name)
    return SQLModel.metadata


def _engine() -> Engine:
    from indexer.db import open_engine
    from indexer.settings import IndexerSettings

    return open_engine(IndexerSettings().database_url)


@db_app.command()
def upgrade() -> None:
    """Migrate the database to this release's schema (adopting one made before migrations)."""
    from indexer.db import schema_state
    from indexer.db import upgrade as upgrade_to_head

    engine = _engine()
    try:
        before = schema_state(engine)
        after = upgrade_to_head(engine)
    finally:
        engine.dispose()
    if before.at_head:
        out.print(f"Already at head ({after.head}).")
    else:
        out.print(f"Upgraded from {before.current or 'none'} to {after.current} (head).")


@db_app.command()
def current(
    wait: Annotated[
        float,
        typer.Option(
            "--wait",
            metavar="SECONDS",
            help="Wait up to this long for the database to reach head (and to answer)",
        ),
    ] = 0.0,
) -> None:
    """Print the database's revision and whether it is at head (exit 1 when it is not)."""
    from indexer.db import UPGRADE_HINT, schema_state
    from indexer.errors import UpstreamUnavailable

    deadline = time.monotonic() + wait
    engine = _engine()
    try:
        while True:
            try:
                state = schema_state(engine)
            except UpstreamUnavailable:
                if time.monotonic() >= deadline:
                    raise
                state = None
            if state is not None and (state.at_head or time.monotonic() >= deadline):
                break
            if state is not None:
                err.print(f"Waiting for head ({state.describe()}): {UPGRADE_HINT}.")
            time.sleep(min(5.0, max(0.0, deadline - time.monotonic())))
    finally:
        engine.dispose()
    out.print(state.describe())
    if not state.at_head:
        err.print(f"Not at head: {UPGRADE_HINT}.")
        raise typer.Exit(1)


@db_app.command()
def check() -> None:
    """Fail when the table models and the migrations disagree (``alembic check``)."""
    from indexer.db import require_current, schema_drift

    engine = _engine()
    try:
        require_current(engine)
        drift = schema_drift(engine, table_metadata())
    finally:
        engine.dispose()
    if drift:
        for change in drift:
            err.print(f"  {change}", markup=False)
        err.print(
            f"[red]error:[/] the models differ from the migrations in {len(drift)} place(s): "
            "add a revision under indexer/migrations/versions"
        )
        raise typer.Exit(1)
    out.print("The migrations match the models.")
