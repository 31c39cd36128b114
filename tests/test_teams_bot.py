"""The Teams bot end to end: the real aiohttp endpoint and the SDK's real JWT validation,
a local Bot Connector receiving the replies, real git repos in the embedded store, the
real embedder, a local GitHub for permissions and a local OpenAI-compatible model."""

from __future__ import annotations

import functools
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp.test_utils import TestServer
from cryptography.hazmat.primitives.asymmetric import rsa

from acl import AclSettings
from acl.permissions import REASON_CHANNEL
from bot.answer import NOT_FOUND_TEXT, AnswerPipeline, Asker
from bot.answer.llm import LiteLLMClient
from bot.chat.feedback import feedback_for
from bot.server import create_app
from bot.services import Services
from bot.settings import BotSettings
from bot.teams.endpoint import TEAMS, mount_teams
from bot.teams.turns import SENT_PRIVATELY, WELCOME
from indexer.embedding import SqliteEmbeddingCache
from indexer.jobs import Repo, index_repository
from indexer.search import Searcher
from indexer.settings import IndexerSettings
from indexer.stores import SqliteStore
from tests.conftest import git
from tests.fake_github import FakeGitHub, FakeGitHubServer
from tests.fake_llm import FakeLLM, Reply, running_fake_llm
from tests.fake_teams import FakeBotConnector

PAYMENTS = {
    "payments/retry.py": '''"""Retry policy for calls to the card processor."""

import random


class RetryPolicy:
    """How failed charges are retried."""

    def __init__(self, base_delay: float = 0.5, max_attempts: int = 5) -> None:
        self.base_delay = base_delay
        self.max_attempts = max_attempts

    def backoff_delay(self, attempt: int) -> float:
        """Exponential backoff with full jitter: the delay doubles with every attempt."""
        cap = self.base_delay * (2 ** attempt)
        return random.uniform(0, cap)
''',
}
VAULT = {
    "vault/rotation.py": '''"""Rotation of the token signing keys."""

ROTATION_DAYS = 30


def rotate_signing_key(keyring: list[str], new_key: str) -> list[str]:
    """Rotate the token signing key: the new key signs, the previous one only verifies."""
    return [new_key, *keyring[:1]]
''',
}
RETRY_Q = "How is the retry backoff delay computed?"
VAULT_Q = "How is the token signing key rotated?"
ADMIN, ALICE, BOB = "aad-admin", "aad-alice", "aad-bob"
TENANT = "tenant-1"
TEAM_CHANNEL = "19:general@thread.tacv2"


@pytest.fixture(scope="module")
def connector() -> Iterator[FakeBotConnector]:
    fake = FakeBotConnector()
    fake.start()
    yield fake
    fake.stop()


@pytest.fixture(scope="module")
def llm() -> Iterator[FakeLLM]:
    with running_fake_llm() as server:
        yield server


@pytest.fixture(scope="module")
def github() -> Iterator[FakeGitHubServer]:
    fake = FakeGitHub()
    fake.add_repo("acme/payments", "public")
    fake.add_repo("acme/vault", "private")
    fake.add_user("alice")
    fake.roles[("acme/vault", "alice")] = "read"
    with FakeGitHubServer(fake) as server:
        yield server


def _settings(connector: FakeBotConnector, llm: FakeLLM, **overrides: Any) -> BotSettings:
    values: dict[str, Any] = {
        "teams_app_id": connector.app_id,
        "teams_app_password": connector.app_password,
        "teams_admins": ADMIN,
        "teams_update_seconds": 0.01,
        "teams_openid_metadata_url": connector.openid_url,
        "teams_emulator_openid_metadata_url": connector.openid_url,
        "teams_login_url": connector.login_url,
        "llm_model": "tiny-model",
        "llm_api_base": llm.base_url,
        "llm_retries": 0,
        "llm_timeout": 20,
        **overrides,
    }
    return BotSettings(**values)


