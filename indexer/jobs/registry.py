"""The repository registry: which repos are tracked, how fresh they are, and their jobs.

The same sqlmodel tables run on SQLite (the default file ``<data_dir>/codeask.meta.db``)
and PostgreSQL, on the engine of :mod:`indexer.db`, whose migrations own the schema.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

from sqlalchemy import Column, Index, String, Text, text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError
from sqlmodel import Field, Session, SQLModel, select

from indexer.db import error_text, write_session
from indexer.errors import InvalidInput, UpstreamUnavailable

# Repo.status values.
REPO_PENDING = "pending"  # registered, never indexed
REPO_READY = "ready"  # indexed; may be behind its branch until the queued job runs
REPO_ERROR = "error"  # the last index failed for good; the previous commit stays searchable
REPO_ARCHIVED = "archived"  # read-only on GitHub: kept searchable, not tracked
REPO_DELETING = "deleting"  # its chunks are being removed by a worker
REPO_NO_ACCESS = "no_access"  # the GitHub App lost access (installation_repositories)

# Job.kind and Job.status values.
KIND_INDEX, KIND_FULL, KIND_DELETE = "index", "full", "delete"
KIND_RANK = {KIND_INDEX: 0, KIND_FULL: 1, KIND_DELETE: 2}  # a merged job keeps the stronger
QUEUED, RUNNING, DONE, FAILED, SUPERSEDED = "queued", "running", "done", "failed", "superseded"


def utcnow() -> datetime:
    """Aware UTC, which sqlmodel's datetime columns require on every database."""
    return datetime.now(UTC)


class Repo(SQLModel, table=True):
    """A tracked GitHub repository and its freshness."""

    __tablename__ = "registry_repos"

    id: int | None = Field(default=None, primary_key=True)
    full_name: str = Field(sa_column=Column(String(200), unique=True, nullable=False))
    github_id: int | None = None
    visibility: str = "private"
    default_branch: str = "main"
    tracked_branch: str = "main"
    clone_url: str = ""
    include_globs: str = ""  # newline-separated gitwildmatch patterns; empty: everything
    exclude_globs: str = ""
    status: str = REPO_PENDING
    last_indexed_commit: str = ""
    last_indexed_at: datetime | None = None
    head_commit: str = ""  # newest commit seen on the tracked branch (push or reconcile)
    commits_behind: int | None = None  # pushed since the indexed commit; None: unknown
    chunk_count: int = 0
    last_error: str = Field(default="", sa_column=Column(Text, nullable=False, default=""))
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)

    @property
    def owner(self) -> str:
        return self.full_name.split("/", 1)[0]

    @property
    def name(self) -> str:
        return self.full_name.split("/", 1)[1]

    def globs(self) -> tuple[list[str], list[str]]:
        return _lines(self.include_globs), _lines(self.exclude_globs)


class IndexRun(SQLModel, table=True):
    """One attempt to index one repository."""

    __tablename__ = "registry_index_runs"

    id: int | None = Field(default=None, primary_key=True)
    repo: str = Field(index=True)
    job_id: int | None = None
    commit: str = ""
    started_at: datetime = Field(default_factory=utcnow)
    finished_at: datetime | None = None
    files: int = 0
    changed_files: int = 0
    chunks: int = 0
    embedded: int = 0
    seconds: float = 0.0
    full: bool = False
    outcome: str = "running"  # running | ok | failed
    error: str = Field(default="", sa_column=Column(Text, nullable=False, default=""))


class Job(SQLModel, table=True):
    """A unit of work for ``codeask worker``; at most one queued job per repository."""

    __tablename__ = "registry_jobs"
    __table_args__ = (
        # The de-duplication guarantee: a second queued job for a repo cannot exist, so
        # concurrent enqueuers merge into the one row (see jobs.enqueue).
        Index(
            "uq_registry_jobs_one_queued",
            "repo",
            unique=True,
            sqlite_where=text("status = 'queued'"),
            postgresql_where=text("status = 'queued'"),
        ),
        Index("ix_registry_jobs_take", "status", "not_before"),
    )

    id: int | None = Field(default=None, primary_key=True)
    repo: str = Field(index=True)
    kind: str = KIND_INDEX
    status: str = QUEUED
    commit: str = ""  # the head the job was enqueued for ('' = whatever the branch has)
    reason: str = ""  # push | register | reindex | reconcile | repository | retry
    attempts: int = 0
    not_before: datetime = Field(default_factory=utcnow)
    locked_by: str = ""
    heartbeat_at: datetime | None = None
    created_at: datetime = Field(default_factory=utcnow)
    finished_at: datetime | None = None
    last_error: str = Field(default="", sa_column=Column(Text, nullable=False, default=""))


