"""The Slack end-to-end world: codeask's real server with the Slack adapter, signed
Slack payloads, and local Slack, GitHub and LLM servers."""

from __future__ import annotations

import hashlib
import hmac
import json
import shutil
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import aiohttp
import pytest
from aiohttp.test_utils import TestServer

from acl import AclSettings
from bot.answer import AnswerPipeline, Asker
from bot.server import create_app
from bot.services import Services
from bot.settings import BotSettings
from bot.slack import slack_mount
from indexer.embedding import SqliteEmbeddingCache
from indexer.jobs import index_repository
from indexer.search import Searcher
from indexer.settings import IndexerSettings
from indexer.stores import SqliteStore
from tests.conftest import git
from tests.fake_github import FakeGitHub, FakeGitHubServer
from tests.fake_llm import FakeLLM, Reply
from tests.fake_slack import TEAM, FakeSlack

SIGNING_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
LLM_ANSWER = "It **retries** the call with exponential backoff [1]."

PUBLIC_REPO = "acme/widgets"
PRIVATE_REPO = "acme/vault"
PRIVATE_PATH = "crypto/keys.py"
PRIVATE_SYMBOL = "rotate_master_key"
PUBLIC_FILES = {
    "net/retry.py": (
        "def retry_with_backoff(call, attempts=5):\n"
        '    """Retry a network call with exponential backoff between attempts."""\n'
        "    for attempt in range(attempts):\n"
        "        try:\n"
        "            return call()\n"
        "        except ConnectionError:\n"
        "            sleep(2 ** attempt)\n"
    ),
    "README.md": "# widgets\n\nSmall network helpers: retries and timeouts.\n",
}
PRIVATE_FILES = {
    PRIVATE_PATH: (
        f"def {PRIVATE_SYMBOL}(vault):\n"
        '    """Rotate the master encryption key and re-wrap every data key."""\n'
        "    new_key = vault.generate_key()\n"
        "    for data_key in vault.data_keys():\n"
        "        data_key.rewrap(new_key)\n"
        "    vault.activate(new_key)\n"
    ),
}


def sign(body: str, timestamp: int | None = None, secret: str = SIGNING_SECRET) -> dict[str, str]:
    """Headers Slack sends: ``v0=`` HMAC-SHA256 of ``v0:{timestamp}:{body}``."""
    ts = str(int(time.time()) if timestamp is None else timestamp)
    digest = hmac.new(secret.encode(), f"v0:{ts}:{body}".encode(), hashlib.sha256).hexdigest()
    return {"X-Slack-Request-Timestamp": ts, "X-Slack-Signature": f"v0={digest}"}


def event_callback(event: dict[str, Any], event_id: str) -> dict[str, Any]:
    """An Events API envelope as Slack documents it."""
    return {
        "token": "XXYYZZ",
        "team_id": TEAM,
        "api_app_id": "A0CODEASK",
        "event": event,
        "type": "event_callback",
        "event_id": event_id,
        "event_time": int(time.time()),
        "authorizations": [
            {
                "enterprise_id": None,
                "team_id": TEAM,
                "user_id": "UBOT",
                "is_bot": True,
                "is_enterprise_install": False,
            }
        ],
        "is_ext_shared_channel": False,
        "event_context": "4-eyJldCI6ImFwcF9tZW50aW9uIn0",
    }


def mention(
    text: str,
    ts: str,
    channel: str = "C0GENERAL",
    user: str = "U0ALICE",
    thread_ts: str | None = None,
) -> dict[str, Any]:
    event = {
        "type": "app_mention",
        "user": user,
        "text": f"<@UBOT> {text}",
        "ts": ts,
        "channel": channel,
        "event_ts": ts,
        "client_msg_id": f"msg-{ts}",
    }
    if thread_ts:
        event["thread_ts"] = thread_ts
    return event


def direct_message(
    text: str, ts: str, user: str = "U0ALICE", channel: str = "D0ALICE"
) -> dict[str, Any]:
    return {
        "type": "message",
        "channel": channel,
        "user": user,
        "text": text,
        "ts": ts,
        "event_ts": ts,
        "channel_type": "im",
        "client_msg_id": f"msg-{ts}",
    }


def slash_command(
    text: str, response_url: str, user: str = "U0ALICE", channel: str = "C0GENERAL"
) -> dict[str, str]:
    """A slash-command form as Slack documents it."""
    return {
        "token": "gIkuvaNzQIHg97ATvDxqgjtO",
        "team_id": TEAM,
        "team_domain": "acme",
        "channel_id": channel,
        "channel_name": "directmessage" if channel.startswith("D") else "general",
        "user_id": user,
        "user_name": user.lower(),
        "command": "/codeask",
        "text": text,
        "api_app_id": "A0CODEASK",
        "is_enterprise_install": "false",
        "response_url": response_url,
        "trigger_id": "13345224609.738474920.8088930838d88f008e0",
    }