@pytest.fixture(scope="module")
def services(
    tmp_path_factory: pytest.TempPathFactory,
    embedder: Any,
    connector: FakeBotConnector,
    llm: FakeLLM,
    github: FakeGitHubServer,
) -> Iterator[Services]:
    base = tmp_path_factory.mktemp("teams")
    indexer = IndexerSettings(data_dir=base / "data", database_url=f"sqlite:///{base / 'meta.db'}")
    store = SqliteStore(indexer.sqlite_path)
    cache = SqliteEmbeddingCache(base / "embeddings.db")
    for name, files, visibility in (
        ("acme/payments", PAYMENTS, "public"),
        ("acme/vault", VAULT, "private"),
    ):
        root = base / name.replace("/", "_")
        _commit(root, files)
        index_repository(root, name, store, embedder, cache, visibility=visibility)
    store.close()
    acl = AclSettings(
        github_api_url=github.url,
        github_token=github.fake.token,
    )
    svc = Services(_settings(connector, llm), acl, indexer)
    for name, visibility in (("acme/payments", "public"), ("acme/vault", "private")):
        svc.registry.save(Repo(full_name=name, visibility=visibility, status="ready"))
    svc.acl_store.link("teams", ALICE, github.fake.users["alice"], "alice")
    yield svc
    svc.close()


@pytest.fixture(scope="module")
def asker(services: Services, embedder: Any) -> Asker:
    settings = services.bot
    pipeline = AnswerPipeline(
        Searcher(services.store, embedder), settings, llm=LiteLLMClient(settings, backoff=0.01)
    )
    return Asker(services, pipeline=pipeline)


class Teams:
    """Sends activities to the bot the way the Bot Connector does."""

    def __init__(self, server: TestServer, connector: FakeBotConnector) -> None:
        self.server = server
        self.connector = connector
        self.app = server.app
        self._n = 0

    async def post(
        self, activity: dict[str, Any], token: str | None = "valid"
    ) -> aiohttp.ClientResponse:
        headers = {"Content-Type": "application/json"}
        if token == "valid":
            token = self.connector.sign()
        if token:
            headers["Authorization"] = f"Bearer {token}"
        async with aiohttp.ClientSession() as session:
            response = await session.post(
                self.server.make_url("/api/messages"), data=json.dumps(activity), headers=headers
            )
            await response.read()
        await self.app[TEAMS].drain()
        return response

    def activity(self, text: str, user: str, place: str, **extra: Any) -> dict[str, Any]:
        self._n += 1
        activity_id = f"1699{self._n:09d}"
        bot = {"id": f"28:{self.connector.app_id}", "name": "codeask"}
        conversation: dict[str, Any] = {"tenantId": TENANT}
        channel_data: dict[str, Any] = {"tenant": {"id": TENANT}}
        entities: list[dict[str, Any]] = [{"type": "clientInfo", "locale": "en-US"}]
        if place == "personal":
            conversation |= {"conversationType": "personal", "id": f"a:1{user}"}
        elif place == "groupChat":
            conversation |= {
                "conversationType": "groupChat",
                "isGroup": True,
                "id": "19:group-chat@thread.v2",
            }
        else:
            conversation |= {
                "conversationType": "channel",
                "isGroup": True,
                "id": f"{place};messageid={activity_id}",
            }
            channel_data |= {
                "teamsChannelId": place,
                "channel": {"id": place},
                "team": {"id": "19:team@thread.tacv2"},
            }
        if place != "personal" and text:
            text = f"<at>codeask</at> {text}"
            entities.append({"type": "mention", "text": "<at>codeask</at>", "mentioned": bot})
        return {
            "type": "message",
            "id": activity_id,
            "timestamp": "2024-05-01T10:00:00.000Z",
            "serviceUrl": self.connector.service_url,
            "channelId": "msteams",
            "from": {"id": f"29:{user}", "name": user, "aadObjectId": user},
            "conversation": conversation,
            "recipient": bot,
            "text": text,
            "textFormat": "plain",
            "entities": entities,
            "channelData": channel_data,
            **extra,
        }


@pytest.fixture
async def teams(
    services: Services, asker: Asker, connector: FakeBotConnector
) -> AsyncIterator[Teams]:
    app = create_app(
        services, mounts=[functools.partial(mount_teams, asker=asker)], reconcile_seconds=0
    )
    server = TestServer(app)
    await server.start_server()
    connector.calls.clear()
    yield Teams(server, connector)
    await server.close()


def _card(call: Any) -> dict[str, Any]:
    attachments = call.body.get("attachments") or []
    assert (
        attachments and attachments[0]["contentType"] == "application/vnd.microsoft.card.adaptive"
    )
    return attachments[0]["content"]


