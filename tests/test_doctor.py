"""``codeask doctor`` against local servers: each part ok, and each way it fails."""

from __future__ import annotations

import asyncio
import json
import re
import socket
import sqlite3
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bot.cli.app import app
from tests.fake_github import FakeGitHubServer
from tests.fake_llm import FakeLLM, Reply, running_fake_llm
from tests.fake_slack import FakeSlack

Result = dict[str, tuple[str, str]]  # check name -> (status, detail)


def _doctor() -> tuple[int, Result]:
    result = CliRunner().invoke(app, ["doctor"])
    checks: Result = {}
    for line in result.stdout.splitlines():
        status, name = line[:8].strip(), line[9:25].strip()
        detail = re.sub(r" \(\d+\.\d s\)$", "", line[26:])  # a slow check says how slow
        if status in ("ok", "warning", "failed", "skipped"):
            checks[name] = (status, detail)
    assert checks, result.output
    return result.exit_code, checks


@pytest.fixture
def indexed(
    data_dir: Path, make_repo: Callable[[dict[str, str]], Path], monkeypatch: pytest.MonkeyPatch
) -> Path:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    root = make_repo({"retry.py": "def backoff(attempt):\n    return 2 ** attempt\n"})
    result = CliRunner().invoke(app, ["index", str(root), "--repo", "acme/retry"])
    assert result.exit_code == 0, result.output
    return data_dir


@pytest.fixture
def llm() -> Iterator[FakeLLM]:
    with running_fake_llm() as server:
        yield server


def _use_llm(monkeypatch: pytest.MonkeyPatch, server: FakeLLM, **extra: str) -> None:
    monkeypatch.setenv("CODEASK_LLM_MODEL", "doctor-model")
    monkeypatch.setenv("CODEASK_LLM_API_BASE", server.base_url)
    for key, value in extra.items():
        monkeypatch.setenv(key, value)


def test_a_working_setup_is_ok_and_optional_parts_are_warnings(
    indexed: Path, llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    _use_llm(monkeypatch, llm)
    llm.script(Reply("OK"))
    with FakeGitHubServer() as github:
        monkeypatch.setenv("CODEASK_GITHUB_API_URL", github.url)
        monkeypatch.setenv("CODEASK_GITHUB_TOKEN", github.fake.token)
        code, checks = _doctor()
    assert code == 0, checks
    assert checks["search store"][0] == "ok" and "1 repositories" in checks["search store"][1]
    assert checks["embedding model"][0] == "ok" and "384 dimensions" in checks["embedding model"][1]
    assert checks["language model"] == (
        "ok",
        "openai/doctor-model answers and accepts the search tools (auto mode)",
    )
    assert llm.requests[0]["tool_choice"] == "none" and llm.requests[0]["max_tokens"] == 16
    assert checks["GitHub"][0] == "ok" and "accepted" in checks["GitHub"][1]
    assert checks["GitHub webhooks"][0] == "warning" and checks["GitHub sign-in"][0] == "warning"
    assert checks["Slack"][0] == "skipped" and checks["Teams"][0] == "skipped"
    assert github.fake.token not in json.dumps(checks)


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (Reply(status=401), "rejected the API key"),
        (Reply("OK", delay=3.0), "did not answer within"),
        (Reply(status=400, error="tools are not supported by this model"), "refuses tools"),
    ],
)
def test_a_language_model_that_fails_is_reported(
    indexed: Path, llm: FakeLLM, monkeypatch: pytest.MonkeyPatch, reply: Reply, expected: str
) -> None:
    _use_llm(monkeypatch, llm, CODEASK_LLM_TIMEOUT="1")
    llm.script(reply)
    code, checks = _doctor()
    status, detail = checks["language model"]
    assert expected in detail, detail
    if expected == "refuses tools":  # auto mode still answers, single-shot
        assert status == "warning"
    else:
        assert status == "failed" and code == 1


