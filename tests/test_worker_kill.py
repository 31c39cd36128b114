"""A worker killed mid-run loses nothing: the old commit stays searchable, another worker finishes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest
from sqlmodel import Session, select

from bot.chat import Invoker, commands_for
from bot.services import Services
from indexer.embedding import Embedder, WrappedEmbedder, open_embedding_cache
from indexer.jobs import Worker, WorkerConfig
from indexer.jobs import queue as jobs
from indexer.jobs.registry import DONE, IndexRun, Job
from indexer.search import Searcher
from tests.conftest import DATABASES, PG_URL, migrated_engine
from tests.freshness_env import REPO, GitHubWorld, configure, duplicate_chunks, github_world

SEED = {"ledger/core.py": "def post_ledger_entry(account: str, cents: int) -> None:\n    pass\n"}


def big_change(n: int = 60) -> dict[str, str | None]:
    """Enough new functions (one chunk each) that embedding them takes a few seconds."""
    return {
        f"ledger/rules_{i:03d}.py": (
            f"def settlement_rule_{i}(batch: list[int]) -> int:\n"
            f'    """Settlement rule {i}: sum the batch and apply fee tier {i % 7}."""\n'
            f"    return sum(batch) * {i + 3} // 100\n"
        )
        for i in range(n)
    } | {"ledger/core.py": None}


@pytest.fixture(params=DATABASES)
def world(
    request: pytest.FixtureRequest, tmp_path: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[GitHubWorld]:
    url = f"sqlite:///{data_dir / 'codeask.meta.db'}" if request.param == "sqlite" else PG_URL
    with github_world(tmp_path, SEED) as w:
        configure(monkeypatch, w, url)
        monkeypatch.setenv("CODEASK_WORKER_HEARTBEAT_SECONDS", "0.5")
        monkeypatch.setenv("CODEASK_WORKER_STALE_SECONDS", "3")
        if request.param == "postgres":
            migrated_engine(url).dispose()
        yield w


@pytest.mark.slow
def test_killed_worker_leaves_old_commit_searchable_and_job_is_retaken(
    world: GitHubWorld, embedder: Embedder
) -> None:
    services = Services()
    try:
        assert not commands_for(services).run(Invoker("cli", "ops"), f"repo add {REPO}").error
        worker = Worker(
            services.engine,
            services.store,
            embedder,
            open_embedding_cache(services.indexer),
            WorkerConfig.from_settings(services.indexer),
        )
        assert worker.run_one() is not None
        first = world.head()
        searcher = Searcher(services.store, embedder)

        def symbols(query: str) -> set[str]:
            hits = searcher.search(query, frozenset({REPO}), k=5, lists=("bm25",))
            return {h.chunk.symbol for h in hits}

        second = world.commit_and_push(big_change())
        job = jobs.enqueue(services.engine, REPO, "index", commit=second, reason="push")

        proc = subprocess.Popen(
            [sys.executable, "-m", "bot.cli", "worker"],
            env={**os.environ, "HF_HUB_OFFLINE": "1"},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            _wait_for_run(services, job.id, proc)
        finally:
            proc.send_signal(signal.SIGKILL)  # no chance to clean up
            proc.wait(timeout=30)
            stderr = proc.stderr.read().decode() if proc.stderr else ""

        # The killed run never committed: the previous commit is whole and searchable.
        state = services.store.repo_state(REPO)
        assert state is not None and state.commit == first, stderr
        assert "post_ledger_entry" in symbols("post_ledger_entry")
        assert "settlement_rule_42" not in symbols("settlement_rule_42")

        # A second worker takes the job once its heartbeat is stale, and completes it.
        deadline = time.monotonic() + 60
        while (taken := worker.run_one()) is None and time.monotonic() < deadline:
            time.sleep(0.5)
        assert taken is not None and taken.id == job.id
        with Session(services.engine) as s:
            done = s.get(Job, job.id)
            runs = s.exec(select(IndexRun).where(IndexRun.job_id == job.id)).all()
        assert done is not None and done.status == DONE and done.attempts == 2
        assert sorted(r.outcome for r in runs) == ["abandoned", "ok"]
        state = services.store.repo_state(REPO)
        assert state is not None and state.commit == second
        assert "settlement_rule_42" in symbols("settlement_rule_42")
        assert "post_ledger_entry" not in symbols("post_ledger_entry")
        assert duplicate_chunks(services.indexer.sqlite_path, REPO) == []
        assert state.chunk_count == len(big_change()) - 1
    finally:
        services.close()


def _wait_for_run(services: Services, job_id: int | None, proc: subprocess.Popen[bytes]) -> None:
    """Until the subprocess worker has claimed the job and started indexing it."""
    deadline = time.monotonic() + 600  # loading the model is slow on a busy machine
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the worker exited early"
        with Session(services.engine) as s:
            run = s.exec(select(IndexRun).where(IndexRun.job_id == job_id)).first()
        if run is not None:
            return
        time.sleep(0.05)
    raise AssertionError("the worker never started the job")


class _StealingEmbedder(WrappedEmbedder):
    """Embeds normally; on the first batch another worker takes the job over."""

    def __init__(self, inner: Embedder, steal: Callable[[], None]) -> None:
        super().__init__(inner)
        self._steal, self.stolen = steal, False

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not self.stolen:
            self.stolen = True
            self._steal()
            time.sleep(1.5)  # the worker's next heartbeats find the job gone
        return self._inner.embed(texts)


def test_a_worker_that_lost_its_job_writes_nothing(world: GitHubWorld, embedder: Embedder) -> None:
    services = Services()
    try:
        assert not commands_for(services).run(Invoker("cli", "ops"), f"repo add {REPO}").error
        config = WorkerConfig.from_settings(services.indexer)
        cache = open_embedding_cache(services.indexer)
        assert Worker(services.engine, services.store, embedder, cache, config).run_one()
        first = world.head()
        second = world.commit_and_push(big_change(8))
        job = jobs.enqueue(services.engine, REPO, "index", commit=second, reason="push")

        def steal() -> None:  # what claim() does for a worker that found our lease stale
            with Session(services.engine) as s:
                row = s.get(Job, job.id)
                assert row is not None
                row.locked_by = "thief"
                s.add(row)
                s.commit()

        slow = _StealingEmbedder(embedder, steal)
        worker = Worker(services.engine, services.store, slow, cache, config)
        assert worker.run_one() is not None and slow.stolen
        state = services.store.repo_state(REPO)
        assert state is not None and state.commit == first  # the store did not move on
        repo = services.registry.get(REPO)
        assert repo is not None and repo.last_indexed_commit == first
        with Session(services.engine) as s:
            row = s.get(Job, job.id)
            run = s.exec(select(IndexRun).where(IndexRun.job_id == job.id)).one()
        assert row is not None and row.locked_by == "thief"  # left to its new owner
        assert "lost the job's lease" in run.error
    finally:
        services.close()
