"""GET /metrics on ``codeask serve`` and the worker: scraped over HTTP, parsed with
prometheus-client's parser; labels stay bounded and names stay private."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import socket
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import aiohttp
import httpx
import pytest
from aiohttp.test_utils import TestServer
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from acl import AclSettings, Place, Principal
from bot.answer import Asker, Question
from bot.metrics import metrics_listener
from bot.server import create_app
from bot.services import Services
from bot.settings import BotSettings
from eval.local_llm import usage_json, wants_usage
from indexer.errors import StoreUnavailable, UpstreamUnavailable
from indexer.jobs import KIND_DELETE, REPO_DELETING, Registry, Repo, Worker, WorkerConfig
from indexer.jobs import queue as jobs
from indexer.settings import IndexerSettings
from indexer.stores import SqliteStore
from tests import slack_world
from tests.fake_llm import Reply
from tests.fake_slack import Call
from tests.slack_world import (
    LLM_ANSWER,
    PRIVATE_REPO,
    PUBLIC_REPO,
    World,
    direct_message,
    mention,
)

indexed = slack_world.indexed_fixture
world = slack_world.world_fixture
TOKEN = "scrape-me-7f3a"
WEBHOOK_SECRET = "metrics-webhook-secret"
WORLD_BOT_SETTINGS = {"metrics_token": TOKEN}
CHANNEL_QUESTION = "how does retry with backoff work?"
DM_QUESTION = "how do we rotate the master encryption key?"

Samples = dict[str, list[Sample]]


def parse(text: str) -> Samples:
    """Every sample of a scrape, by metric family name."""
    return {f.name: list(f.samples) for f in text_string_to_metric_families(text)}


def value(samples: Samples, family: str, name: str, **labels: str) -> float:
    """The one sample of ``name`` whose labels include ``labels`` (0 when there is none)."""
    found = [
        s.value
        for s in samples.get(family, [])
        if s.name == name and labels.items() <= s.labels.items()
    ]
    assert len(found) <= 1, found
    return found[0] if found else 0.0


async def scrape(http: aiohttp.ClientSession, port: int, token: str | None = TOKEN) -> str:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with http.get(f"http://127.0.0.1:{port}/metrics", headers=headers) as response:
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        return await response.text()


def _answers(world: World, count: int) -> Callable[[Call], bool]:
    """True once ``count`` finished answers (messages with feedback buttons) went out; the
    Asker has recorded its metrics before an answer is posted."""

    def finished(call: Call) -> bool:
        blocks = call.args.get("blocks") or []
        return call.status == 200 and any(
            b.get("type") == "actions" and b.get("block_id", "").startswith("codeask_answer:")
            for b in blocks
        )

    def done(_call: Call) -> bool:
        return sum(finished(c) for c in world.slack.calls) >= count

    return done


async def test_questions_are_counted_by_platform_place_mode_and_outcome(world: World) -> None:
    world.llm.script(Reply(LLM_ANSWER), Reply("The master key is re-wrapped [1]."))
    await world.post_event(mention(CHANNEL_QUESTION, "1700.000100"), "EvM1")
    await world.slack.wait_for(_answers(world, 1))
    await world.post_event(direct_message(DM_QUESTION, "1700.000200"), "EvM2")
    await world.slack.wait_for(_answers(world, 2))
    text = await scrape(world.http, world.server.port)
    samples = parse(text)

    questions = [s for s in samples["codeask_questions"] if s.name == "codeask_questions_total"]
    by_place = {s.labels["place"]: s for s in questions}
    assert set(by_place) == {"channel", "dm"}
    for sample in questions:
        assert sample.value == 1
        assert sample.labels["platform"] == "slack" and sample.labels["outcome"] == "answered"
        assert sample.labels["mode"] in ("agent", "single")
    assert sum(s.value for s in samples["codeask_answer_seconds"] if s.name.endswith("_count")) == 2
    for stage in ("access", "search", "model", "render"):
        count = value(
            samples,
            "codeask_answer_stage_seconds",
            "codeask_answer_stage_seconds_count",
            stage=stage,
        )
        assert count == 2, stage
    # Tokens are the provider's own counts (the fake reports four characters a token of
    # every request), streamed answers included (stream_options.include_usage).
    assert world.llm.requests and all(wants_usage(r) for r in world.llm.requests if r.get("stream"))
    sent = sum(usage_json(r, "")["prompt_tokens"] for r in world.llm.requests)
    tokens = {
        d: sum(
            s.value
            for s in samples["codeask_llm_tokens"]
            if s.name == "codeask_llm_tokens_total" and s.labels["direction"] == d
        )
        for d in ("in", "out")
    }
    assert tokens["in"] == sent and tokens["out"] > 0, tokens
    # Bounded labels: who asked, what, and the private repository they read never appear.
    for secret in ("U0ALICE", "T1:U0ALICE", "alice", CHANNEL_QUESTION, DM_QUESTION, PRIVATE_REPO):
        assert secret not in text


async def test_slack_api_errors_are_counted_by_slack_error_code(world: World) -> None:
    """Every failed call of any client the app uses, by Slack's own error code."""
    world.slack.fail("chat.postMessage", "channel_not_found")
    await world.post_event(direct_message(DM_QUESTION, "1700.000300"), "EvM3")
    await world.slack.wait_for(lambda c: c.status == 400)

    async def slack_errors() -> dict[str, float]:
        samples = parse(await scrape(world.http, world.server.port))
        return {
            s.labels["kind"]: s.value
            for s in samples.get("codeask_upstream_errors", [])
            if s.name == "codeask_upstream_errors_total" and s.labels["service"] == "slack"
        }

    for _ in range(100):  # the client counts as it reads the reply, just after the server
        if (counted := await slack_errors()).get("channel_not_found"):
            break
        await asyncio.sleep(0.05)
    assert counted == {"channel_not_found": 1}, counted


