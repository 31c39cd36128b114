"""A stand-in for GitHub for freshness tests: a bare git server, the fake REST API, signed hooks."""

from __future__ import annotations

import hashlib
import hmac
import json
import sqlite3
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import git
from tests.fake_github import FakeGitHub, FakeGitHubServer

SECRET = "webhook-test-secret"
REPO = "acme/payments"


@dataclass
class GitHubWorld:
    """A bare repository served by path, a work tree that pushes to it, and the fake API."""

    root: Path
    fake: FakeGitHub
    api_url: str
    work: Path

    @property
    def bare(self) -> Path:
        return self.root / "git" / f"{REPO}.git"

    def commit_and_push(self, files: dict[str, str | None], message: str = "change") -> str:
        """Write (or delete, for None) files, commit, push; returns the new head."""
        for rel, text in files.items():
            path = self.work / rel
            if text is None:
                path.unlink()
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text)
        git(self.work, "add", "-A")
        git(self.work, "commit", "-q", "-m", message)
        git(self.work, "push", "-q", "origin", "main")
        return git(self.work, "rev-parse", "HEAD")

    def head(self) -> str:
        return git(self.work, "rev-parse", "HEAD")


@contextmanager
def github_world(tmp_path: Path, files: dict[str, str]) -> Iterator[GitHubWorld]:
    work = tmp_path / "work"
    work.mkdir()
    git(work, "init", "-q", "-b", "main")
    for rel, text in files.items():
        p = work / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "initial")
    bare = tmp_path / "git" / f"{REPO}.git"
    bare.parent.mkdir(parents=True)
    git(tmp_path, "clone", "-q", "--bare", str(work), str(bare))
    git(work, "remote", "add", "origin", str(bare))
    fake = FakeGitHub()
    fake.add_repo(REPO, "private")
    with FakeGitHubServer(fake) as server:
        yield GitHubWorld(tmp_path, fake, server.url, work)


def configure(monkeypatch: pytest.MonkeyPatch, world: GitHubWorld, database_url: str) -> None:
    """Point every codeask setting at the local stand-ins."""
    env = {
        "CODEASK_DATABASE_URL": database_url,
        "CODEASK_GITHUB_API_URL": world.api_url,
        "CODEASK_GITHUB_TOKEN": world.fake.token,
        "CODEASK_GITHUB_WEBHOOK_SECRET": SECRET,
        "CODEASK_GIT_CLONE_URL": str(world.root / "git" / "{full_name}.git"),
        "CODEASK_ADMINS": "cli:*",
        "CODEASK_RECONCILE_SECONDS": "0",
        "CODEASK_WORKER_POLL_SECONDS": "0.2",
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)


def signed(
    event: str, payload: dict[str, Any], secret: str = SECRET
) -> tuple[bytes, dict[str, str]]:
    body = json.dumps(payload).encode()
    signature = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return body, {
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": str(uuid.uuid4()),
        "X-Hub-Signature-256": signature,
        "Content-Type": "application/json",
    }


def push_payload(
    world: GitHubWorld, before: str, after: str, *, forced: bool = False
) -> dict[str, Any]:
    repo = world.fake.repos[REPO]
    return {
        "ref": "refs/heads/main",
        "before": before,
        "after": after,
        "forced": forced,
        "deleted": False,
        "commits": [{"id": after}],
        "repository": {"id": repo["id"], "full_name": REPO, "visibility": repo["visibility"]},
    }


def duplicate_chunks(store_path: Path, repo: str) -> list[tuple[Any, ...]]:
    with sqlite3.connect(store_path) as conn:
        return conn.execute(
            "SELECT path, start_line, end_line, count(*) FROM chunks WHERE repo = ? "
            "GROUP BY path, start_line, end_line HAVING count(*) > 1",
            (repo,),
        ).fetchall()