def _card_text(call: Any) -> str:
    return json.dumps(_card(call), ensure_ascii=False)


def _commit(root: Path, files: dict[str, str]) -> None:
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "initial")


# --- authentication ---------------------------------------------------------------------


async def test_requests_without_a_valid_bot_connector_token_are_refused(teams: Teams) -> None:
    activity = teams.activity(RETRY_Q, ALICE, "personal")
    other_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    connector = teams.connector
    for token in (
        None,
        "not-a-jwt",
        connector.sign(key=other_key),  # right kid, wrong signature
        connector.sign(audience="another-bot"),
        connector.sign(issuer="https://evil.example.com"),
        connector.sign(service_url="https://elsewhere.example.com/"),
        connector.sign(expires_in=-3600),
    ):
        response = await teams.post(activity, token=token)
        assert response.status == 401, token
    assert connector.sent() == []


async def test_unconfigured_bot_answers_503(
    services: Services, connector: FakeBotConnector, llm: FakeLLM
) -> None:
    bare = Services(
        _settings(connector, llm, teams_app_password=""), services.acl, services.indexer
    )
    app = create_app(bare, mounts=[mount_teams], reconcile_seconds=0)
    async with TestServer(app) as server, aiohttp.ClientSession() as session:
        response = await session.post(server.make_url("/api/messages"), json={"type": "message"})
        assert response.status == 503
        assert "CODEASK_TEAMS_APP_ID" in (await response.json())["error"]


# --- asking -----------------------------------------------------------------------------


async def test_channel_mention_gets_a_threaded_card_with_commit_pinned_citations(
    teams: Teams, llm: FakeLLM
) -> None:
    llm.script(Reply("The delay doubles with every attempt, with full jitter [1]."))
    activity = teams.activity(RETRY_Q, BOB, TEAM_CHANNEL)
    response = await teams.post(activity)
    assert response.status == 202
    conversation = activity["conversation"]["id"]
    calls = teams.connector.sent(conversation)
    assert [c.body["type"] for c in calls[:2]] == ["typing", "message"]
    progress = calls[1]  # posted at once in the thread, then edited into the answer
    assert progress.method == "POST" and progress.activity_id == activity["id"]
    assert progress.body["text"].endswith("…")
    assert all(c.method == "PUT" or c.body["type"] == "typing" for c in calls[2:])
    reply = calls[-1]
    assert reply.method == "PUT" and reply.activity_id == progress.response_id
    assert reply.authorization.removeprefix("Bearer ") in teams.connector.issued_tokens
    card = _card(reply)
    assert card["version"] == "1.5"
    answer = card["body"][0]["text"]
    assert answer.startswith("The delay doubles with every attempt, with full jitter [[1]](")
    assert "https://github.com/acme/payments/blob/" in answer and "payments/retry.py#L" in answer
    facts = next(b for b in card["body"] if b["type"] == "FactSet")["facts"]
    assert facts[0]["title"] == "[1]" and facts[0]["value"].startswith("[payments/retry.py:")
    assert facts[0]["value"].endswith(" · acme/payments")
    feedback = [a["data"] for a in card["actions"] if a["type"] == "Action.Execute"]
    assert {d["verdict"] for d in feedback} == {"helpful", "wrong"}
    # The question reached the model without the @mention.
    assert "<at>" not in json.dumps(llm.requests[-1]["messages"][-1])
    assert teams.connector.token_requests[-1]["client_id"] == teams.connector.app_id


async def test_personal_chat_answer_uses_the_askers_private_access_and_streams(
    teams: Teams, llm: FakeLLM
) -> None:
    llm.script(Reply("The new key signs and the previous one only verifies [1].", piece=4))
    activity = teams.activity(VAULT_Q, ALICE, "personal")
    await teams.post(activity)
    calls = teams.connector.sent(activity["conversation"]["id"])
    assert calls[0].body["type"] == "typing"
    placeholder = calls[1]
    assert placeholder.method == "POST" and placeholder.body["text"].endswith("…")
    edits = [c for c in calls[2:] if c.method == "PUT"]
    assert edits and len(edits) == len(calls) - 2  # every later call edits the placeholder
    final = edits[-1]
    assert final.activity_id == placeholder.response_id
    text = _card_text(final)
    assert "https://github.com/acme/vault/blob/" in text and "vault/rotation.py#L" in text


