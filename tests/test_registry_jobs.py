"""The registry and job queue behave the same on SQLite and PostgreSQL."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import delete
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from indexer.errors import InvalidInput
from indexer.jobs import queue as jobs
from indexer.jobs.registry import (
    DONE,
    FAILED,
    KIND_DELETE,
    KIND_FULL,
    KIND_INDEX,
    QUEUED,
    RUNNING,
    SUPERSEDED,
    AdminAction,
    IndexRun,
    Job,
    Registry,
    RegistryEvent,
    Repo,
    WebhookDelivery,
    check_repo_name,
    utcnow,
)
from tests.conftest import DATABASES, PG_URL, migrated_engine

TABLES = (Job, IndexRun, Repo, WebhookDelivery, RegistryEvent, AdminAction)


def _clean(engine: Engine) -> None:
    with Session(engine) as s:
        for table in TABLES:
            s.exec(delete(table))
        s.commit()


@pytest.fixture(params=DATABASES)
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    url = f"sqlite:///{tmp_path / 'meta.db'}" if request.param == "sqlite" else PG_URL
    eng = migrated_engine(url)
    yield eng
    _clean(eng)
    eng.dispose()


def test_repo_names_are_validated() -> None:
    assert check_repo_name(" acme/widgets ") == "acme/widgets"
    for bad in ("acme", "acme/", "a/b/c", "../x", "acme/wid gets"):
        with pytest.raises(InvalidInput):
            check_repo_name(bad)


def test_registry_round_trips_a_repo(engine: Engine) -> None:
    registry = Registry(engine)
    registry.save(
        Repo(full_name="acme/api", github_id=7, visibility="internal", include_globs="src/**")
    )
    repo = registry.get("acme/api")
    assert repo is not None and repo.github_id == 7 and repo.globs() == (["src/**"], [])
    assert [r.full_name for r in registry.all()] == ["acme/api"]
    registry.delete("acme/api")
    assert registry.get("acme/api") is None


def test_a_newer_push_supersedes_the_queued_job(engine: Engine) -> None:
    first = jobs.enqueue(engine, "acme/api", KIND_INDEX, commit="a" * 40, reason="push")
    second = jobs.enqueue(engine, "acme/api", KIND_INDEX, commit="b" * 40, reason="push")
    assert second.id == first.id and second.commit == "b" * 40
    assert len(jobs.pending(engine, "acme/api")) == 1
    # The stronger kind survives a merge.
    jobs.enqueue(engine, "acme/api", KIND_FULL, reason="reindex")
    merged = jobs.enqueue(engine, "acme/api", KIND_INDEX, commit="c" * 40)
    assert merged.kind == KIND_FULL and merged.commit == "c" * 40


def test_concurrent_enqueues_leave_one_queued_job(engine: Engine) -> None:
    errors: list[BaseException] = []

    def push(n: int) -> None:
        try:
            jobs.enqueue(engine, "acme/api", KIND_INDEX, commit=f"{n:040d}")
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=push, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(jobs.pending(engine, "acme/api")) == 1


def test_a_push_during_a_run_queues_behind_it_and_waits(engine: Engine) -> None:
    jobs.enqueue(engine, "acme/api", KIND_INDEX, commit="a" * 40)
    running = jobs.claim(engine, "w1", stale_after=60)
    assert running is not None and running.status == RUNNING and running.attempts == 1
    jobs.enqueue(engine, "acme/api", KIND_INDEX, commit="b" * 40)
    # The queued job of the same repo must wait for the running one.
    assert jobs.claim(engine, "w2", stale_after=60) is None
    assert running.id is not None and jobs.finish(engine, running.id, "w1")
    nxt = jobs.claim(engine, "w2", stale_after=60)
    assert nxt is not None and nxt.commit == "b" * 40


def test_two_repos_are_worked_in_parallel(engine: Engine) -> None:
    jobs.enqueue(engine, "acme/api", KIND_INDEX)
    jobs.enqueue(engine, "acme/web", KIND_INDEX)
    a = jobs.claim(engine, "w1", stale_after=60)
    b = jobs.claim(engine, "w2", stale_after=60)
    assert a is not None and b is not None and {a.repo, b.repo} == {"acme/api", "acme/web"}
    assert jobs.claim(engine, "w3", stale_after=60) is None


def test_concurrent_claimers_never_share_a_job(engine: Engine) -> None:
    for n in range(6):
        jobs.enqueue(engine, f"acme/r{n}", KIND_INDEX)
    taken: list[int] = []
    lock = threading.Lock()

    def work(wid: str) -> None:
        while (job := jobs.claim(engine, wid, stale_after=60)) is not None:
            with lock:
                assert job.id is not None
                taken.append(job.id)

    threads = [threading.Thread(target=work, args=(f"w{i}",)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(taken) == 6 and len(set(taken)) == 6


def test_a_dead_workers_job_is_taken_again(engine: Engine) -> None:
    jobs.enqueue(engine, "acme/api", KIND_INDEX)
    job = jobs.claim(engine, "dead", stale_after=60)
    assert job is not None and job.id is not None
    assert jobs.claim(engine, "alive", stale_after=60) is None  # heartbeat still fresh
    with Session(engine) as s:
        row = s.get(Job, job.id)
        assert row is not None
        row.heartbeat_at = utcnow() - timedelta(seconds=120)
        s.add(row)
        s.commit()
    again = jobs.claim(engine, "alive", stale_after=60)
    assert again is not None and again.id == job.id and again.locked_by == "alive"
    assert again.attempts == 2
    # The dead worker's late results are refused.
    assert not jobs.heartbeat(engine, job.id, "dead")
    assert not jobs.finish(engine, job.id, "dead")
    assert jobs.finish(engine, job.id, "alive")


def test_a_job_that_keeps_killing_its_worker_fails_instead_of_running_forever(
    engine: Engine,
) -> None:
    jobs.enqueue(engine, "acme/huge", KIND_INDEX)
    lost: list[Job] = []
    for attempt in range(1, 4):
        job = jobs.claim(engine, f"w{attempt}", stale_after=60, max_attempts=3)
        assert job is not None and job.attempts == attempt and job.id is not None
        with Session(engine) as s:  # the worker is OOM-killed: its heartbeat stops
            row = s.get(Job, job.id)
            assert row is not None
            row.heartbeat_at = utcnow() - timedelta(seconds=120)
            s.add(row)
            s.commit()
    assert (
        jobs.claim(engine, "w4", stale_after=60, max_attempts=3, on_abandoned=lost.append) is None
    )
    assert [(j.repo, j.status, j.attempts) for j in lost] == [("acme/huge", FAILED, 3)]
    assert "stopped 3 times" in lost[0].last_error
    assert jobs.claim(engine, "w5", stale_after=60, max_attempts=3) is None
    # A new push still gets a fresh job.
    jobs.enqueue(engine, "acme/huge", KIND_INDEX)
    assert jobs.claim(engine, "w6", stale_after=60, max_attempts=3) is not None


def test_a_push_racing_a_failure_supersedes_it_instead_of_crashing_the_worker(
    engine: Engine,
) -> None:
    if engine.dialect.name == "sqlite":
        pytest.skip("SQLite serialises writers: the race needs a second concurrent writer")
    from sqlalchemy import event

    jobs.enqueue(engine, "acme/api", KIND_INDEX)
    job = jobs.claim(engine, "w", stale_after=60)
    assert job is not None and job.id is not None
    fired: list[bool] = []

    def push_arrives(session: Session) -> None:  # between fail()'s check and its commit
        if not fired:
            fired.append(True)
            jobs.enqueue(engine, "acme/api", KIND_FULL, reason="push")

    event.listen(Session, "before_commit", push_arrives)
    try:
        after = jobs.fail(engine, job.id, "w", "git fetch failed", jobs.RetryPolicy())
    finally:
        event.remove(Session, "before_commit", push_arrives)
    assert fired and after is not None and after.status == SUPERSEDED
    with Session(engine) as s:
        queued = s.exec(select(Job).where(Job.repo == "acme/api", Job.status == QUEUED)).all()
    assert [j.kind for j in queued] == [KIND_FULL]


def test_failures_back_off_then_fail_for_good(engine: Engine) -> None:
    policy = jobs.RetryPolicy(max_attempts=2, base_seconds=30)
    jobs.enqueue(engine, "acme/api", KIND_INDEX)
    job = jobs.claim(engine, "w", stale_after=60)
    assert job is not None and job.id is not None
    retried = jobs.fail(engine, job.id, "w", "git fetch failed", policy)
    assert retried is not None and retried.status == QUEUED
    assert retried.not_before > utcnow() + timedelta(seconds=20)
    assert jobs.claim(engine, "w", stale_after=60) is None  # not before the backoff
    with Session(engine) as s:
        row = s.get(Job, job.id)
        assert row is not None
        row.not_before = utcnow()
        s.add(row)
        s.commit()
    job = jobs.claim(engine, "w", stale_after=60)
    assert job is not None and job.id is not None and job.attempts == 2
    final = jobs.fail(engine, job.id, "w", "git fetch failed", policy)
    assert final is not None and final.status == FAILED and final.last_error == "git fetch failed"


def test_a_failed_job_with_a_newer_one_waiting_is_superseded(engine: Engine) -> None:
    jobs.enqueue(engine, "acme/api", KIND_FULL)
    job = jobs.claim(engine, "w", stale_after=60)
    assert job is not None and job.id is not None
    jobs.enqueue(engine, "acme/api", KIND_INDEX, commit="b" * 40)
    after = jobs.fail(engine, job.id, "w", "boom", jobs.RetryPolicy())
    assert after is not None and after.status == SUPERSEDED
    (waiting,) = jobs.pending(engine, "acme/api")
    assert waiting.kind == KIND_FULL and waiting.commit == "b" * 40


def test_cancel_drops_the_queued_job_and_lets_the_running_one_finish(engine: Engine) -> None:
    jobs.enqueue(engine, "acme/api", KIND_INDEX)
    job = jobs.claim(engine, "w", stale_after=60)
    assert job is not None and job.id is not None
    jobs.enqueue(engine, "acme/api", KIND_INDEX, commit="b" * 40)
    assert jobs.cancel_queued(engine, "acme/api") == 1
    assert [j.id for j in jobs.pending(engine, "acme/api")] == [job.id]
    # A delete queued behind the running job waits for it, then runs.
    jobs.enqueue(engine, "acme/api", KIND_DELETE)
    assert jobs.claim(engine, "w2", stale_after=60) is None
    assert jobs.finish(engine, job.id, "w")
    delete_job = jobs.claim(engine, "w2", stale_after=60)
    assert delete_job is not None and delete_job.kind == KIND_DELETE
    assert [j.status for j in jobs.recent(engine, "acme/api")] == [RUNNING, DONE]


def test_events_and_audit_are_recorded(engine: Engine) -> None:
    registry = Registry(engine)
    registry.record_event("installation_added", "acme/new", "added to the GitHub App")
    registry.audit("cli:alice", "repo.add", "acme/api", "branch=main")
    (event,) = registry.events()
    assert event.repo == "acme/new"
    registry.ping()
