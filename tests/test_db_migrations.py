"""The metadata database's migrations, on SQLite and PostgreSQL.

A database made by the code before migrations (commit ad335cc: ``create_all``, rows in
every table, tests/fixtures/meta_ad335cc) upgrades with ``codeask db upgrade`` and keeps
every row; ``codeask serve`` and ``codeask worker`` refuse it until then; the migrations
and the table models agree (``codeask db check``, autogenerate's diff is empty).
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from sqlalchemy import create_engine, inspect, make_url, text
from sqlalchemy.engine import Engine
from typer.testing import CliRunner

from acl import Place, Principal
from bot.answer import Source
from bot.answer.records import load_answer, record_answer
from bot.chat.feedback import feedback_for
from bot.cli.app import app
from bot.cli.db import TABLE_MODULES, table_metadata
from bot.services import Services
from indexer import db
from indexer.errors import ConfigError
from indexer.jobs import KIND_INDEX, Registry
from indexer.jobs import queue as jobs
from indexer.models import Chunk
from indexer.settings import IndexerSettings
from tests.conftest import DATABASES, PG_URL

FIXTURE = Path(__file__).parent / "fixtures" / "meta_ad335cc"
OLD_TABLES = 14  # every table ad335cc created; revision 0002 adds bot_answers


def _fresh_pg(name: str) -> str:
    """The URL of a new, empty PostgreSQL database next to the test one."""
    admin = create_engine(make_url(PG_URL).set(database="postgres"), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    return make_url(PG_URL).set(database=name).render_as_string(hide_password=False)


@pytest.fixture(params=DATABASES)
def empty_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'meta.db'}"
    return _fresh_pg("codeask_migrations")


@pytest.fixture
def old_url(empty_url: str) -> str:
    """A database as ad335cc left it: its tables, its rows, no migration history."""
    if empty_url.startswith("sqlite"):
        path = make_url(empty_url).database
        assert path is not None
        with sqlite3.connect(path) as conn:
            conn.executescript((FIXTURE / "sqlite.sql").read_text())
    else:
        plain = make_url(empty_url).set(drivername="postgresql")
        with psycopg.connect(plain.render_as_string(hide_password=False)) as conn:
            conn.execute((FIXTURE / "postgresql.sql").read_text())  # type: ignore[arg-type]
    return empty_url


@pytest.fixture
def engine(old_url: str) -> Iterator[Engine]:
    eng = db.open_engine(old_url)
    yield eng
    eng.dispose()


def _rows(engine: Engine) -> dict[str, list[tuple[object, ...]]]:
    """Every row of every codeask table, in a stable order."""
    with engine.connect() as conn:
        names = [t for t in inspect(conn).get_table_names() if t != "alembic_version"]
        return {
            t: [tuple(r) for r in conn.execute(text(f"SELECT * FROM {t} ORDER BY 1, 2"))]
            for t in names
        }


def _cli(url: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CODEASK_DATABASE_URL": url, "CODEASK_PORT": "0", "HF_HUB_OFFLINE": "1"}
    return subprocess.run(
        [sys.executable, "-m", "bot.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_every_table_model_is_in_the_list_db_check_compares() -> None:
    root = Path(__file__).resolve().parent.parent
    defining = {
        ".".join(path.relative_to(root).with_suffix("").parts)
        for package in ("indexer", "acl", "bot")
        for path in (root / package).rglob("*.py")
        if "SQLModel, table=True" in path.read_text()
    }
    assert defining == set(TABLE_MODULES)


def test_the_head_the_code_checks_for_is_the_newest_revision() -> None:
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    config = Config()
    config.set_main_option("script_location", str(db.MIGRATIONS))
    assert ScriptDirectory.from_config(config).get_current_head() == db.HEAD


def test_a_database_from_before_migrations_upgrades_with_every_row_kept(
    old_url: str, engine: Engine, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = _rows(engine)
    assert len(before) == OLD_TABLES and all(before.values()), "the fixture fills every table"
    monkeypatch.setenv("CODEASK_DATABASE_URL", old_url)

    # serve and worker refuse it, naming the command that fixes it, and change nothing.
    for command in (["serve"], ["worker", "--once"]):
        done = _cli(old_url, *command)
        assert done.returncode != 0, done.stderr
        assert "codeask db upgrade" in done.stderr and "Traceback" not in done.stderr
    status = CliRunner().invoke(app, ["db", "current"])
    assert status.exit_code == 1 and "tables from before migrations" in status.stdout
    assert _rows(engine) == before

    result = CliRunner().invoke(app, ["db", "upgrade"])
    assert result.exit_code == 0, result.output
    assert f"Upgraded from none to {db.HEAD} (head)" in result.stdout
    after = _rows(engine)
    assert {t: after[t] for t in before} == before  # every row, every value
    assert after["bot_answers"] == []
    assert CliRunner().invoke(app, ["db", "current"]).exit_code == 0
    assert (
        db.schema_drift(engine, table_metadata()) == []
    )  # the adopted schema is the models' schema
    again = CliRunner().invoke(app, ["db", "upgrade"])
    assert again.exit_code == 0 and "Already at head" in again.stdout

    # The running code reads the old rows and keeps their constraints.
    services = Services(indexer=IndexerSettings(), migrate=False)
    try:
        repo = services.registry.get("acme/payments")
        assert repo is not None and repo.tracked_branch == "release"
        assert repo.globs() == (["src/**", "docs/*.md"], ["vendor/**"])
        link = services.acl_store.identity("slack", "T1:U1")
        assert link is not None and link.github_user_id == 9_007_199_254
        assert services.acl_store.channel_grants("slack", "C42") == {"acme/payments"}
        assert [f.verdict for f in feedback_for(services.engine, "q-1")] == ["helpful"]
        queued = jobs.enqueue(services.engine, "acme/site", KIND_INDEX, reason="push")
        assert queued.id == 2  # merged into the job ad335cc queued, not a second one
        services.acl_store.grant("slack", "C42", "acme/payments")  # already there: no copy
        assert len(_rows(engine)["acl_channel_grants"]) == 1
        chunk = Chunk(
            "acme/payments", "src/retry.py", 3, 9, "def retry(): ...", "retry", "python", "source"
        )
        asker = Principal("slack", "T1:U1")
        record_answer(services.engine, "q-2", asker, Place("dm"), "why?", [Source(1, chunk, 0.5)])
        stored = load_answer(services.engine, "q-2")
        assert stored is not None and stored.sources[0].chunk == chunk
    finally:
        services.close()


def test_a_new_database_migrates_to_what_the_models_say(empty_url: str) -> None:
    engine = db.open_engine(empty_url)
    try:
        assert db.schema_state(engine).describe().startswith("none: empty database")
        with pytest.raises(ConfigError, match="codeask db upgrade"):
            db.require_current(engine)
        state = db.upgrade(engine)
        assert state.at_head and state.current == db.HEAD
        db.require_current(engine)
        assert db.schema_drift(engine, table_metadata()) == []
        Registry(engine).ping()
    finally:
        engine.dispose()


def test_one_shot_commands_migrate_sqlite_and_never_postgresql(empty_url: str) -> None:
    if empty_url.startswith("sqlite"):
        engine = db.open_database(empty_url)  # what `codeask index` / `ask` do on first run
        assert db.current_revision(engine) == db.HEAD
        engine.dispose()
        return
    with pytest.raises(ConfigError, match="codeask db upgrade"):
        db.open_database(empty_url)
    engine = db.open_engine(empty_url)
    assert inspect(engine).get_table_names() == []  # refused, and nothing was created
    engine.dispose()


def test_tables_no_release_made_are_refused_and_left_alone(empty_url: str, tmp_path: Path) -> None:
    engine = db.open_engine(empty_url)
    try:
        with engine.begin() as conn:
            conn.execute(text("CREATE TABLE registry_repos (id INTEGER PRIMARY KEY, owner TEXT)"))
            conn.execute(text("INSERT INTO registry_repos VALUES (1, 'acme')"))
        with pytest.raises(ConfigError, match=r"registry_repos \(missing: .*unknown: owner\)"):
            db.upgrade(engine)
        assert _rows(engine) == {"registry_repos": [(1, "acme")]}  # nothing created or lost
    finally:
        engine.dispose()


def test_a_database_a_newer_release_migrated_is_refused(empty_url: str) -> None:
    engine = db.open_engine(empty_url)
    try:
        db.upgrade(engine)
        with engine.begin() as conn:
            conn.execute(text("UPDATE alembic_version SET version_num = '9999'"))
        with pytest.raises(ConfigError, match=r"unknown to this codeask.*upgrade codeask"):
            db.upgrade(engine)
        with pytest.raises(ConfigError, match="not at head"):
            db.require_current(engine)
    finally:
        engine.dispose()


def test_db_check_fails_when_a_model_gains_a_column_without_a_revision(
    empty_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sqlalchemy import Column, String

    engine = db.open_engine(empty_url)
    db.upgrade(engine)
    engine.dispose()
    monkeypatch.setenv("CODEASK_DATABASE_URL", empty_url)
    assert CliRunner().invoke(app, ["db", "check"]).exit_code == 0
    table = table_metadata().tables["registry_repos"]
    column = Column("owner_team", String(), nullable=True)
    table.append_column(column)
    try:
        result = CliRunner().invoke(app, ["db", "check"])
    finally:
        table._columns.remove(column)  # the shared metadata goes back as it was
    assert result.exit_code == 1
    assert "owner_team" in result.stderr and "add a revision" in result.stderr


def test_db_current_wait_returns_once_the_database_is_migrated(empty_url: str) -> None:
    """What the pods' init container runs while the Helm hook Job migrates."""
    env = {**os.environ, "CODEASK_DATABASE_URL": empty_url}
    waiting = subprocess.Popen(
        [sys.executable, "-m", "bot.cli", "db", "current", "--wait", "120"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert waiting.stderr is not None
        first = waiting.stderr.readline()  # it has looked once and found no migrations
        assert "Waiting for head (none: empty database" in first
        engine = db.open_engine(empty_url)
        db.upgrade(engine)
        engine.dispose()
        out, err = waiting.communicate(timeout=60)
    finally:
        waiting.kill()
    assert waiting.returncode == 0, err
    assert f"{db.HEAD} (head)" in out
    other = (
        empty_url.replace("meta.db", "other.db")
        if empty_url.startswith("sqlite")
        else _fresh_pg("codeask_migrations_other")
    )
    gave_up = _cli(other, "db", "current", "--wait", "0.5")
    assert gave_up.returncode == 1 and "Not at head: run `codeask db upgrade`" in gave_up.stderr
