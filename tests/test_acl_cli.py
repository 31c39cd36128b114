"""The operator's preview (``--as-github``, ``--place``) and the audit/link admin commands."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from bot.cli.access import allowed_repo_set, parse_place
from bot.cli.app import app
from bot.services import Services
from indexer.embedding import Embedder
from indexer.errors import InvalidInput
from indexer.models import Chunk, RepoState
from indexer.stores import SqliteStore
from tests.fake_github import FakeGitHub, FakeGitHubServer

REPOS = {"acme/site": "public", "acme/api": "private", "acme/billing": "private"}


@pytest.fixture
def github(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeGitHubServer]:
    fake = FakeGitHub()
    for repo, vis in REPOS.items():
        fake.add_repo(repo, vis)
    fake.add_user("alice")
    fake.add_user("bob")
    fake.roles[("acme/api", "alice")] = "write"
    with FakeGitHubServer(fake) as srv:
        monkeypatch.setenv("CODEASK_GITHUB_API_URL", srv.url)
        monkeypatch.setenv("CODEASK_GITHUB_TOKEN", fake.token)
        yield srv


@pytest.fixture
def index(data_dir: Path) -> SqliteStore:
    """Every repo holds a ``retry_budget`` function; vectors sized for the real embedder."""
    store = SqliteStore(data_dir / "codeask.db")
    store.ensure_schema(384)
    rng = np.random.default_rng(1)
    for repo, vis in REPOS.items():
        text = f"def retry_budget():\n    return '{repo}'"
        chunk = Chunk(
            repo,
            "retry.py",
            1,
            2,
            text,
            "retry_budget",
            "python",
            "source",
            visibility=vis,
            commit="abc123",
        )
        vector = rng.normal(size=(1, 384)).astype(np.float32)
        vector /= np.linalg.norm(vector)
        store.apply_changes(
            repo, [], [chunk], vector, RepoState(repo, "abc123", vis, 0, time.time())
        )
    return store


def test_parse_place() -> None:
    assert parse_place("dm")[1].kind == "dm"
    assert parse_place("channel:C1") == ("slack", parse_place("channel:slack:C1")[1])
    assert parse_place("channel:teams:19:abc@thread.tacv2")[0] == "teams"
    with pytest.raises(InvalidInput):
        parse_place("room:1")


@pytest.fixture
def services(index: SqliteStore) -> Iterator[Services]:
    """The CLI's parts over the same data dir (and so the same search store file)."""
    services = Services()
    yield services
    services.close()


def test_operator_reads_everything_and_preview_matches_the_user(
    github: FakeGitHubServer, services: Services
) -> None:
    assert allowed_repo_set(services) == set(REPOS)
    assert allowed_repo_set(services, as_github="alice", place="dm") == {"acme/site", "acme/api"}
    assert allowed_repo_set(services, as_github="bob", place="dm") == {"acme/site"}
    assert allowed_repo_set(services, requested=["acme/billing"], as_github="alice") == set()


def test_channel_preview_withholds_and_says_so(
    github: FakeGitHubServer, services: Services
) -> None:
    notes: list[str] = []
    repos = allowed_repo_set(services, as_github="alice", place="channel:C1", notify=notes.append)
    assert repos == {"acme/site"}
    assert notes and "direct message" in notes[0] and "acme/api" not in notes[0]
    Services().acl_store.grant("slack", "C1", "acme/billing")
    assert allowed_repo_set(services, as_github="alice", place="channel:C1") == {
        "acme/site",
        "acme/billing",
    }


def test_unknown_github_user_is_a_clear_error(github: FakeGitHubServer, services: Services) -> None:
    with pytest.raises(InvalidInput, match="no user called"):
        allowed_repo_set(services, as_github="nobody-here")


def test_search_as_github_in_a_channel_end_to_end(
    github: FakeGitHubServer,
    index: SqliteStore,
    embedder: Embedder,
) -> None:
    # The CLI's Services load the same model as the session's embedder (one per process).
    runner = CliRunner()
    result = runner.invoke(
        app, ["search", "retry_budget", "--json", "--as-github", "alice", "--place", "dm"]
    )
    assert result.exit_code == 0, result.output
    assert {row["repo"] for row in json.loads(result.stdout)} == {"acme/site", "acme/api"}
    result = runner.invoke(
        app, ["search", "retry_budget", "--json", "--as-github", "alice", "--place", "channel:C9"]
    )
    assert result.exit_code == 0, result.output
    assert {row["repo"] for row in json.loads(result.stdout)} == {"acme/site"}


def test_audit_lists_questions_without_code(data_dir: Path) -> None:
    store = Services().acl_store
    store.record_audit(
        platform="slack",
        user_id="T1:U1",
        github_login="alice",
        place="channel:C1",
        question="how is the retry budget computed?",
        allowed_repos=["acme/site"],
        cited=[("acme/site", "retry.py", 1, 2)],
    )
    result = CliRunner().invoke(app, ["audit", "--json"])
    assert result.exit_code == 0, result.output
    [entry] = json.loads(result.stdout)
    assert entry["question"] == "how is the retry budget computed?"
    assert json.loads(entry["cited"]) == [
        {"repo": "acme/site", "path": "retry.py", "lines": [1, 2]}
    ]
    assert "def " not in result.stdout


def test_link_prints_a_one_time_url_and_unlink_removes_the_link(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODEASK_GITHUB_OAUTH_CLIENT_ID", "cid")
    monkeypatch.setenv("CODEASK_GITHUB_OAUTH_CLIENT_SECRET", "secret")
    result = CliRunner().invoke(app, ["link", "--platform", "slack", "--user", "T1:U1"])
    assert result.exit_code == 0, result.output
    assert "https://github.com/login/oauth/authorize?client_id=cid&state=" in result.stdout
    store = Services().acl_store
    store.link("slack", "T1:U1", 5000, "alice")
    result = CliRunner().invoke(app, ["unlink", "--platform", "slack", "--user", "T1:U1"])
    assert "Unlinked slack:T1:U1" in result.stdout
    assert store.identity("slack", "T1:U1") is None
