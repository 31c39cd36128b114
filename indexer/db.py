"""The metadata database: the one engine every package shares, and its migrations.

One SQLAlchemy URL (``CODEASK_DATABASE_URL``; a SQLite file in the data dir by default,
PostgreSQL in production) holds the registry and job queue (:mod:`indexer.jobs.registry`),
access control (:mod:`acl.models`), and the bot's answers and feedback
(:mod:`bot.answer.records`, :mod:`bot.chat.feedback`). Each package keeps its own table
models next to the code that uses them; the schema itself is owned by the Alembic
revisions in ``indexer/migrations/versions``, which never import those models, so nothing
here depends on what happened to be imported. Comparing the models with a database
(:func:`schema_drift`, ``codeask db check``) takes their metadata from the caller: the
one list of table modules is at the top of the house (:mod:`bot.cli.db`), so this layer
never imports ``acl`` or ``bot``.

Nothing creates tables outside the migrations. Long-running processes (``serve``,
``worker``) refuse a database that is not at head (:func:`require_current`); the one-shot
commands (``index``, ``ask``, ``repo``...) go through :func:`open_database`, which
upgrades a SQLite file on the spot (one local file, the embedded default) and never
migrates PostgreSQL: there ``codeask db upgrade`` (the Helm pre-upgrade Job) does.

Alembic is imported only to migrate or compare: checking the revision is one query
against :data:`HEAD`, so a CLI command does not pay for it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, MetaData, create_engine, event, inspect, make_url, text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError
from sqlmodel import Session

from indexer.errors import ConfigError, UpstreamUnavailable

if TYPE_CHECKING:
    from alembic.config import Config
    from alembic.script import ScriptDirectory

MIGRATIONS = Path(__file__).with_name("migrations")
# The newest revision under migrations/versions (a test holds this to the scripts).
HEAD = "0003"
UPGRADE_HINT = "run `codeask db upgrade`"
# The last revision that only creates tables that code before migrations made with
# create_all: a database without alembic_version may hold any subset of them.
ADOPTABLE_REVISION = "0002"
_LOCK_KEY = 0x636F64656173  # "codeas": serialises concurrent upgrades on PostgreSQL


def open_engine(url: str) -> Engine:
    """The engine for ``url``; it creates nothing (see :func:`upgrade`)."""
    if not url:
        raise ConfigError("CODEASK_DATABASE_URL is empty")
    try:
        if url.startswith("sqlite"):
            path = _sqlite_path(url)
            if path is not None:
                path.parent.mkdir(parents=True, exist_ok=True)
            engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})
            _take_over_sqlite_transactions(engine)
        else:
            engine = create_engine(url, pool_pre_ping=True)
    except SQLAlchemyError as exc:
        raise UpstreamUnavailable(f"Cannot open the metadata database: {error_text(exc)}") from exc
    return engine


def open_database(url: str, *, migrate_sqlite: bool = True) -> Engine:
    """The engine for ``url``, at head: SQLite is upgraded here when asked, others must be."""
    engine = open_engine(url)
    try:
        if migrate_sqlite and is_sqlite(engine):
            if current_revision(engine) != HEAD:
                upgrade(engine)
        else:
            require_current(engine)
    except BaseException:
        engine.dispose()
        raise
    return engine


def is_sqlite(engine: Engine) -> bool:
    return engine.dialect.name == "sqlite"


@contextmanager
def write_session(engine: Engine) -> Iterator[Session]:
    """A session whose transaction holds the write lock from its start on SQLite.

    Objects stay readable after commit (no expiry), so callers can use what they wrote.
    """
    with Session(engine, expire_on_commit=False) as session:
        if is_sqlite(engine):
            session.connection(execution_options={"sqlite_immediate": True})
        yield session


# --- migrations -------------------------------------------------------------------------


@dataclass(frozen=True)
class SchemaState:
    """Where a database stands: its revision (None: none recorded) and this code's head."""

    current: str | None
    head: str
    tables: frozenset[str]  # codeask's tables present; only looked for without a revision

    @property
    def at_head(self) -> bool:
        return self.current == self.head

    @property
    def known(self) -> bool:
        """Whether this code has the database's revision (a newer release may not)."""
        return self.current is None or self.current in _revisions()

    def describe(self) -> str:
        if self.at_head:
            return f"{self.current} (head)"
        if self.current is None and self.tables:
            return f"none: tables from before migrations; head is {self.head}"
        if self.current is None:
            return f"none: empty database; head is {self.head}"
        if not self.known:
            return f"{self.current}: unknown to this codeask (a newer release migrated it)"
        return f"{self.current}; head is {self.head}"


def schema_state(engine: Engine) -> SchemaState:
    with _connect(engine) as conn:
        return _state(conn)


def current_revision(engine: Engine) -> str | None:
    """The revision recorded in the database (None: no migration history), in one query."""
    with _connect(engine) as conn:
        if not inspect(conn).has_table("alembic_version"):
            return None
        return conn.execute(text("SELECT version_num FROM alembic_version")).scalar()


def require_current(engine: Engine) -> None:
    """Raise ConfigError unless the database is at this code's head revision."""
    if current_revision(engine) != HEAD:
        state = schema_state(engine)
        raise ConfigError(
            f"The metadata database is not at head ({state.describe()}): {UPGRADE_HINT}"
        )