async def test_group_chat_withholds_private_code_and_says_so(teams: Teams, llm: FakeLLM) -> None:
    llm.script(Reply("It is not in the shared code [1]."))
    activity = teams.activity(VAULT_Q, ALICE, "groupChat")
    await teams.post(activity)
    shared = teams.connector.sent(activity["conversation"]["id"])
    assert shared[-1].method == "PUT" and _card(shared[-1])["type"] == "AdaptiveCard"
    everything = json.dumps([c.body for c in shared])
    assert "acme/vault" not in everything and "rotate_signing_key" not in everything
    assert all("rotate_signing_key" not in json.dumps(r) for r in llm.requests)
    # The note that more could be answered in private goes to the asker alone.
    assert REASON_CHANNEL not in everything and "direct message" not in everything
    created = teams.connector.created_conversations[-1]
    assert created["members"][0]["id"] == f"29:{ALICE}" and created["isGroup"] is False
    [note] = teams.connector.messages(f"a:personal-29:{ALICE}")
    assert REASON_CHANNEL.split(".")[0] in _card_text(note)
    assert VAULT_Q in _card_text(note)  # says which question it is about
    assert "acme/vault" not in _card_text(note)

    # "Answer me here", from the personal chat: her question again, with her own access.
    [button] = _card(note)["actions"]
    for user in (BOB, ALICE):  # a forged click by Bob gets nothing of it
        if user == ALICE:
            llm.script(Reply("The new key signs and the previous one only verifies [1]."))
        asked = len(llm.requests)
        click = teams.activity("", user, "personal", value=button["data"])
        await teams.post(click)
        private = json.dumps([c.body for c in teams.connector.sent(click["conversation"]["id"])])
        assert ("vault/rotation.py#L" in private) is (user == ALICE)
        assert (len(llm.requests) > asked) is (user == ALICE)
        assert VAULT_Q not in private or user == ALICE


async def test_conversation_without_a_type_is_treated_as_shared_not_as_a_dm(
    teams: Teams, llm: FakeLLM
) -> None:
    # Other Bot Framework channels may leave conversationType out; a group conversation
    # like that must not get the asker's private access.
    llm.script(Reply("It is not in the shared code [1]."))
    activity = teams.activity(VAULT_Q, ALICE, "groupChat")
    del activity["conversation"]["conversationType"]
    await teams.post(activity)
    messages = teams.connector.messages(activity["conversation"]["id"])
    text = json.dumps([c.body for c in messages])
    assert messages[-1].method == "PUT" and _card(messages[-1])["type"] == "AdaptiveCard"
    assert "acme/vault" not in text and "rotate_signing_key" not in text
    assert all("rotate_signing_key" not in json.dumps(r) for r in llm.requests)


async def test_bodies_that_are_not_an_activity_get_400_before_authentication(
    teams: Teams,
) -> None:
    async with aiohttp.ClientSession() as session:
        for body in ("null", "[]", '"text"', "42", "{not json"):
            response = await session.post(
                teams.server.make_url("/api/messages"),
                data=body,
                headers={"Content-Type": "application/json"},
            )
            assert response.status == 400, body
    assert teams.connector.sent() == []


async def test_question_the_code_cannot_answer_says_not_found(teams: Teams, llm: FakeLLM) -> None:
    llm.script(Reply("should never be sent [1]"))
    activity = teams.activity(
        "How do we configure the Kubernetes horizontal pod autoscaler for the GPU cluster?",
        BOB,
        TEAM_CHANNEL,
    )
    await teams.post(activity)
    assert llm.requests == []
    assert NOT_FOUND_TEXT in _card_text(
        teams.connector.messages(activity["conversation"]["id"])[-1]
    )


async def test_not_found_names_only_the_repositories_its_audience_may_read(
    teams: Teams, llm: FakeLLM
) -> None:
    question = "How do we configure the Kubernetes horizontal pod autoscaler for the GPU cluster?"
    # Alice can read acme/vault; a channel's audience cannot, so it is never named there.
    channel = teams.activity(question, ALICE, TEAM_CHANNEL)
    await teams.post(channel)
    card = _card(teams.connector.messages(channel["conversation"]["id"])[-1])
    assert card["body"][0]["type"] == "Container" and card["body"][0]["style"] == "warning"
    assert NOT_FOUND_TEXT in json.dumps(card["body"][0])
    assert "Searched: acme/payments" in json.dumps(card)
    assert "acme/vault" not in json.dumps(card) and "rotate_signing_key" not in json.dumps(card)
    assert not [a for a in card.get("actions", []) if a["type"] == "Action.Submit"]

    personal = teams.activity(question, ALICE, "personal")
    await teams.post(personal)
    text = _card_text(teams.connector.sent(personal["conversation"]["id"])[-1])
    assert "Searched: acme/payments, acme/vault" in text
    assert llm.requests == []


async def test_language_model_down_gives_a_clear_message(teams: Teams, llm: FakeLLM) -> None:
    llm.script(Reply(status=500))
    activity = teams.activity(RETRY_Q, BOB, TEAM_CHANNEL)
    await teams.post(activity)
    card = _card(teams.connector.messages(activity["conversation"]["id"])[-1])
    text = json.dumps(card)
    assert card["body"][0]["style"] == "warning"
    assert "The language model is unavailable right now" in text
    assert "payments/retry.py" in text  # still shows where to look
    assert "Traceback" not in text
    retry = next(a for a in card["actions"] if a["type"] == "Action.Submit")
    assert retry["title"] == "Retry" and retry["data"]["action"] == "retry"
    assert [a["type"] for a in card["actions"]] == ["Action.Submit", "Action.ShowCard"]

    # Anyone in the channel may ask it again: answered for them, with the channel's access.
    llm.script(Reply("The delay doubles with every attempt, with full jitter [1]."))
    click = teams.activity("", ALICE, TEAM_CHANNEL, value=retry["data"])
    await teams.post(click)
    again = _card(teams.connector.messages(click["conversation"]["id"])[-1])
    assert again["body"][0]["text"].startswith("The delay doubles with every attempt")
    assert RETRY_Q in json.dumps(llm.requests[-1]["messages"][-1])
    assert "acme/vault" not in json.dumps(again)


async def test_retry_of_a_personal_answer_is_refused_to_anyone_else_and_anywhere_else(
    teams: Teams, services: Services, llm: FakeLLM
) -> None:
    llm.script(Reply(status=500))
    activity = teams.activity(VAULT_Q, ALICE, "personal")
    await teams.post(activity)
    card = _card(teams.connector.sent(activity["conversation"]["id"])[-1])
    assert "vault/rotation.py" in json.dumps(card)  # the places found, for Alice alone
    retry = next(a["data"] for a in card["actions"] if a["type"] == "Action.Submit")
    llm.script(Reply("The new key signs and the previous one only verifies [1]."))
    for user, place in ((BOB, TEAM_CHANNEL), (BOB, "personal"), (ALICE, TEAM_CHANNEL)):
        since = len(teams.connector.sent())
        submit = teams.activity("", user, place, value=retry)
        await teams.post(submit)
        invoke = teams.activity("", user, place)
        invoke |= {
            "type": "invoke",
            "name": "adaptiveCard/action",
            "value": {"action": {"type": "Action.Execute", "verb": "retry", "data": retry}},
        }
        response = await teams.post(invoke)
        assert response.status == 200 and "not available to you here" in await response.text()
        sent = teams.connector.sent()[since:]
        assert [_card(c)["body"][0]["text"] for c in sent] == [
            "That answer is not available to you here; please ask me again."
        ]
        assert "acme/vault" not in json.dumps([c.body for c in sent])
    assert llm.requests == []  # nothing was asked again

    # Alice, in her personal chat, gets the answer again (an invoke answers before replying).
    invoke = teams.activity("", ALICE, "personal")
    invoke |= {
        "type": "invoke",
        "name": "adaptiveCard/action",
        "value": {"action": {"type": "Action.Execute", "verb": "retry", "data": retry}},
    }
    response = await teams.post(invoke)
    assert response.status == 200 and "Asked again." in await response.text()
    final = teams.connector.sent(invoke["conversation"]["id"])[-1]
    assert "https://github.com/acme/vault/blob/" in _card_text(final)
    audit = services.acl_store.audit_entries(limit=1)[0]
    assert audit.user_id == ALICE and audit.place == "dm"


