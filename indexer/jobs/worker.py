"""``codeask worker``: take indexing jobs from the queue, sync the repo, index it.

A repository moves to a new commit in the registry only after ``index_repository`` has
written every chunk (which itself switches the store's state atomically), so a worker
killed at any point leaves the previous commit searchable; its job's heartbeat goes
stale and another worker takes it again.
"""

from __future__ import annotations

import logging
import os
import shutil
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy.engine import Engine
from sqlmodel import select

from indexer.db import write_session
from indexer.embedding import Embedder, EmbeddingCache
from indexer.errors import CodeaskError, IndexingError
from indexer.jobs import queue as jobs
from indexer.jobs.indexing import IndexReport, index_repository
from indexer.jobs.registry import (
    FAILED,
    KIND_DELETE,
    KIND_FULL,
    REPO_ARCHIVED,
    REPO_DELETING,
    REPO_ERROR,
    REPO_READY,
    IndexRun,
    Job,
    Repo,
    utcnow,
)
from indexer.settings import IndexerSettings
from indexer.source import clone_or_update
from indexer.stores import SearchBackend

log = logging.getLogger(__name__)

TokenProvider = Callable[[], str]  # a fresh GitHub token for git over HTTPS ('' for none)
# Told of every job run: its kind, how it ended (done, retry, failed) and its seconds.
JobObserver = Callable[[str, str, float], None]


class LeaseLost(IndexingError):
    """The job's lease ran out or was taken over while this worker was running it."""


@dataclass
class WorkerConfig:
    repos_dir: Path
    max_file_bytes: int = 1_000_000
    poll_seconds: float = 2.0
    heartbeat_seconds: float = 10.0
    stale_seconds: float = 60.0
    retry: jobs.RetryPolicy = field(default_factory=jobs.RetryPolicy)

    @classmethod
    def from_settings(cls, settings: IndexerSettings) -> WorkerConfig:
        return cls(
            repos_dir=settings.repos_dir,
            max_file_bytes=settings.max_file_bytes,
            poll_seconds=settings.worker_poll_seconds,
            heartbeat_seconds=settings.worker_heartbeat_seconds,
            stale_seconds=settings.worker_stale_seconds,
            retry=jobs.RetryPolicy(
                max_attempts=settings.worker_max_attempts,
                base_seconds=settings.worker_backoff_seconds,
            ),
        )


