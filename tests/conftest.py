"""Shared fixtures: a real embedding model, isolated data dirs and real git repositories."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

if TYPE_CHECKING:
    from indexer.embedding import SqliteEmbeddingCache
    from indexer.stores import SqliteStore

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
# The ONNX exports `make setup` made (`codeask models export`): every test's data dir shares
# them, so the default embedder is exported at most once per machine, not once per test.
os.environ.setdefault(
    "CODEASK_ONNX_DIR",
    str(
        Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local/share")
        / "codeask/models/onnx"
    ),
)


@pytest.fixture(scope="session")
def embedder():  # type: ignore[no-untyped-def]
    """The packaged all-MiniLM-L6-v2, loaded once for the whole run."""
    from indexer.embedding import load_embedder

    return load_embedder("all-MiniLM-L6-v2")


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh CODEASK_DATA_DIR for one test."""
    d = tmp_path / "data"
    monkeypatch.setenv("CODEASK_DATA_DIR", str(d))
    return d


# The registry and worker tests run on SQLite always and on PostgreSQL when it is configured.
PG_URL = os.environ.get("CODEASK_TEST_DATABASE_URL", "")
DATABASES = [
    "sqlite",
    pytest.param(
        "postgres",
        marks=[
            pytest.mark.postgres,
            pytest.mark.skipif(not PG_URL, reason="CODEASK_TEST_DATABASE_URL is not set"),
        ],
    ),
]


def git(repo: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "Test",
        "GIT_AUTHOR_EMAIL": "test@example.com",
        "GIT_COMMITTER_NAME": "Test",
        "GIT_COMMITTER_EMAIL": "test@example.com",
    }
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=env
    ).stdout.strip()


@pytest.fixture
def make_repo(tmp_path: Path) -> Callable[[dict[str, str]], Path]:
    """Create a real git repository with the given files committed; returns its path."""
    counter = {"n": 0}

    def make(files: dict[str, str]) -> Path:
        counter["n"] += 1
        return commit_files(tmp_path / f"repo{counter['n']}", files)

    return make


def commit_files(root: Path, files: dict[str, str]) -> Path:
    """A new git repository at ``root`` with ``files`` in one commit on main."""
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "initial")
    return root


def migrated_engine(url: str) -> Engine:
    """An engine on ``url`` migrated to head (as ``codeask db upgrade`` does), tables empty.

    PostgreSQL is one database shared by the tests that use it: its rows are cleared.
    """
    from bot.cli.db import table_metadata
    from indexer.db import open_engine, upgrade

    engine = open_engine(url)
    upgrade(engine)
    if engine.dialect.name == "postgresql":
        with engine.begin() as conn:
            conn.execute(sa.text(f"TRUNCATE {', '.join(table_metadata().tables)}"))
    return engine


@pytest.fixture
def store(tmp_path: Path) -> SqliteStore:
    """An empty embedded store."""
    from indexer.stores import SqliteStore

    return SqliteStore(tmp_path / "index.db")


@pytest.fixture
def cache(tmp_path: Path) -> SqliteEmbeddingCache:
    """An empty embedding cache."""
    from indexer.embedding import SqliteEmbeddingCache

    return SqliteEmbeddingCache(tmp_path / "emb.db")
