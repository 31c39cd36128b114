"""The indexing job queue in the metadata database.

Several workers may run side by side. On PostgreSQL a worker claims a job with
``SELECT … FOR UPDATE SKIP LOCKED``; on SQLite every claim runs in a ``BEGIN IMMEDIATE``
transaction, which serialises claimers on one machine. A running job whose heartbeat is
older than ``stale_after`` belongs to a dead worker and is claimed again. At most one job
per repository runs at a time, and at most one is queued: a newer request merges into it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import and_, or_
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from indexer.db import is_sqlite, write_session
from indexer.jobs.registry import (
    DONE,
    FAILED,
    KIND_RANK,
    QUEUED,
    RUNNING,
    SUPERSEDED,
    Job,
    utcnow,
)


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int = 5
    base_seconds: float = 5.0
    max_seconds: float = 600.0

    def delay(self, attempts: int) -> float:
        """Exponential backoff after the ``attempts``-th failure."""
        return float(min(self.max_seconds, self.base_seconds * 2 ** max(0, attempts - 1)))


def enqueue(engine: Engine, repo: str, kind: str, *, commit: str = "", reason: str = "") -> Job:
    """Queue work for ``repo``; a job already queued for it absorbs this one."""
    for _ in range(3):
        try:
            with write_session(engine) as s:
                job = s.exec(select(Job).where(Job.repo == repo, Job.status == QUEUED)).first()
                if job is None:
                    job = Job(repo=repo, kind=kind, commit=commit, reason=reason)
                else:
                    # The newer push supersedes: its commit wins, the stronger kind stays.
                    if KIND_RANK[kind] > KIND_RANK[job.kind]:
                        job.kind = kind
                    job.commit = commit or job.commit
                    job.reason = reason or job.reason
                    job.not_before = min(job.not_before, utcnow())
                s.add(job)
                s.commit()
                s.refresh(job)
                return job
        except IntegrityError:
            continue  # a concurrent enqueuer inserted the queued row first; merge into it
    raise RuntimeError(f"could not enqueue a job for {repo}")


def claim(
    engine: Engine,
    worker_id: str,
    stale_after: float,
    max_attempts: int = RetryPolicy.max_attempts,
    on_abandoned: Callable[[Job], None] | None = None,
) -> Job | None:
    """Take the next runnable job for ``worker_id``, or None when there is nothing to do.

    A job whose worker stopped heart-beating is taken over, unless it has already used
    ``max_attempts``: a job that kills every worker running it (out of memory, evicted)
    would otherwise run forever. It is failed instead and handed to ``on_abandoned``
    once this claim has committed.
    """
    now = utcnow()
    stale = now - timedelta(seconds=stale_after)
    abandoned: list[Job] = []
    try:
        return _claim(engine, worker_id, now, stale, max_attempts, abandoned)
    finally:
        for job in abandoned:
            if on_abandoned is not None:
                on_abandoned(job)


def _claim(
    engine: Engine,
    worker_id: str,
    now: datetime,
    stale: datetime,
    max_attempts: int,
    abandoned: list[Job],
) -> Job | None:
    with write_session(engine) as s:
        runnable = or_(
            and_(col(Job.status) == QUEUED, col(Job.not_before) <= now),
            and_(col(Job.status) == RUNNING, col(Job.heartbeat_at) < stale),
        )
        q = select(Job).where(runnable).order_by(col(Job.not_before), col(Job.id)).limit(20)
        if not is_sqlite(engine):
            q = q.with_for_update(skip_locked=True)
        for job in s.exec(q).all():
            if job.status == RUNNING and job.attempts >= max_attempts:
                job.status, job.finished_at, job.locked_by = FAILED, now, ""
                job.last_error = (
                    f"the worker running it stopped {job.attempts} times without finishing "
                    "(killed, out of memory or evicted?)"
                )
                s.add(job)
                s.commit()
                s.refresh(job)
                abandoned.append(job)
                return None  # the rows fetched with it are no longer locked: claim again
            if _repo_busy(s, engine, job, stale):
                continue
            job.status = RUNNING
            job.locked_by = worker_id
            job.heartbeat_at = now
            job.attempts += 1
            s.add(job)
            s.commit()
            s.refresh(job)
            return job
        s.rollback()
        return None


def _repo_busy(s: Session, engine: Engine, job: Job, stale: datetime) -> bool:
    """Another live worker is on this repo (checked under a per-repo lock on PostgreSQL)."""
    if not is_sqlite(engine):
        # Serialise claimers of one repo so a stale job and a queued job of the same repo
        # are never taken by two workers at once; the re-check below sees committed claims.
        s.connection().exec_driver_sql(
            "SELECT pg_advisory_xact_lock(hashtext(%(repo)s))", {"repo": job.repo}
        )
    other = s.exec(
        select(Job.id).where(
            Job.repo == job.repo,
            Job.id != job.id,
            Job.status == RUNNING,
            col(Job.heartbeat_at) >= stale,
        )
    ).first()
    if other is not None:
        return True
    if job.status == RUNNING:
        return False
    fresh = s.get(Job, job.id, populate_existing=True)  # READ COMMITTED: see the latest claim
    return fresh is None or fresh.status != QUEUED


def heartbeat(engine: Engine, job_id: int, worker_id: str) -> bool:
    """Refresh the lease; False when the job was taken over or finished meanwhile."""
    with write_session(engine) as s:
        job = s.get(Job, job_id)
        if job is None or job.status != RUNNING or job.locked_by != worker_id:
            return False
        job.heartbeat_at = utcnow()
        s.add(job)
        s.commit()
        return True


def finish(engine: Engine, job_id: int, worker_id: str) -> bool:
    """Mark done; False when another worker owns the job now (its result wins)."""
    with write_session(engine) as s:
        job = s.get(Job, job_id)
        if job is None or job.locked_by != worker_id or job.status != RUNNING:
            return False
        job.status, job.finished_at, job.last_error = DONE, utcnow(), ""
        s.add(job)
        s.commit()
        return True


def fail(
    engine: Engine, job_id: int, worker_id: str, error: str, policy: RetryPolicy
) -> Job | None:
    """Record a failure: back to the queue after a backoff, or failed for good."""
    for _ in range(3):
        try:
            return _fail(engine, job_id, worker_id, error, policy)
        except IntegrityError:
            # A push queued a newer job between the check and the commit (PostgreSQL, no
            # table lock): done again, that job is found and supersedes this one.
            continue
    return _fail(engine, job_id, worker_id, error, policy)


def _fail(
    engine: Engine, job_id: int, worker_id: str, error: str, policy: RetryPolicy
) -> Job | None:
    with write_session(engine) as s:
        job = s.get(Job, job_id)
        if job is None or job.locked_by != worker_id or job.status != RUNNING:
            return None
        job.last_error = error[:2000]
        job.locked_by = ""
        if job.attempts >= policy.max_attempts:
            job.status, job.finished_at = FAILED, utcnow()
        else:
            newer = s.exec(select(Job).where(Job.repo == job.repo, Job.status == QUEUED)).first()
            if newer is not None:
                # A newer request is already waiting; it covers this one.
                if KIND_RANK[job.kind] > KIND_RANK[newer.kind]:
                    newer.kind = job.kind
                    s.add(newer)
                job.status, job.finished_at = SUPERSEDED, utcnow()
            else:
                job.status = QUEUED
                job.not_before = utcnow() + timedelta(seconds=policy.delay(job.attempts))
        s.add(job)
        s.commit()
        s.refresh(job)
        return job


def cancel_queued(engine: Engine, repo: str) -> int:
    """Drop the queued job of ``repo``; a running one finishes (a later delete job waits)."""
    with write_session(engine) as s:
        jobs = s.exec(select(Job).where(Job.repo == repo, Job.status == QUEUED)).all()
        for job in jobs:
            s.delete(job)
        s.commit()
        return len(jobs)


def pending(engine: Engine, repo: str | None = None) -> list[Job]:
    """Queued and running jobs, oldest first."""
    with Session(engine) as s:
        q = select(Job).where(col(Job.status).in_([QUEUED, RUNNING]))
        if repo is not None:
            q = q.where(Job.repo == repo)
        return list(s.exec(q.order_by(col(Job.id))))


def recent(engine: Engine, repo: str, limit: int = 5) -> list[Job]:
    with Session(engine) as s:
        q = select(Job).where(Job.repo == repo).order_by(col(Job.id).desc()).limit(limit)
        return list(s.exec(q))