async def test_the_bearer_token_guards_the_scrape(world: World) -> None:
    url = f"http://127.0.0.1:{world.server.port}/metrics"
    async with world.http.get(url) as response:
        assert response.status == 401
    async with world.http.get(url, headers={"Authorization": "Bearer wrong"}) as response:
        assert response.status == 401
    assert "codeask_questions" in await scrape(world.http, world.server.port)


def _services(tmp_path: Path, **bot: Any) -> Services:
    return Services(
        bot=BotSettings(reconcile_seconds=0, **bot),
        acl=AclSettings(github_webhook_secret=WEBHOOK_SECRET),
        indexer=IndexerSettings(
            data_dir=tmp_path / "data", database_url=f"sqlite:///{tmp_path / 'meta.db'}"
        ),
    )


async def _plain_server(services: Services) -> TestServer:
    server = TestServer(create_app(services, reconcile_seconds=0), host="127.0.0.1")
    await server.start_server()
    return server


def _register_two_repos_behind(services: Services) -> None:
    registry = Registry(services.engine)
    for name, visibility, behind in ((PUBLIC_REPO, "public", 2), (PRIVATE_REPO, "private", 3)):
        registry.save(
            Repo(
                full_name=name,
                visibility=visibility,
                status="ready",
                last_indexed_commit="a" * 40,
                head_commit="b" * 40,
                commits_behind=behind,
            )
        )
        jobs.enqueue(services.engine, name, "index", commit="b" * 40, reason="push")


@pytest.mark.parametrize(
    ("setting", "named"),
    [("false", set()), ("public", {PUBLIC_REPO}), ("true", {PUBLIC_REPO, PRIVATE_REPO})],
)
async def test_index_lag_names_only_the_repositories_the_setting_allows(
    tmp_path: Path, setting: str, named: set[str]
) -> None:
    services = _services(tmp_path, metrics_repo_labels=setting)
    _register_two_repos_behind(services)
    server = await _plain_server(services)
    async with aiohttp.ClientSession() as http:
        text = await scrape(http, server.port, token=None)  # no token configured: open
    await server.close()
    services.close()
    samples = parse(text)
    assert (
        value(samples, "codeask_job_queue_depth", "codeask_job_queue_depth", status="queued") == 2
    )
    assert (
        value(samples, "codeask_job_queue_oldest_seconds", "codeask_job_queue_oldest_seconds") >= 0
    )
    lag = {s.labels["repository"]: s for s in samples["codeask_index_lag_seconds"]}
    behind = {
        (s.labels["repository"], s.labels["visibility"]): s.value
        for s in samples["codeask_index_commits_behind"]
    }
    assert set(lag) - {"other"} == named
    assert behind.get((PUBLIC_REPO, "public"), behind.get(("other", "public"))) == 2
    assert behind.get((PRIVATE_REPO, "private"), behind.get(("other", "private"))) == 3
    assert all(s.value >= 0 for s in lag.values())
    for repo in (PUBLIC_REPO, PRIVATE_REPO):
        assert (repo in text) == (repo in named)


def _signed(body: bytes, event: str, delivery: str, secret: str = WEBHOOK_SECRET) -> dict[str, str]:
    digest = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return {
        "X-Hub-Signature-256": f"sha256={digest}",
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery,
        "Content-Type": "application/json",
    }