def block_action(
    action_id: str,
    value: str,
    message_ts: str,
    user: str = "U0ALICE",
    channel: str = "C0GENERAL",
    *,
    ephemeral: bool = False,
    response_url: str = "http://127.0.0.1:9/unused",
) -> dict[str, Any]:
    """A ``block_actions`` interaction payload as Slack documents it.

    A click on an ephemeral message (only its recipient sees it) carries no ``message``:
    Slack keeps no copy to send back, only the ``response_url`` to reply or replace it.
    """
    payload: dict[str, Any] = {
        "type": "block_actions",
        "team": {"id": TEAM, "domain": "acme"},
        "user": {"id": user, "username": user.lower(), "name": user.lower(), "team_id": TEAM},
        "api_app_id": "A0CODEASK",
        "token": "9s8d9as89d8as9d8as989",
        "container": {
            "type": "message",
            "message_ts": message_ts,
            "channel_id": channel,
            "is_ephemeral": ephemeral,
        },
        "trigger_id": "123123123.0987654321.abcdef",
        "channel": {"id": channel, "name": "general"},
        "message": {
            "type": "message",
            "ts": message_ts,
            "thread_ts": message_ts,
            "text": "answer",
            "bot_id": "BBOT",
        },
        "response_url": response_url,
        "actions": [
            {
                "action_id": action_id,
                "block_id": f"codeask_answer:{value}",
                "text": {"type": "plain_text", "text": "button", "emoji": True},
                "value": value,
                "type": "button",
                "action_ts": "1548426417.840180",
            }
        ],
    }
    if ephemeral:
        del payload["message"]
    return payload


@dataclass
class World:
    services: Services
    server: TestServer
    slack: FakeSlack
    github: FakeGitHub
    llm: FakeLLM
    http: aiohttp.ClientSession

    @property
    def events_url(self) -> str:
        return f"http://127.0.0.1:{self.server.port}/slack/events"

    async def post_event(
        self, event: dict[str, Any], event_id: str, headers: dict[str, str] | None = None
    ) -> aiohttp.ClientResponse:
        body = json.dumps(event_callback(event, event_id))
        return await self.post(body, "application/json", headers)

    async def post_command(
        self, text: str, user: str = "U0ALICE", channel: str = "C0GENERAL"
    ) -> tuple[int, str]:
        body = urlencode(slash_command(text, self.slack.response_url(), user, channel))
        response = await self.post(body, "application/x-www-form-urlencoded")
        return response.status, await response.text()

    async def post_action(self, payload: dict[str, Any]) -> int:
        body = urlencode({"payload": json.dumps(payload)})
        response = await self.post(body, "application/x-www-form-urlencoded")
        return response.status

    async def post(
        self,
        body: str,
        content_type: str,
        headers: dict[str, str] | None = None,
        signed: dict[str, str] | None = None,
    ) -> aiohttp.ClientResponse:
        all_headers = {"Content-Type": content_type, **(signed or sign(body)), **(headers or {})}
        response = await self.http.post(self.events_url, data=body.encode(), headers=all_headers)
        await response.read()
        return response


def world_settings(
    tmp: Path,
    data_dir: Path,
    slack: FakeSlack,
    github_url: str,
    github: FakeGitHub,
    llm: FakeLLM,
    **bot: Any,
) -> Services:
    return Services(
        bot=BotSettings(
            slack_bot_token="xoxb-test-token",
            slack_signing_secret=SIGNING_SECRET,
            slack_api_url=slack.api_url,
            slack_admins="U0ADMIN",
            llm_model="fake-model",
            llm_api_base=llm.base_url,
            llm_retries=0,
            not_found_threshold=-1.0,
            reconcile_seconds=0,
            git_clone_url=f"file://{tmp / 'remotes'}/{{full_name}}",
            **bot,
        ),
        acl=AclSettings(github_api_url=github_url, github_token=github.token),
        indexer=IndexerSettings(data_dir=data_dir, database_url=f"sqlite:///{tmp / 'meta.db'}"),
    )


async def start_server(services: Services, embedder: Any) -> TestServer:
    pipeline = AnswerPipeline(Searcher(services.store, embedder), services.bot)
    app = create_app(services, mounts=[slack_mount(Asker(services, pipeline))], reconcile_seconds=0)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    return server


def commit_repo(root: Path, files: dict[str, str]) -> Path:
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "initial")
    return root


@pytest.fixture(scope="module", name="indexed")
def indexed_fixture(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Path:
    """A data dir whose store holds a public and a private repository."""
    base = tmp_path_factory.mktemp("slack_index")
    data = base / "data"
    data.mkdir()
    store = SqliteStore(data / "codeask.db")
    cache = SqliteEmbeddingCache(data / "embeddings.db")
    for name, files, visibility in (
        (PUBLIC_REPO, PUBLIC_FILES, "public"),
        (PRIVATE_REPO, PRIVATE_FILES, "private"),
    ):
        root = commit_repo(base / "src" / name, files)
        index_repository(root, name, store, embedder, cache, visibility=visibility)
    store.close()
    return data


@pytest.fixture(name="world")
async def world_fixture(
    request: pytest.FixtureRequest, indexed: Path, tmp_path: Path, embedder: Any
) -> AsyncIterator[World]:
    """The world; a test module's ``WORLD_BOT_SETTINGS`` adds BotSettings fields."""
    data = tmp_path / "data"
    shutil.copytree(indexed, data)
    gh = FakeGitHub()
    gh.add_repo(PUBLIC_REPO, "public")
    gh.add_repo(PRIVATE_REPO, "private")
    alice = gh.add_user("alice")
    gh.roles[(PRIVATE_REPO, "alice")] = "read"
    llm = FakeLLM()
    llm.start()
    llm.script(Reply(LLM_ANSWER))
    slack = FakeSlack()
    await slack.start()
    with FakeGitHubServer(gh) as github_server:
        bot = getattr(request.module, "WORLD_BOT_SETTINGS", {})
        services = world_settings(tmp_path, data, slack, github_server.url, gh, llm, **bot)
        services.acl_store.link("slack", "T1:U0ALICE", alice, "alice")
        server = await start_server(services, embedder)
        async with aiohttp.ClientSession() as http:
            yield World(services, server, slack, gh, llm, http)
        await server.close()
        services.close()
    await slack.close()
    llm.stop()
