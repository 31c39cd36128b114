"""Clones the worker keeps up to date: real git repositories over file:// URLs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from indexer.source import clone_or_update
from tests.conftest import git


def test_an_update_recovers_from_a_killed_git_and_drops_leftover_files(
    make_repo: Callable[[dict[str, str]], Path], tmp_path: Path
) -> None:
    source = make_repo({"app.py": "def one():\n    return 1\n"})
    url = source.resolve().as_uri()
    dest = clone_or_update(url, tmp_path / "clones" / "acme" / "app", "main")
    assert (dest / "app.py").is_file()

    (source / "app.py").write_text("def two():\n    return 2\n")
    git(source, "commit", "-qam", "two")
    # A git killed mid-checkout (a lost worker, a timeout) leaves its lock, and files
    # that no commit has.
    (dest / ".git" / "index.lock").write_text("")
    (dest / "half-written.py").write_text("def junk(): pass\n")
    clone_or_update(url, dest, "main")
    assert git(dest, "rev-parse", "HEAD") == git(source, "rev-parse", "HEAD")
    assert (dest / "app.py").read_text() == "def two():\n    return 2\n"
    assert not (dest / "half-written.py").exists()
    assert not (dest / ".git" / "index.lock").exists()


def test_a_clone_that_cannot_be_reset_is_cloned_again(
    make_repo: Callable[[dict[str, str]], Path], tmp_path: Path
) -> None:
    source = make_repo({"app.py": "def one():\n    return 1\n"})
    url = source.resolve().as_uri()
    dest = clone_or_update(url, tmp_path / "clone", "main")
    # A broken index file makes "git reset --hard" fail.
    (dest / ".git" / "index").write_bytes(b"not an index")
    clone_or_update(url, dest, "main")
    assert git(dest, "status", "--porcelain") == ""
    assert (dest / "app.py").read_text() == "def one():\n    return 1\n"


def test_an_unreachable_remote_keeps_the_clone_and_says_why(
    make_repo: Callable[[dict[str, str]], Path], tmp_path: Path
) -> None:
    import pytest

    from indexer.errors import IndexingError

    source = make_repo({"app.py": "def one():\n    return 1\n"})
    dest = clone_or_update(source.resolve().as_uri(), tmp_path / "clone", "main")
    gone = (tmp_path / "moved-away").as_uri()
    with pytest.raises(IndexingError, match="git fetch failed"):
        clone_or_update(gone, dest, "main")
    assert (dest / "app.py").is_file() and not (tmp_path / "clone.reclone").exists()