class Worker:
    """Runs jobs one at a time; start several processes to work in parallel."""

    def __init__(
        self,
        engine: Engine,
        store: SearchBackend,
        embedder: Embedder,
        cache: EmbeddingCache,
        config: WorkerConfig,
        *,
        token: TokenProvider = lambda: "",
        worker_id: str = "",
        on_job: JobObserver | None = None,
    ) -> None:
        self.engine = engine
        self.store = store
        self.embedder = embedder
        self.cache = cache
        self.config = config
        self.token = token
        self.worker_id = worker_id or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self._lease_lost = threading.Event()  # set by the heartbeat of the running job
        self.on_job = on_job

    def run(self, stop: threading.Event, once: bool = False) -> int:
        """Work until ``stop`` is set (or, with ``once``, until the queue is empty)."""
        done = 0
        while not stop.is_set():
            try:
                job = self.run_one()
            except Exception:
                # The queue's database failing (down, a conflict) must not end the worker:
                # its job's lease runs out and the job is taken again.
                log.exception("worker %s: the job queue failed; trying again", self.worker_id)
                if once:
                    raise
                stop.wait(self.config.poll_seconds)
                continue
            if job is not None:
                done += 1
                continue
            if once:
                break
            stop.wait(self.config.poll_seconds)
        return done

    def run_one(self) -> Job | None:
        """Claim and run one job; None when no job is runnable now."""
        job = jobs.claim(
            self.engine,
            self.worker_id,
            self.config.stale_seconds,
            self.config.retry.max_attempts,
            on_abandoned=lambda lost: self._mark_repo_error(lost.repo, lost.last_error),
        )
        if job is None:
            return None
        assert job.id is not None
        log.info("job %s: %s %s (attempt %s)", job.id, job.kind, job.repo, job.attempts)
        beat_stop = threading.Event()
        self._lease_lost = threading.Event()
        beat = threading.Thread(target=self._heartbeat, args=(job.id, beat_stop), daemon=True)
        beat.start()
        started = time.monotonic()
        try:
            if job.kind == KIND_DELETE:
                self._delete(job)
            else:
                self._index(job)
        except Exception as exc:
            # Any failure, expected or a bug, goes back to the queue with backoff: the worker
            # itself must keep serving other repositories.
            message = str(exc) if isinstance(exc, CodeaskError) else f"{type(exc).__name__}: {exc}"
            log.warning(
                "job %s failed: %s", job.id, message, exc_info=not isinstance(exc, CodeaskError)
            )
            after = jobs.fail(self.engine, job.id, self.worker_id, message, self.config.retry)
            failed = after is not None and after.status == FAILED
            if failed:
                self._mark_repo_error(job.repo, message)
            self._observe(job, "failed" if failed else "retry", started)
            return job
        finally:
            beat_stop.set()
            beat.join()
        jobs.finish(self.engine, job.id, self.worker_id)
        self._observe(job, "done", started)
        return job

    def _observe(self, job: Job, result: str, started: float) -> None:
        if self.on_job is not None:
            self.on_job(job.kind, result, time.monotonic() - started)

    def _heartbeat(self, job_id: int, stop: threading.Event) -> None:
        last_beat = time.monotonic()
        while not stop.wait(self.config.heartbeat_seconds):
            try:
                if not jobs.heartbeat(self.engine, job_id, self.worker_id):
                    log.warning("job %s was taken over by another worker", job_id)
                    self._lease_lost.set()
                    return
                last_beat = time.monotonic()
            except Exception:  # a missed beat is retried on the next tick
                log.warning("heartbeat for job %s failed", job_id, exc_info=True)
                if time.monotonic() - last_beat >= self.config.stale_seconds:
                    # Long enough for another worker to have taken the job over.
                    log.warning("job %s: lease lapsed while the queue was unreachable", job_id)
                    self._lease_lost.set()
                    return

    def _check_lease(self, stage: str, done: int, total: int) -> None:
        """Stop a run whose job another worker may own now, before it writes anything more."""
        if self._lease_lost.is_set():
            raise LeaseLost("this worker lost the job's lease; another worker owns it now")

    # --- job kinds ------------------------------------------------------------------

    def _index(self, job: Job) -> None:
        with write_session(self.engine) as s:
            repo = s.exec(select(Repo).where(Repo.full_name == job.repo)).first()
            if repo is None or repo.status == REPO_DELETING:
                return  # removed after the job was queued: nothing to do
            for dead in s.exec(
                select(IndexRun).where(IndexRun.job_id == job.id, IndexRun.outcome == "running")
            ):
                # A previous holder of this job died mid-run; its partial work was never
                # committed to the store.
                dead.outcome, dead.error, dead.finished_at = "abandoned", "worker died", utcnow()
                s.add(dead)
            run = IndexRun(repo=job.repo, job_id=job.id, commit=job.commit)
            s.add(run)
            s.commit()
            s.refresh(run)
            s.expunge(repo)
        try:
            report = self._sync_and_index(repo, force=job.kind == KIND_FULL)
        except Exception as exc:
            self._close_run(run.id, None, str(exc))
            raise
        self._close_run(run.id, report, "")
        self._check_lease("registry", 0, 1)
        state = self.store.repo_state(job.repo)
        with write_session(self.engine) as s:
            fresh = s.exec(select(Repo).where(Repo.full_name == job.repo)).first()
            if fresh is None:
                return
            fresh.last_indexed_commit = report.commit
            fresh.last_indexed_at = utcnow()
            if not fresh.head_commit or fresh.head_commit == job.commit:
                fresh.head_commit = report.commit  # what the branch had when we fetched
            if fresh.head_commit == report.commit:
                fresh.commits_behind = 0
            fresh.chunk_count = state.chunk_count if state else report.chunks
            if fresh.status not in (REPO_DELETING, REPO_ARCHIVED):
                fresh.status = REPO_READY
            fresh.last_error = ""
            fresh.updated_at = utcnow()
            s.add(fresh)
            s.commit()
        log.info(
            "indexed %s at %s: %s changed files, %s chunks, %.1f s",
            job.repo,
            report.commit[:12],
            report.changed_files,
            report.chunks,
            report.seconds,
        )
        if report.full_reason:
            log.warning("re-indexed %s in full: %s", job.repo, report.full_reason)

    def _sync_and_index(self, repo: Repo, *, force: bool) -> IndexReport:
        if not repo.clone_url:
            raise IndexingError(f"{repo.full_name} has no clone URL; register it again")
        dest = self.config.repos_dir / repo.owner / repo.name
        root = clone_or_update(repo.clone_url, dest, repo.tracked_branch, token=self.token())
        include, exclude = repo.globs()
        return index_repository(
            root,
            repo.full_name,
            self.store,
            self.embedder,
            self.cache,
            visibility=repo.visibility,
            max_file_bytes=self.config.max_file_bytes,
            force=force,
            include=include,
            exclude=exclude,
            progress=self._check_lease,
        )

    def _delete(self, job: Job) -> None:
        self.store.delete_repo(job.repo)
        owner, _, name = job.repo.partition("/")
        shutil.rmtree(self.config.repos_dir / owner / name, ignore_errors=True)
        with write_session(self.engine) as s:
            repo = s.exec(select(Repo).where(Repo.full_name == job.repo)).first()
            if repo is not None and repo.status == REPO_DELETING:
                s.delete(repo)
                s.commit()

    # --- bookkeeping ----------------------------------------------------------------

    def _close_run(self, run_id: int | None, report: IndexReport | None, error: str) -> None:
        with write_session(self.engine) as s:
            run = s.get(IndexRun, run_id)
            if run is None:
                return
            run.finished_at = utcnow()
            if report is not None:
                run.commit = report.commit
                run.files, run.changed_files = report.files, report.changed_files
                run.chunks, run.embedded = report.chunks, report.embedded
                run.seconds, run.full = report.seconds, report.full
            run.outcome = "failed" if error else "ok"
            run.error = error[:2000]
            s.add(run)
            s.commit()

    def _mark_repo_error(self, full_name: str, message: str) -> None:
        with write_session(self.engine) as s:
            repo = s.exec(select(Repo).where(Repo.full_name == full_name)).first()
            if repo is not None:
                repo.status, repo.last_error, repo.updated_at = REPO_ERROR, message[:2000], utcnow()
                s.add(repo)
                s.commit()