def test_an_unreachable_language_model_fails(
    indexed: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("CODEASK_LLM_MODEL", "doctor-model")
    monkeypatch.setenv("CODEASK_LLM_API_BASE", f"http://127.0.0.1:{port}/v1")
    code, checks = _doctor()
    assert code == 1 and checks["language model"][0] == "failed"
    assert "Cannot reach" in checks["language model"][1]


def test_an_index_of_another_dimension_fails_and_names_the_reindex(
    indexed: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with sqlite3.connect(indexed / "codeask.db") as db:
        db.execute("UPDATE meta SET value = '768' WHERE key = 'dimension'")
    code, checks = _doctor()
    status, detail = checks["embedding model"]
    assert code == 1 and status == "failed"
    assert "768-dimensional" in detail and "Re-index" in detail


def test_a_bad_github_token_fails(indexed: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeGitHubServer() as github:
        monkeypatch.setenv("CODEASK_GITHUB_API_URL", github.url)
        monkeypatch.setenv("CODEASK_GITHUB_TOKEN", "ghp_wrong")
        code, checks = _doctor()
    assert code == 1 and checks["GitHub"][0] == "failed"
    assert "HTTP 401" in checks["GitHub"][1] and "ghp_wrong" not in checks["GitHub"][1]


def test_incomplete_github_sign_in_fails(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("CODEASK_GITHUB_OAUTH_CLIENT_ID", "Iv1.abc")
    code, checks = _doctor()
    assert code == 1 and checks["GitHub sign-in"][0] == "failed"
    assert "CODEASK_GITHUB_OAUTH_CLIENT_SECRET" in checks["GitHub sign-in"][1]
    assert checks["search store"][0] == "warning"  # nothing indexed yet


class _Login(BaseHTTPRequestHandler):
    """The Microsoft login service's token endpoint, refusing or issuing."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        refuse = self.server.refuse  # type: ignore[attr-defined]
        body = (
            {"error": "invalid_client"}
            if refuse
            else {"access_token": "eyJ.bot", "expires_in": 3600, "token_type": "Bearer"}
        )
        data = json.dumps(body).encode()
        self.send_response(401 if refuse else 200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.mark.parametrize("refuse", [False, True])
def test_teams_credentials_obtain_a_token_or_fail(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch, refuse: bool
) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Login)
    server.refuse = refuse  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
        monkeypatch.setenv("CODEASK_TEAMS_APP_ID", "app-1")
        monkeypatch.setenv("CODEASK_TEAMS_APP_PASSWORD", "s3cret-password")
        monkeypatch.setenv("CODEASK_TEAMS_LOGIN_URL", f"http://127.0.0.1:{server.server_port}")
        code, checks = _doctor()
    finally:
        server.shutdown()
    status, detail = checks["Teams"]
    assert "s3cret-password" not in detail
    if refuse:
        assert code == 1 and status == "failed" and "invalid_client" in detail
    else:
        assert status == "ok" and "obtains a Bot Framework token" in detail


async def test_slack_token_and_scopes_are_checked(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    slack = FakeSlack()
    await slack.start()
    try:
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
        monkeypatch.setenv("CODEASK_SLACK_BOT_TOKEN", "xoxb-doctor")
        monkeypatch.setenv("CODEASK_SLACK_SIGNING_SECRET", "signing")
        monkeypatch.setenv("CODEASK_SLACK_API_URL", slack.api_url)
        code, checks = await asyncio.to_thread(_doctor)
        assert checks["Slack"][0] == "ok" and "codeask in Acme" in checks["Slack"][1]
        slack.fail("auth.test", "invalid_auth")
        code, checks = await asyncio.to_thread(_doctor)
        assert code == 1 and checks["Slack"] == (
            "failed",
            "Slack refused the bot token (invalid_auth): check CODEASK_SLACK_BOT_TOKEN",
        )
    finally:
        await slack.close()
