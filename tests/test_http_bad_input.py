"""Every route of ``codeask serve`` answers bad input with a 4xx, logs no traceback and
keeps serving: a real server on a real socket, every request written byte for byte."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, urlencode

import pytest
from aiohttp.test_utils import TestServer

from acl import AclSettings
from bot.answer import Asker
from bot.server import create_app
from bot.services import Services
from bot.settings import BotSettings
from bot.slack import slack_mount
from bot.teams import mount_teams
from indexer.settings import IndexerSettings
from tests.fake_slack import FakeSlack
from tests.fake_teams import FakeBotConnector
from tests.slack_world import SIGNING_SECRET, slash_command

WEBHOOK_SECRET = "webhook-secret"
DEEP = 100_000
JSON = b"application/json"
FORM = b"application/x-www-form-urlencoded"
MB = 1024 * 1024

Headers = tuple[tuple[bytes, bytes], ...]


@dataclass(frozen=True)
class Probe:
    """One request and the status it must get; ``sign`` says how it is signed when sent."""

    name: str
    path: str
    expect: int
    body: bytes = b""
    content_type: bytes | None = JSON
    headers: Headers = ()
    sign: Callable[[bytes], Headers] | None = None
    method: str = "POST"


def slack_signed(body: bytes, *, at: float | None = None, secret: str = SIGNING_SECRET) -> Headers:
    ts = str(int(time.time() if at is None else at)).encode()
    digest = hmac.new(secret.encode(), b"v0:" + ts + b":" + body, hashlib.sha256).hexdigest()
    return ((b"X-Slack-Request-Timestamp", ts), (b"X-Slack-Signature", f"v0={digest}".encode()))


def slack_expired(body: bytes) -> Headers:
    return slack_signed(body, at=time.time() - 600)


def slack_future(body: bytes) -> Headers:
    return slack_signed(body, at=time.time() + 600)


def slack_forged(body: bytes) -> Headers:
    return slack_signed(body, secret="not-the-signing-secret")


def slack_raw(timestamp: bytes, signature: bytes) -> Callable[[bytes], Headers]:
    def headers(body: bytes) -> Headers:
        return ((b"X-Slack-Request-Timestamp", timestamp), (b"X-Slack-Signature", signature))

    return headers


def slack_non_ascii_signature(body: bytes) -> Headers:
    ts, signature = slack_signed(body)
    return ts, (b"X-Slack-Signature", signature[1][:-2] + "é".encode())


def github_signed(event: bytes = b"push", delivery: bytes = b"d-1") -> Callable[[bytes], Headers]:
    def headers(body: bytes) -> Headers:
        digest = hmac.new(WEBHOOK_SECRET.encode(), body, hashlib.sha256).hexdigest()
        return (
            (b"X-Hub-Signature-256", f"sha256={digest}".encode()),
            (b"X-GitHub-Event", event),
            (b"X-GitHub-Delivery", delivery),
        )

    return headers


def deep_array(depth: int = DEEP) -> bytes:
    return b"[" * depth + b"]" * depth


def deep_object(depth: int = DEEP) -> bytes:
    return b'{"a":' * depth + b"1" + b"}" * depth


def form(**fields: str) -> bytes:
    return urlencode(fields).encode()


def command_form(**overrides: str) -> dict[str, str]:
    fields = slash_command("help", "http://127.0.0.1:9/unused")
    fields.update(overrides)
    return {k: v for k, v in fields.items() if v != "<drop>"}


def slack_probes() -> Iterator[Probe]:
    path = "/slack/events"
    event = json.dumps({"type": "event_callback", "event_id": "Ev1", "event": "x"}).encode()
    yield Probe("unsigned event", path, 401, b'{"type":"event_callback"}')
    yield Probe("unsigned non-JSON", path, 401, b"{not json")
    yield Probe("unsigned deep nesting", path, 401, deep_array())
    yield Probe("unsigned invalid UTF-8", path, 401, b'{"type":"\xff"}')
    yield Probe("forged signature", path, 401, b"{}", sign=slack_forged)
    yield Probe("expired signature", path, 401, b"{}", sign=slack_expired)
    yield Probe("signature from the future", path, 401, b"{}", sign=slack_future)
    yield Probe("timestamp not a number", path, 401, b"{}", sign=slack_raw(b"soon", b"v0=00"))
    yield Probe("timestamp of 5000 digits", path, 401, b"{}", sign=slack_raw(b"9" * 5000, b"v0="))
    arabic = "١٧٠٠٠٠٠٠٠٠".encode()
    yield Probe("timestamp in Arabic digits", path, 401, b"{}", sign=slack_raw(arabic, b"v0=1"))
    yield Probe("non-ASCII signature", path, 401, b"{}", sign=slack_non_ascii_signature)
    yield Probe("signature without v0=", path, 401, b"{}", sign=slack_raw(b"1", b"abc"))
    signed = slack_signed
    yield Probe("non-JSON with a JSON type", path, 400, b"{not json", sign=signed)
    yield Probe("empty JSON body", path, 400, b"", sign=signed)
    yield Probe("JSON array", path, 400, b"[1, 2]", sign=signed)
    yield Probe("JSON null", path, 400, b"null", sign=signed)
    yield Probe("JSON string", path, 400, b'"event"', sign=signed)
    yield Probe("JSON number", path, 400, b"12" * 3000, sign=signed)
    yield Probe("deep nested arrays", path, 400, deep_array(), sign=signed)
    yield Probe("deep nested objects", path, 400, deep_object(), sign=signed)
    yield Probe("invalid UTF-8 JSON", path, 400, b'{"type":"\xff\xfe"}', sign=signed)
    yield Probe(
        "lone surrogate", path, 400, b'{"type":"url_verification","x":"\\ud800"}', sign=signed
    )
    yield Probe("event that is a string", path, 400, event, sign=signed)
    yield Probe("type that is a number", path, 400, b'{"type": 5}', sign=signed)
    yield Probe("team that is a number", path, 400, b'{"type":"x","team":5}', sign=signed)
    bad_auth = b'{"type":"event_callback","event":{"type":"x"},"authorizations":5}'
    yield Probe("authorizations not a list", path, 400, bad_auth, sign=signed)
    yield Probe("text/plain", path, 415, b"{}", b"text/plain", sign=signed)
    yield Probe("no content type", path, 415, b"{}", None, sign=signed)
    yield Probe("multipart", path, 415, b"--x--", b"multipart/form-data; boundary=x", sign=signed)
    yield Probe("form of junk", path, 400, b"foo=bar", FORM, sign=signed)
    yield Probe("form of invalid UTF-8", path, 400, b"payload=%FF%FE", FORM, sign=signed)
    yield Probe("raw invalid UTF-8 form", path, 400, b"text=\xff\xfe", FORM, sign=signed)
    yield Probe("payload not JSON", path, 400, form(payload="{nope"), FORM, sign=signed)
    yield Probe("payload a JSON array", path, 400, form(payload="[1]"), FORM, sign=signed)
    yield Probe("payload null", path, 400, form(payload="null"), FORM, sign=signed)
    deep = b"payload=" + quote(deep_array()).encode()
    yield Probe("payload deeply nested", path, 400, deep, FORM, sign=signed)
    yield Probe("payload twice", path, 400, b"payload=%7B%7D&payload=%7B%7D", FORM, sign=signed)
    clicked = form(payload=json.dumps({"type": "block_actions", "user": 5, "actions": []}))
    yield Probe("interaction user a number", path, 400, clicked, FORM, sign=signed)
    no_user = form(**command_form(user_id="<drop>"))
    yield Probe("command without a user", path, 400, no_user, FORM, sign=signed)
    yield Probe("2 MB event", path, 413, b'{"a":"' + b"x" * 2 * MB + b'"}', sign=signed)


def teams_probes() -> Iterator[Probe]:
    path = "/api/messages"
    activity = json.dumps({"type": "message", "text": "hi", "serviceUrl": "http://x/"}).encode()
    bearer = ((b"Authorization", b"Bearer e30.e30.sig"),)
    yield Probe("deep nested arrays", path, 400, deep_array())
    yield Probe("deep nested objects", path, 400, deep_object())
    yield Probe("invalid UTF-8", path, 400, b'{"type":"message","text":"\xff"}')
    yield Probe("non-JSON", path, 400, b"{not json")
    yield Probe("JSON array", path, 400, b"[]")
    yield Probe("JSON null", path, 400, b"null")
    yield Probe("empty body", path, 400, b"")
    yield Probe("from that is a string", path, 400, b'{"type":"message","from":"x"}')
    yield Probe("text/plain", path, 415, activity, b"text/plain")
    yield Probe("forged token", path, 401, activity, headers=bearer)
    yield Probe("no token", path, 401, activity)
    yield Probe(
        "non-ASCII token", path, 401, activity, headers=((b"Authorization", "Bé".encode()),)
    )
    yield Probe("2 MB activity", path, 413, b'{"type":"' + b"x" * 2 * MB + b'"}')


def github_probes() -> Iterator[Probe]:
    path = "/github/webhook"
    signed = github_signed()
    ping = json.dumps({"zen": "Keep it logically awesome.", "hook_id": 1}).encode()
    push = b'{"ref":"refs/heads/main","repository":{"id":1,"full_name":"\\udc00"}}'
    yield Probe("unsigned", path, 401, ping)
    yield Probe("forged", path, 401, ping, headers=((b"X-Hub-Signature-256", b"sha256=00"),))
    yield Probe(
        "non-ASCII signature", path, 401, ping, headers=((b"X-Hub-Signature-256", "é".encode()),)
    )
    yield Probe("signed deep nested arrays", path, 400, deep_array(), sign=signed)
    yield Probe("signed deep nested objects", path, 400, deep_object(), sign=signed)
    yield Probe("signed invalid UTF-8", path, 400, b'{"zen":"\xff"}', sign=signed)
    yield Probe("signed non-JSON", path, 400, b"{nope", sign=signed)
    yield Probe("signed JSON array", path, 400, b"[]", sign=signed)
    yield Probe("signed JSON null", path, 400, b"null", sign=signed)
    yield Probe("signed lone surrogate", path, 400, push, sign=signed)
    yield Probe("no event header", path, 400, ping, sign=lambda b: signed(b)[:1])
    yield Probe("non-ASCII event", path, 400, ping, sign=github_signed(event="pïng".encode()))
    yield Probe("non-ASCII delivery", path, 400, ping, sign=github_signed(delivery=b"d-\xff"))
    yield Probe("26 MB body", path, 413, b" " * 26 * MB, sign=signed)


def get_probes() -> Iterator[Probe]:
    oauth = "/github/oauth/callback"
    yield Probe("oauth without parameters", oauth, 400, method="GET", content_type=None)
    yield Probe("oauth state only", oauth + "?state=abc", 400, method="GET", content_type=None)
    yield Probe("oauth unknown state", oauth + "?state=a&code=b", 400, method="GET")
    yield Probe("oauth bad escapes", oauth + "?state=%FF%FE&code=%C3", 400, method="GET")
    yield Probe("oauth posted", oauth, 405, b"{}")
    long_state = oauth + "?state=" + "a" * 20_000 + "&code=b"
    yield Probe("oauth 20 kB query", long_state, 400, method="GET", content_type=None)
    yield Probe("healthz posted", "/healthz", 405, deep_array())
    yield Probe("readyz posted", "/readyz", 405, b"\xff\xfe")
    yield Probe("readyz deleted", "/readyz", 405, method="DELETE", content_type=None)


ALL_PROBES = [*slack_probes(), *teams_probes(), *github_probes(), *get_probes()]


async def send(
    port: int, method: str, target: str, headers: Headers, body: bytes
) -> tuple[int, bytes]:
    """One HTTP/1.1 request written to a socket as given (headers need not be ASCII)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    lines = [
        f"{method} {target} HTTP/1.1".encode(),
        f"Host: 127.0.0.1:{port}".encode(),
        b"Connection: close",
        b"Content-Length: %d" % len(body),
        *(name + b": " + value for name, value in headers),
    ]
    writer.write(b"\r\n".join(lines) + b"\r\n\r\n")
    try:
        writer.write(body)
        await writer.drain()
    except ConnectionError:
        pass  # the server answered (413) and closed before reading it all
    try:
        data = await asyncio.wait_for(reader.read(), 30)
    finally:
        writer.close()
    head, _, payload = data.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), payload


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[tuple[TestServer, FakeSlack, FakeBotConnector]]:
    slack = FakeSlack()
    await slack.start()
    connector = FakeBotConnector()
    connector.start()
    services = Services(
        bot=BotSettings(
            slack_bot_token="xoxb-test-token",
            slack_signing_secret=SIGNING_SECRET,
            slack_api_url=slack.api_url,
            teams_app_id=connector.app_id,
            teams_app_password=connector.app_password,
            teams_openid_metadata_url=connector.openid_url,
            teams_emulator_openid_metadata_url=connector.openid_url,
            teams_login_url=connector.login_url,
            reconcile_seconds=0,
        ),
        acl=AclSettings(
            github_webhook_secret=WEBHOOK_SECRET,
            github_oauth_client_id="Iv1.codeask",
            github_oauth_client_secret="oauth-secret",
        ),
        indexer=IndexerSettings(
            data_dir=tmp_path / "data", database_url=f"sqlite:///{tmp_path / 'meta.db'}"
        ),
    )
    app = create_app(
        services, mounts=[slack_mount(Asker(services)), mount_teams], reconcile_seconds=0
    )
    test_server = TestServer(app, host="127.0.0.1")
    await test_server.start_server()
    yield test_server, slack, connector
    await test_server.close()
    services.close()
    connector.stop()
    await slack.close()