class WebhookDelivery(SQLModel, table=True):
    """GitHub delivery ids already handled: a redelivery is acknowledged and ignored."""

    __tablename__ = "registry_webhook_deliveries"

    delivery_id: str = Field(primary_key=True, max_length=100)
    event: str = ""
    received_at: datetime = Field(default_factory=utcnow)


class RegistryEvent(SQLModel, table=True):
    """Something admins should hear about (repos added to or removed from the App)."""

    __tablename__ = "registry_events"

    id: int | None = Field(default=None, primary_key=True)
    kind: str
    repo: str = ""
    detail: str = Field(default="", sa_column=Column(Text, nullable=False, default=""))
    created_at: datetime = Field(default_factory=utcnow)


class AdminAction(SQLModel, table=True):
    """Audit trail of registry changes made through admin commands."""

    __tablename__ = "registry_admin_actions"

    id: int | None = Field(default=None, primary_key=True)
    actor: str  # platform-qualified chat id, e.g. slack:T1:U1, or cli:<login>
    action: str
    target: str = ""
    detail: str = Field(default="", sa_column=Column(Text, nullable=False, default=""))
    created_at: datetime = Field(default_factory=utcnow)


def check_repo_name(full_name: str) -> str:
    parts = full_name.strip().strip("/").split("/")
    if len(parts) != 2 or not all(parts) or any(not _name_ok(p) for p in parts):
        raise InvalidInput(f"{full_name!r} is not a repository name; use owner/name")
    return "/".join(parts)


def _name_ok(part: str) -> bool:
    return all(ch.isalnum() or ch in "-_." for ch in part) and part not in (".", "..")


class Registry:
    """Reads and simple writes of the repo table; the job queue lives in ``indexer.jobs.queue``."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def get(self, full_name: str) -> Repo | None:
        with Session(self.engine) as s:
            return s.exec(select(Repo).where(Repo.full_name == full_name)).first()

    def all(self) -> list[Repo]:
        with Session(self.engine) as s:
            return list(s.exec(select(Repo).order_by(Repo.full_name)))

    def save(self, repo: Repo) -> Repo:
        repo.updated_at = utcnow()
        with write_session(self.engine) as s:
            s.add(repo)
            s.commit()
            s.refresh(repo)
            return repo

    def delete(self, full_name: str) -> None:
        with write_session(self.engine) as s:
            repo = s.exec(select(Repo).where(Repo.full_name == full_name)).first()
            if repo is not None:
                s.delete(repo)
                s.commit()

    def runs(self, full_name: str, limit: int = 5) -> list[IndexRun]:
        with Session(self.engine) as s:
            q = select(IndexRun).where(IndexRun.repo == full_name)
            return list(s.exec(q.order_by(IndexRun.id.desc()).limit(limit)))  # type: ignore[union-attr]

    def record_event(self, kind: str, repo: str = "", detail: str = "") -> None:
        with write_session(self.engine) as s:
            s.add(RegistryEvent(kind=kind, repo=repo, detail=detail))
            s.commit()

    def events(self, limit: int = 10) -> list[RegistryEvent]:
        with Session(self.engine) as s:
            q = select(RegistryEvent).order_by(RegistryEvent.id.desc())  # type: ignore[union-attr]
            return list(s.exec(q.limit(limit)))

    def audit(self, actor: str, action: str, target: str = "", detail: str = "") -> None:
        with write_session(self.engine) as s:
            s.add(AdminAction(actor=actor, action=action, target=target, detail=detail))
            s.commit()

    def ping(self) -> None:
        """Raise UpstreamUnavailable unless the database answers."""
        try:
            with self.engine.connect() as conn:
                conn.execute(text("SELECT 1"))
        except SQLAlchemyError as exc:
            raise UpstreamUnavailable(
                f"The metadata database is unreachable: {error_text(exc)}"
            ) from exc


def age_text(when: datetime | None, now: float | None = None) -> str:
    """'3 min ago' style freshness for chat output."""
    if when is None:
        return "never"
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    seconds = (now if now is not None else time.time()) - when.timestamp()
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{int(seconds // size)} {unit} ago"
    return "just now"


def _lines(value: str) -> list[str]:
    return [line.strip() for line in value.splitlines() if line.strip()]
