"""A signed Slack request captured and sent again runs once, on whichever replica it
reaches: signatures are claimed in the shared metadata database, and old claims go."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlencode

import aiohttp
import pytest
from aiohttp.test_utils import TestServer
from sqlmodel import Session, select

from bot.answer import Asker
from bot.chat import claim_delivery
from bot.server import create_app
from bot.services import Services
from bot.settings import BotSettings
from bot.slack.app import SIGNATURE_RETENTION, slack_mount
from indexer.jobs import WebhookDelivery, utcnow
from indexer.settings import IndexerSettings
from tests.conftest import migrated_engine
from tests.fake_slack import FakeSlack
from tests.slack_world import SIGNING_SECRET, sign, slash_command

FORM = "application/x-www-form-urlencoded"


@dataclass
class Replicas:
    """Two ``codeask serve`` processes' apps over one metadata database."""

    slack: FakeSlack
    servers: list[TestServer]
    http: aiohttp.ClientSession

    async def post(self, replica: int, body: str, headers: dict[str, str]) -> tuple[int, str]:
        url = self.servers[replica].make_url("/slack/events")
        async with self.http.post(url, data=body.encode(), headers=headers) as response:
            return response.status, await response.text()

    def command(self, text: str) -> tuple[str, dict[str, str]]:
        """A signed ``/codeask`` form, as Slack sends it: the body and its headers."""
        body = urlencode(slash_command(text, self.slack.response_url()))
        return body, {"Content-Type": FORM, **sign(body)}

    async def responses(self, count: int) -> int:
        """Wait for ``count`` answers on response URLs, then a moment for any extra one."""
        await self.slack.wait_for(lambda _: len(self.slack.of("response_url")) >= count, 20)
        await asyncio.sleep(0.5)
        return len(self.slack.of("response_url"))


@pytest.fixture
async def replicas(tmp_path: Path) -> AsyncIterator[Replicas]:
    slack = FakeSlack()
    await slack.start()
    servers: list[TestServer] = []
    every_services: list[Services] = []
    for name in ("a", "b"):
        services = Services(
            bot=BotSettings(
                slack_bot_token="xoxb-test-token",
                slack_signing_secret=SIGNING_SECRET,
                slack_api_url=slack.api_url,
                reconcile_seconds=0,
            ),
            indexer=IndexerSettings(
                data_dir=tmp_path / f"data-{name}", database_url=f"sqlite:///{tmp_path / 'meta.db'}"
            ),
        )
        app = create_app(services, mounts=[slack_mount(Asker(services))], reconcile_seconds=0)
        server = TestServer(app, host="127.0.0.1")
        await server.start_server()
        servers.append(server)
        every_services.append(services)
    async with aiohttp.ClientSession() as http:
        yield Replicas(slack, servers, http)
    for server, services in zip(servers, every_services, strict=True):
        await server.close()
        services.close()
    await slack.close()


async def test_a_replayed_slash_command_runs_once(replicas: Replicas) -> None:
    body, headers = replicas.command("help")
    assert (await replicas.post(0, body, headers))[0] == 200
    assert await replicas.responses(1) == 1

    assert await replicas.post(0, body, headers) == (200, "")  # acknowledged, nothing run

    fresh, fresh_headers = replicas.command("whoami")
    assert (await replicas.post(0, fresh, fresh_headers))[0] == 200
    assert await replicas.responses(2) == 2  # the next command runs; the replay never did


async def test_a_replay_sent_to_another_replica_is_refused_there(replicas: Replicas) -> None:
    body, headers = replicas.command("help")
    assert (await replicas.post(0, body, headers))[0] == 200
    assert await replicas.responses(1) == 1

    assert await replicas.post(1, body, headers) == (200, "")

    fresh, fresh_headers = replicas.command("whoami")
    assert (await replicas.post(1, fresh, fresh_headers))[0] == 200
    assert await replicas.responses(2) == 2


def test_claims_older_than_their_window_are_pruned(tmp_path: Path) -> None:
    engine = migrated_engine(f"sqlite:///{tmp_path / 'meta.db'}")
    assert claim_delivery(engine, "slack-sig:v0=old", "slack-sig", SIGNATURE_RETENTION)
    assert claim_delivery(engine, "github-delivery-1", "push")
    with Session(engine) as s:  # both claims age past the signature window
        for row in s.exec(select(WebhookDelivery)).all():
            row.received_at = utcnow() - SIGNATURE_RETENTION - timedelta(minutes=1)
            s.add(row)
        s.commit()

    assert not claim_delivery(engine, "github-delivery-1", "push")  # kept for days
    assert claim_delivery(engine, "slack-sig:v0=new", "slack-sig", SIGNATURE_RETENTION)

    with Session(engine) as s:
        ids = sorted(row.delivery_id for row in s.exec(select(WebhookDelivery)).all())
    assert ids == ["github-delivery-1", "slack-sig:v0=new"]
    assert claim_delivery(engine, "slack-sig:v0=old", "slack-sig", SIGNATURE_RETENTION)
    engine.dispose()