def upgrade(engine: Engine) -> SchemaState:
    """Bring the database to head in one transaction; a pre-migration database is adopted.

    A database made by ``create_all`` before migrations existed has no alembic_version.
    If each codeask table it has matches revision :data:`ADOPTABLE_REVISION` column for
    column, revisions 1 and 2 (which create tables only if absent) add what it lacks and
    record the revision; every row stays. Anything else is refused, never altered.
    """
    from alembic import command

    with _connect(engine, write=True) as conn:
        if conn.dialect.name == "postgresql":
            conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _LOCK_KEY})
        before = _state(conn)
        if not before.known:
            raise ConfigError(f"The metadata database is at {before.describe()}: upgrade codeask")
        if before.current is None and before.tables:
            _check_adoptable(conn, before.tables)
        if not before.at_head:
            command.upgrade(alembic_config(conn), "head")
        return _state(conn)


def schema_drift(engine: Engine, metadata: MetaData) -> list[Any]:
    """What autogenerate would change to match ``metadata`` (empty: ``alembic check`` passes).

    Only the tables ``metadata`` names are compared: a shared database may hold others.
    """
    from alembic.autogenerate import compare_metadata
    from alembic.runtime.migration import MigrationContext

    def ours(name: str | None, type_: str, _parents: object) -> bool:
        return type_ != "table" or name in metadata.tables

    with _connect(engine) as conn:
        context = MigrationContext.configure(
            conn, opts={"compare_type": True, "include_name": ours}
        )
        return list(compare_metadata(context, metadata))


def alembic_config(connection: Connection) -> Config:
    """Alembic's configuration, in code: no alembic.ini at run time."""
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("file_template", "v%%(rev)s_%%(slug)s")
    config.attributes["connection"] = connection
    return config


def _script() -> ScriptDirectory:
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    return ScriptDirectory.from_config(config)


def _revisions() -> set[str]:
    return {script.revision for script in _script().walk_revisions()}


def _state(conn: Connection) -> SchemaState:
    from alembic.runtime.migration import MigrationContext

    head = _script().get_current_head()
    assert head is not None
    current = MigrationContext.configure(conn).get_current_revision()
    tables: frozenset[str] = frozenset()
    if current is None:  # empty, or made before migrations: which of our tables are there?
        known = _adoptable_columns().keys()
        tables = frozenset(t for t in inspect(conn).get_table_names() if t in known)
    return SchemaState(current, head, tables)


def _check_adoptable(conn: Connection, tables: frozenset[str]) -> None:
    expected = _adoptable_columns()
    wrong = []
    for table in sorted(tables):
        found = {c["name"] for c in inspect(conn).get_columns(table)}
        if found != expected[table]:
            missing = ", ".join(sorted(expected[table] - found)) or "-"
            extra = ", ".join(sorted(found - expected[table])) or "-"
            wrong.append(f"{table} (missing: {missing}; unknown: {extra})")
    if wrong:
        raise ConfigError(
            "The metadata database has no migration history and tables that no codeask "
            f"release created: {'; '.join(wrong)}. Nothing was changed."
        )


_adoptable: dict[str, set[str]] = {}


def _adoptable_columns() -> dict[str, set[str]]:
    """Table → column names at :data:`ADOPTABLE_REVISION`, read off a scratch database."""
    if not _adoptable:
        from alembic import command

        scratch = create_engine("sqlite://")
        with scratch.begin() as conn:
            command.upgrade(alembic_config(conn), ADOPTABLE_REVISION)
            inspector = inspect(conn)
            for table in inspector.get_table_names():
                if table != "alembic_version":
                    _adoptable[table] = {c["name"] for c in inspector.get_columns(table)}
        scratch.dispose()
    return _adoptable


@contextmanager
def _connect(engine: Engine, *, write: bool = False) -> Iterator[Connection]:
    try:
        with engine.connect() as conn:
            if write and is_sqlite(engine):
                conn = conn.execution_options(sqlite_immediate=True)
            with conn.begin():
                yield conn
    except SQLAlchemyError as exc:
        raise UpstreamUnavailable(
            f"The metadata database is unreachable: {error_text(exc)}"
        ) from exc


def _sqlite_path(url: str) -> Path | None:
    database = make_url(url).database
    return Path(database) if database and database != ":memory:" else None


def _take_over_sqlite_transactions(engine: Engine) -> None:
    # pysqlite starts transactions lazily and never with IMMEDIATE; SQLAlchemy's documented
    # recipe: disable that, then emit BEGIN ourselves. A connection with the execution
    # option sqlite_immediate=True takes the write lock up front, so two workers claiming
    # jobs serialise instead of failing with "database is locked" on lock upgrade.
    @event.listens_for(engine, "connect")
    def _connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        # WAL lets readers go on while one writer writes; NORMAL skips an fsync per commit
        # (a power cut can lose the last commits, never corrupt the file).
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.execute("PRAGMA busy_timeout=30000")
        cur.close()

    @event.listens_for(engine, "begin")
    def _begin(conn: Any) -> None:
        immediate = conn.get_execution_options().get("sqlite_immediate", False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


def error_text(exc: Exception) -> str:
    """A driver error's first line: SQLAlchemy messages can carry the URL."""
    return str(getattr(exc, "orig", exc)).splitlines()[0][:200] if str(exc) else type(exc).__name__