async def test_webhook_deliveries_are_counted_by_event_and_result(tmp_path: Path) -> None:
    services = _services(tmp_path)
    server = await _plain_server(services)
    url = f"http://127.0.0.1:{server.port}/github/webhook"
    ping = json.dumps({"zen": "Keep it logically awesome."}).encode()
    async with aiohttp.ClientSession() as http:
        for headers in (
            _signed(ping, "ping", "d-1"),
            _signed(ping, "ping", "d-1"),  # a redelivery
            _signed(ping, "made-up-event-name", "d-2", secret="forged"),
        ):
            async with http.post(url, data=ping, headers=headers):
                pass
        samples = parse(await scrape(http, server.port, token=None))
    await server.close()
    services.close()
    name = "codeask_webhook_deliveries_total"
    family = "codeask_webhook_deliveries"
    assert value(samples, family, name, event="ping", result="applied") == 1
    assert value(samples, family, name, event="ping", result="duplicate") == 1
    assert value(samples, family, name, event="unverified", result="bad_signature") == 1
    assert all(s.labels["event"] != "made-up-event-name" for s in samples[family])


async def test_refusals_and_failures_are_outcomes(tmp_path: Path) -> None:
    services = _services(tmp_path)
    alice = Principal("teams", "aad-object-id-of-alice")
    await Asker(services).ask(Question(alice, Place("channel", "19:abc"), "where is retry?"))
    broken = _services(tmp_path / "broken")
    (tmp_path / "broken" / "data" / "codeask.db").mkdir(parents=True)  # the store cannot open
    await Asker(broken).ask(Question(alice, Place("dm"), "where is retry?"))
    refused = parse(services.metrics.render().decode())
    failed = parse(broken.metrics.render().decode())
    services.close()
    broken.close()
    name = "codeask_questions_total"
    assert value(refused, "codeask_questions", name, platform="teams", outcome="refused") == 1
    assert value(failed, "codeask_questions", name, place="dm", outcome="failed") == 1
    errors = failed["codeask_upstream_errors"]
    assert [s.labels["service"] for s in errors if s.name.endswith("_total")] == ["search"]


def test_github_and_opensearch_errors_are_counted_where_the_request_failed(
    tmp_path: Path,
) -> None:
    """Each failed request, with its kind, whatever asked it (access, webhooks, indexing)."""
    closed = f"http://127.0.0.1:{_free_port()}"
    services = Services(
        bot=BotSettings(reconcile_seconds=0),
        acl=AclSettings(github_api_url=closed, github_token="ghs_test"),
        indexer=IndexerSettings(
            data_dir=tmp_path / "data",
            database_url=f"sqlite:///{tmp_path / 'meta.db'}",
            store="opensearch",
            opensearch_url=closed,
            opensearch_timeout=2,
        ),
    )
    try:
        for _ in range(2):
            with pytest.raises(UpstreamUnavailable, match="GitHub could not be reached"):
                services.github.user_by_id(1)
        with pytest.raises(StoreUnavailable):
            services.store.repo_states()
        samples = parse(services.metrics.render().decode())
    finally:
        services.close()
    counted = {
        (s.labels["service"], s.labels["kind"]): s.value
        for s in samples["codeask_upstream_errors"]
        if s.name == "codeask_upstream_errors_total"
    }
    assert counted[("github", "unreachable")] == 2
    assert [k for (service, k) in counted if service == "opensearch"] == ["ConnectionError"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_worker_serves_its_jobs_and_the_queue_on_its_own_port(tmp_path: Path) -> None:
    port = _free_port()
    services = _services(tmp_path, worker_metrics_port=port, metrics_token=TOKEN)
    Registry(services.engine).save(Repo(full_name="acme/old", status=REPO_DELETING))
    jobs.enqueue(services.engine, "acme/old", KIND_DELETE, reason="repository deleted")
    store = SqliteStore(tmp_path / "store.db")
    worker = Worker(
        services.engine,
        store,
        cast(Any, None),  # a delete job embeds nothing
        cast(Any, None),
        WorkerConfig(repos_dir=tmp_path / "repos"),
        on_job=services.metrics.job,
    )
    assert worker.run(threading.Event(), once=True) == 1
    listener = metrics_listener(services.metrics, host="127.0.0.1")
    assert listener is not None
    try:
        url = f"http://127.0.0.1:{port}/metrics"
        assert httpx.get(url).status_code == 401
        response = httpx.get(url, headers={"Authorization": f"Bearer {TOKEN}"})
    finally:
        listener.shutdown()
        listener.server_close()
        store.close()
        services.close()
    assert response.status_code == 200
    samples = parse(response.text)
    assert value(samples, "codeask_jobs", "codeask_jobs_total", kind="delete", result="done") == 1
    assert value(samples, "codeask_job_seconds", "codeask_job_seconds_count", kind="delete") == 1
    assert (
        value(samples, "codeask_job_queue_depth", "codeask_job_queue_depth", status="queued") == 0
    )
    assert value(samples, "codeask_metadata_up", "codeask_metadata_up") == 1


def test_without_a_port_the_worker_has_no_listener(tmp_path: Path) -> None:
    services = _services(tmp_path)
    assert metrics_listener(services.metrics) is None