async def good_requests_are_answered(
    port: int, slack: FakeSlack, connector: FakeBotConnector
) -> None:
    status, _ = await send(port, "GET", "/healthz", (), b"")
    assert status == 200
    challenge = b'{"type":"url_verification","token":"t","challenge":"still-here"}'
    headers = ((b"Content-Type", JSON), *slack_signed(challenge))
    status, body = await send(port, "POST", "/slack/events", headers, challenge)
    assert (status, b"still-here" in body) == (200, True)
    command = form(**command_form(response_url=slack.response_url("after")))
    headers = ((b"Content-Type", FORM), *slack_signed(command))
    status, _ = await send(port, "POST", "/slack/events", headers, command)
    assert status == 200
    await slack.wait_for(lambda c: c.method == "response_url", timeout=10)
    ping = b'{"zen":"Design for failure.","hook_id":1}'
    headers = ((b"Content-Type", JSON), *github_signed(b"ping", b"good-ping")(ping))
    status, body = await send(port, "POST", "/github/webhook", headers, ping)
    assert (status, b"pong" in body) == (200, True)
    bot = {"id": f"28:{connector.app_id}", "name": "codeask"}
    hello = {
        "type": "conversationUpdate",
        "id": "1",
        "serviceUrl": connector.service_url,
        "channelId": "msteams",
        "from": {"id": "29:aad-admin", "aadObjectId": "aad-admin"},
        "conversation": {"id": "a:1", "conversationType": "personal", "tenantId": "t"},
        "recipient": bot,
        "membersAdded": [bot],
    }
    token = f"Bearer {connector.sign()}".encode()
    headers = ((b"Content-Type", JSON), (b"Authorization", token))
    status, _ = await send(port, "POST", "/api/messages", headers, json.dumps(hello).encode())
    assert status == 202