# --- commands ---------------------------------------------------------------------------


async def test_admin_grants_a_private_repo_to_a_channel(
    teams: Teams, services: Services, llm: FakeLLM
) -> None:
    channel = "19:vault-team@thread.tacv2"
    grant = teams.activity("channel grant acme/vault", ADMIN, channel)
    await teams.post(grant)
    reply = teams.connector.messages(grant["conversation"]["id"])[-1]
    assert reply.activity_id == grant["id"]
    assert "Everyone in this channel may now see answers from acme/vault." in _card_text(reply)
    assert services.acl_store.channel_grants("teams", channel) == frozenset({"acme/vault"})

    llm.script(Reply("The new key signs and the previous one only verifies [1]."))
    question = teams.activity(VAULT_Q, BOB, channel)
    await teams.post(question)
    answer = _card(teams.connector.messages(question["conversation"]["id"])[-1])
    facts = next(b for b in answer["body"] if b["type"] == "FactSet")["facts"]
    assert "vault/rotation.py:" in facts[0]["value"] and " · acme/vault" in facts[0]["value"]


async def test_non_admin_command_is_refused(teams: Teams, services: Services) -> None:
    activity = teams.activity("repo remove acme/vault", BOB, TEAM_CHANNEL)
    await teams.post(activity)
    text = _card_text(teams.connector.messages(activity["conversation"]["id"])[-1])
    assert "Only codeask admins can run that command" in text
    repo = services.registry.get("acme/vault")
    assert repo is not None and repo.status == "ready"


async def test_private_command_result_goes_to_a_personal_chat_not_the_channel(
    teams: Teams,
) -> None:
    activity = teams.activity("repo list", ADMIN, TEAM_CHANNEL)
    await teams.post(activity)
    thread = teams.connector.messages(activity["conversation"]["id"])
    assert len(thread) == 1 and SENT_PRIVATELY in _card_text(thread[0])
    assert "acme/vault" not in _card_text(thread[0])
    created = teams.connector.created_conversations[-1]
    assert created["members"][0]["id"] == f"29:{ADMIN}"
    assert created["channelData"]["tenant"]["id"] == TENANT
    private = teams.connector.messages(f"a:personal-29:{ADMIN}")[-1]
    assert "acme/vault" in _card_text(private) and "acme/payments" in _card_text(private)


async def test_a_failed_connector_call_is_counted_and_the_result_stays_private(
    teams: Teams, services: Services
) -> None:
    teams.connector.refuse_conversations = 1
    activity = teams.activity("repo list", ADMIN, TEAM_CHANNEL)
    await teams.post(activity)
    thread = teams.connector.messages(activity["conversation"]["id"])
    assert "could not reach you in a personal chat" in _card_text(thread[-1])
    assert "acme/vault" not in _card_text(thread[-1])
    scrape = services.metrics.render().decode()
    counted = [
        line
        for line in scrape.splitlines()
        if line.startswith("codeask_upstream_errors_total") and 'service="teams"' in line
    ]
    assert len(counted) == 1 and counted[0].endswith(" 1.0"), counted
    assert "_403" in counted[0], counted


async def test_a_repo_indexed_from_the_command_line_is_listed_only_to_the_admin_privately(
    teams: Teams, services: Services, embedder: Any, tmp_path: Path
) -> None:
    # Written by `codeask index` (the store has it, the registry does not), private.
    root = tmp_path / "ledger"
    _commit(root, {"ledger/book.py": "def post_entry(book, entry):\n    book.append(entry)\n"})
    cache = SqliteEmbeddingCache(tmp_path / "embeddings.db")
    index_repository(root, "acme/ledger", services.store, embedder, cache, visibility="private")
    try:
        refused = teams.activity("status", BOB, TEAM_CHANNEL)
        await teams.post(refused)
        text = _card_text(teams.connector.messages(refused["conversation"]["id"])[-1])
        assert "Only codeask admins can run that command" in text and "acme/ledger" not in text

        for command in ("repo list", "status"):
            activity = teams.activity(command, ADMIN, TEAM_CHANNEL)
            await teams.post(activity)
            thread = teams.connector.messages(activity["conversation"]["id"])
            assert SENT_PRIVATELY in _card_text(thread[-1])
            assert all("acme/ledger" not in _card_text(m) for m in thread)
            private = _card_text(teams.connector.messages(f"a:personal-29:{ADMIN}")[-1])
            assert "acme/ledger" in private and "indexed from the command line" in private
            assert "acme/vault" in private and "registered with **repo add**" in private
    finally:
        services.store.delete_repo("acme/ledger")


async def test_personal_whoami_uses_the_aad_object_id(teams: Teams) -> None:
    activity = teams.activity("whoami", ALICE, "personal")
    await teams.post(activity)
    text = _card_text(teams.connector.messages(activity["conversation"]["id"])[-1])
    assert f"teams:{ALICE}" in text and "@alice" in text


# --- conversation updates and card actions ---------------------------------------------


async def test_bot_added_to_a_team_says_hello(teams: Teams) -> None:
    activity = teams.activity("", ADMIN, TEAM_CHANNEL)
    activity |= {"type": "conversationUpdate", "membersAdded": [activity["recipient"]]}
    del activity["text"]
    await teams.post(activity)
    messages = teams.connector.messages(activity["conversation"]["id"])
    assert len(messages) == 1 and WELCOME in _card_text(messages[0])


def _vote(teams: Teams, user: str, place: str, data: dict[str, Any]) -> dict[str, Any]:
    """The invoke Teams sends when ``user`` clicks an Action.Execute vote button."""
    invoke = teams.activity("", user, place)
    invoke |= {
        "type": "invoke",
        "name": "adaptiveCard/action",
        "value": {
            "action": {"type": "Action.Execute", "verb": "feedback", "data": data},
            "trigger": "manual",
        },
    }
    return invoke


def _vote_buttons(card: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The card's vote buttons by title (not "Show sources", which opens a view)."""
    return {a["title"]: a for a in card["actions"] if a.get("data", {}).get("action") == "feedback"}


async def test_a_vote_refreshes_the_card_for_the_voter_only_and_is_one_per_user(
    teams: Teams, services: Services, llm: FakeLLM
) -> None:
    llm.script(Reply("The delay doubles with every attempt, with full jitter [1]."))
    activity = teams.activity(RETRY_Q, BOB, TEAM_CHANNEL)
    await teams.post(activity)
    posted = _card(teams.connector.messages(activity["conversation"]["id"])[-1])
    buttons = _vote_buttons(posted)
    assert {a["type"] for a in buttons.values()} == {"Action.Execute"}
    helpful, wrong = buttons["Helpful"]["data"], buttons["Wrong or unhelpful"]["data"]
    question_id = helpful["question_id"]
    engine = services.acl_store.engine
    sent_before = len(teams.connector.sent())

    response = await teams.post(_vote(teams, BOB, TEAM_CHANNEL, helpful))
    assert response.status == 200
    refreshed = await response.json()
    assert refreshed["statusCode"] == 200
    assert refreshed["type"] == "application/vnd.microsoft.card.adaptive"
    card = refreshed["value"]
    assert card["version"] == "1.5" and card["body"][0] == posted["body"][0]  # the same answer
    assert card["body"][-1]["text"] == "You marked this answer helpful."
    assert set(_vote_buttons(card)) == {"Wrong or unhelpful", "Undo"}
    assert [(f.user_id, f.verdict) for f in feedback_for(engine, question_id)] == [(BOB, "helpful")]

    # A later vote replaces the earlier one; Undo removes it and restores the buttons.
    changed = await (await teams.post(_vote(teams, BOB, TEAM_CHANNEL, wrong))).json()
    assert "You marked this answer wrong" in changed["value"]["body"][-1]["text"]
    assert set(_vote_buttons(changed["value"])) == {"Helpful", "Undo"}
    assert [(f.user_id, f.verdict) for f in feedback_for(engine, question_id)] == [(BOB, "wrong")]
    await teams.post(_vote(teams, ALICE, TEAM_CHANNEL, helpful))
    assert len(feedback_for(engine, question_id)) == 2  # one row per voter

    undo = _vote_buttons(changed["value"])["Undo"]["data"]
    undone = await (await teams.post(_vote(teams, BOB, TEAM_CHANNEL, undo))).json()
    assert set(_vote_buttons(undone["value"])) == {"Helpful", "Wrong or unhelpful"}
    assert "You marked" not in json.dumps(undone["value"])
    assert [(f.user_id, f.verdict) for f in feedback_for(engine, question_id)] == [
        (ALICE, "helpful")
    ]

    # A vote from a card posted before (Action.Submit) still counts, and says nothing.
    submit = teams.activity("", BOB, TEAM_CHANNEL, value=helpful)
    await teams.post(submit)
    votes = {(f.user_id, f.verdict) for f in feedback_for(engine, question_id)}
    assert votes == {(BOB, "helpful"), (ALICE, "helpful")}
    assert teams.connector.sent()[sent_before:] == []  # no click posted anything anywhere

    forged = teams.activity("", ALICE, TEAM_CHANNEL, value={**helpful, "question_id": "nope"})
    await teams.post(forged)
    assert feedback_for(engine, "nope") == []


async def test_feedback_on_a_personal_answer_is_refused_to_anyone_else_and_anywhere_else(
    teams: Teams, services: Services, llm: FakeLLM
) -> None:
    llm.script(Reply("The new key signs and the previous one only verifies [1]."))
    activity = teams.activity(VAULT_Q, ALICE, "personal")
    await teams.post(activity)
    card = _card(teams.connector.sent(activity["conversation"]["id"])[-1])
    helpful = next(a["data"] for a in card["actions"] if a["data"]["verdict"] == "helpful")
    engine = services.acl_store.engine
    for user, place in ((BOB, TEAM_CHANNEL), (BOB, "personal"), (ALICE, TEAM_CHANNEL)):
        invoke = teams.activity("", user, place)
        invoke |= {
            "type": "invoke",
            "name": "adaptiveCard/action",
            "value": {"action": {"type": "Action.Execute", "verb": "feedback", "data": helpful}},
        }
        response = await teams.post(invoke)
        assert response.status == 200 and "unknown" in await response.text()
        submit = teams.activity("", user, place, value=helpful)
        await teams.post(submit)
    assert feedback_for(engine, helpful["question_id"]) == []

    mine = teams.activity("", ALICE, "personal", value=helpful)
    await teams.post(mine)
    assert [(f.user_id, f.verdict) for f in feedback_for(engine, helpful["question_id"])] == [
        (ALICE, "helpful")
    ]


async def test_personal_chat_and_shared_chats_edit_one_message_with_each_agent_step(
    teams: Teams, llm: FakeLLM
) -> None:
    step = "Looking up the definition of `rotate_signing_key`"
    script = (
        Reply("", tool_calls=(("find_definitions", json.dumps({"name": "rotate_signing_key"})),)),
        Reply("The new key signs and the previous one only verifies [1].", delay=2.0),
    )
    llm.script(*script)
    activity = teams.activity(VAULT_Q, ALICE, "personal")
    await teams.post(activity)
    calls = teams.connector.sent(activity["conversation"]["id"])
    edits = [c for c in calls if c.method == "PUT"]
    assert any(step in json.dumps(c.body) for c in edits[:-1]), [c.body for c in edits]
    assert "vault/rotation.py#L" in _card_text(edits[-1])

    llm.script(
        Reply("", tool_calls=(("find_definitions", json.dumps({"name": "RetryPolicy"})),)),
        Reply("Failed charges are retried by the retry policy [1].", delay=2.0),
    )
    shared = teams.activity("How are failed charges retried?", ALICE, "groupChat")
    await teams.post(shared)
    sent = teams.connector.sent(shared["conversation"]["id"])
    typing = [c for c in sent if c.body.get("type") == "typing"]
    assert len(typing) >= 2  # the typing indicator goes on at every step too
    [progress] = [c for c in sent if c.method == "POST" and c.body.get("type") == "message"]
    edits = [c for c in sent if c.method == "PUT"]
    assert edits and all(c.activity_id == progress.response_id for c in edits)  # in place
    shown = "Looking up the definition of `RetryPolicy`"
    assert any(shown in json.dumps(c.body) for c in edits[:-1]), [c.body for c in edits]
    assert "payments/retry.py#L" in _card_text(edits[-1])
    assert len(llm.requests) == 2
    for call in sent:  # a step shows only what everyone in the chat may read
        assert "rotate_signing_key" not in json.dumps(call.body)
        assert "acme/vault" not in json.dumps(call.body)
