"""Register → index → push → webhook → worker → searchable, against local stand-ins for GitHub."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from aiohttp import web

from bot.chat import Invoker, commands_for
from bot.server import create_app
from bot.services import Services
from indexer.embedding import Embedder, open_embedding_cache
from indexer.jobs import Worker, WorkerConfig
from indexer.jobs import queue as jobs
from indexer.jobs.registry import REPO_READY, IndexRun
from indexer.search import Searcher
from tests.freshness_env import (
    REPO,
    GitHubWorld,
    configure,
    duplicate_chunks,
    github_world,
    push_payload,
    signed,
)

ADMIN = Invoker("cli", "ops")
FILES = {
    "billing/charges.py": (
        "def refund_charge(charge_id: str, amount_cents: int) -> dict:\n"
        '    """Refund part or all of a captured card charge."""\n'
        '    return {"charge": charge_id, "refunded": amount_cents}\n'
    ),
    "README.md": "# Payments\n\nCharges and refunds for the shop.\n",
}


@pytest.fixture
def world(tmp_path: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[GitHubWorld]:
    with github_world(tmp_path, FILES) as w:
        configure(monkeypatch, w, f"sqlite:///{data_dir / 'codeask.meta.db'}")
        yield w


@pytest.fixture
def services(world: GitHubWorld) -> Iterator[Services]:
    s = Services()
    yield s
    s.close()


@pytest.fixture
async def server(services: Services) -> AsyncIterator[str]:
    """The real ``codeask serve`` application on a random localhost port."""
    runner = web.AppRunner(create_app(services))
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    yield f"http://127.0.0.1:{port}"
    await runner.cleanup()


def make_worker(services: Services, embedder: Embedder, **config: float) -> Worker:
    cfg = WorkerConfig.from_settings(services.indexer)
    for key, value in config.items():
        setattr(cfg, key, value)
    return Worker(
        services.engine,
        services.store,
        embedder,
        open_embedding_cache(services.indexer),
        cfg,
        token=services.git_token,
    )


def found(services: Services, embedder: Embedder, query: str) -> set[str]:
    hits = Searcher(services.store, embedder).search(query, frozenset({REPO}), k=5, lists=("bm25",))
    return {h.chunk.symbol for h in hits}


def drain(worker: Worker) -> int:
    return worker.run(threading.Event(), once=True)


async def test_push_webhook_makes_the_change_searchable(
    world: GitHubWorld, services: Services, server: str, embedder: Embedder
) -> None:
    commands = commands_for(services)
    added = commands.run(ADMIN, f"repo add {REPO}")
    assert not added.error, added.text
    worker = make_worker(services, embedder)
    assert drain(worker) == 1
    assert "refund_charge" in found(services, embedder, "refund_charge")
    first = world.head()
    repo = services.registry.get(REPO)
    assert repo is not None and repo.status == REPO_READY and repo.last_indexed_commit == first

    after = world.commit_and_push(
        {
            "billing/charges.py": (
                "def reverse_payment(payment_id: str) -> dict:\n"
                '    """Reverse a settled payment through the acquirer."""\n'
                '    return {"payment": payment_id, "reversed": True}\n'
            )
        }
    )
    body, headers = signed("push", push_payload(world, first, after))
    async with httpx.AsyncClient(base_url=server) as http:
        response = await http.post("/github/webhook", content=body, headers=headers)
        assert response.status_code == 200, response.text
        assert response.json()["queued"] == [f"index {REPO}"]
        # GitHub redelivers the same delivery id: acknowledged, nothing queued twice.
        again = await http.post("/github/webhook", content=body, headers=headers)
        assert again.status_code == 200 and again.json()["duplicate"] is True
        status = commands.run(ADMIN, f"status {REPO}")
        assert "1 commits behind" in status.text, status.text

    assert len(jobs.pending(services.engine, REPO)) == 1
    assert drain(worker) == 1
    assert "reverse_payment" in found(services, embedder, "reverse_payment")
    assert "refund_charge" not in found(services, embedder, "refund_charge")
    repo = services.registry.get(REPO)
    assert repo is not None and repo.last_indexed_commit == after and repo.commits_behind == 0


async def test_forged_or_missing_signatures_are_refused(
    world: GitHubWorld, services: Services, server: str
) -> None:
    body, headers = signed("push", push_payload(world, "0" * 40, "1" * 40), secret="wrong")
    async with httpx.AsyncClient(base_url=server) as http:
        forged = await http.post("/github/webhook", content=body, headers=headers)
        del headers["X-Hub-Signature-256"]
        unsigned = await http.post("/github/webhook", content=body, headers=headers)
        # Bytes that are not ASCII in the signature header: refused, not a server error.
        raw = await http.post(
            "/github/webhook",
            content=body,
            headers={**headers, "X-Hub-Signature-256": b"sha256=\xff\xfe"},
        )
        health = await http.get("/healthz")
        ready = await http.get("/readyz")
    assert forged.status_code == 401 and unsigned.status_code == 401 and raw.status_code == 401
    assert jobs.pending(services.engine) == []
    assert health.status_code == 200
    assert ready.status_code == 200 and ready.json()["database"] == "ok"


async def test_ping_and_pushes_to_other_branches_queue_nothing(
    world: GitHubWorld, services: Services, server: str
) -> None:
    assert not commands_for(services).run(ADMIN, f"repo add {REPO}").error
    jobs.cancel_queued(services.engine, REPO)
    other = push_payload(world, "0" * 40, "1" * 40)
    other["ref"] = "refs/heads/feature"
    async with httpx.AsyncClient(base_url=server) as http:
        for event, payload in (("ping", {"zen": "hi"}), ("push", other)):
            body, headers = signed(event, payload)
            response = await http.post("/github/webhook", content=body, headers=headers)
            assert response.status_code == 200 and response.json()["queued"] == []
    assert jobs.pending(services.engine) == []


async def test_rename_and_privatize_update_the_registry(
    world: GitHubWorld, services: Services, server: str, embedder: Embedder
) -> None:
    assert not commands_for(services).run(ADMIN, f"repo add {REPO}").error
    assert drain(make_worker(services, embedder)) == 1
    repo_id = world.fake.repos[REPO]["id"]
    renamed = {
        "action": "renamed",
        "changes": {"repository": {"name": {"from": "payments"}}},
        "repository": {"id": repo_id, "full_name": "acme/billing", "visibility": "private"},
    }
    body, headers = signed("repository", renamed)
    async with httpx.AsyncClient(base_url=server) as http:
        response = await http.post("/github/webhook", content=body, headers=headers)
    assert response.status_code == 200, response.text
    assert sorted(response.json()["queued"]) == [f"delete {REPO}", "full acme/billing"]
    assert services.registry.get(REPO) is None
    moved = services.registry.get("acme/billing")
    assert moved is not None and moved.clone_url.endswith("acme/billing.git")
    # The old name's chunks are deleted by the worker (the new clone URL does not exist
    # here, so the new name's index job fails and is retried later).
    make_worker(services, embedder).run_one()
    make_worker(services, embedder).run_one()
    assert services.store.repo_state(REPO) is None
    assert services.acl_store.repo_overrides()[REPO] == "gone"

    # The organization is renamed (GitHub sends no event per repository), then the repo is
    # made private: the index still knows it as acme/billing, found by its GitHub id.
    privatized = {
        "action": "privatized",
        "repository": {"id": repo_id, "full_name": "acme-inc/billing", "visibility": "private"},
    }
    body, headers = signed("repository", privatized)
    async with httpx.AsyncClient(base_url=server) as http:
        response = await http.post("/github/webhook", content=body, headers=headers)
    assert response.status_code == 200, response.text
    overrides = services.acl_store.repo_overrides()
    assert overrides["acme/billing"] == "private" and overrides["acme-inc/billing"] == "private"


def test_registering_validates_against_github(world: GitHubWorld, services: Services) -> None:
    commands = commands_for(services)
    missing = commands.run(ADMIN, "repo add acme/nope")
    assert missing.error and "cannot read it" in missing.text
    branch = commands.run(ADMIN, f"repo add {REPO} --branch nope")
    assert branch.error and "no branch 'nope'" in branch.text
    stranger = commands.run(Invoker("slack", "T1:U9"), f"repo add {REPO}")
    assert stranger.error and "admins" in stranger.text
    assert services.registry.all() == []
    listed = commands.run(ADMIN, "repo list")
    assert "No repositories registered" in listed.text


def test_remove_deletes_every_chunk_and_its_jobs(
    world: GitHubWorld, services: Services, embedder: Embedder
) -> None:
    commands = commands_for(services)
    assert not commands.run(ADMIN, f"repo add {REPO}").error
    assert drain(make_worker(services, embedder)) == 1
    assert services.store.repo_state(REPO) is not None
    removed = commands.run(ADMIN, f"repo remove {REPO}")
    assert not removed.error, removed.text
    assert services.store.repo_state(REPO) is None  # gone from search at once
    assert drain(make_worker(services, embedder)) == 1  # the delete job tidies up
    assert services.registry.get(REPO) is None
    assert jobs.pending(services.engine) == []
    assert found(services, embedder, "refund_charge") == set()


def test_reconcile_catches_a_missed_push(
    world: GitHubWorld, services: Services, embedder: Embedder
) -> None:
    from bot.server import run_reconcile

    assert not commands_for(services).run(ADMIN, f"repo add {REPO}").error
    worker = make_worker(services, embedder)
    assert drain(worker) == 1
    assert run_reconcile(services) == []
    head = world.commit_and_push(
        {"billing/fees.py": "def card_fee(amount: int) -> int:\n    return 30\n"}
    )
    (drift,) = run_reconcile(services)
    assert drift.head == head and drift.queued
    assert drain(worker) == 1
    assert "card_fee" in found(services, embedder, "card_fee")
    with services.registry.engine.connect():
        runs = services.registry.runs(REPO)
    assert [r.outcome for r in runs] == ["ok", "ok"] and all(isinstance(r, IndexRun) for r in runs)
    assert duplicate_chunks(services.indexer.sqlite_path, REPO) == []