async def test_every_route_answers_bad_input_with_4xx_and_keeps_serving(
    server: tuple[TestServer, FakeSlack, FakeBotConnector], caplog: pytest.LogCaptureFixture
) -> None:
    test_server, slack, connector = server
    port = test_server.port
    assert port is not None
    caplog.set_level(logging.INFO)
    wrong: list[str] = []
    for probe in ALL_PROBES:
        headers: Headers = ((b"Content-Type", probe.content_type),) if probe.content_type else ()
        headers += probe.headers + (probe.sign(probe.body) if probe.sign else ())
        status, body = await send(port, probe.method, probe.path, headers, probe.body)
        if status != probe.expect:
            wrong.append(f"{probe.path} {probe.name}: {status} {body[:120]!r}")
    errors = [
        f"{r.name}: {r.getMessage()[:200]}" for r in caplog.records if r.levelno >= logging.ERROR
    ]
    assert not wrong, "\n".join(wrong)
    assert not errors, "\n".join(errors)
    await good_requests_are_answered(port, slack, connector)
    assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []


async def test_oauth_callback_without_linking_configured_is_not_found(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    services = Services(
        indexer=IndexerSettings(
            data_dir=tmp_path / "data", database_url=f"sqlite:///{tmp_path / 'meta.db'}"
        )
    )
    test_server = TestServer(create_app(services, reconcile_seconds=0), host="127.0.0.1")
    await test_server.start_server()
    try:
        assert test_server.port is not None
        target = "/github/oauth/callback?state=a&code=b"
        status, _ = await send(test_server.port, "GET", target, (), b"")
    finally:
        await test_server.close()
        services.close()
    assert status == 404
    assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []
