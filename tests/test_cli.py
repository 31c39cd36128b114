"""The codeask command line, end to end in a subprocess as a user runs it."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from tests.conftest import git
from tests.test_indexing import SHOP

CODEASK = [sys.executable, "-m", "bot.cli"]


def run(args: list[str], data_dir: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CODEASK, *args],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "CODEASK_DATA_DIR": str(data_dir), "HF_HUB_OFFLINE": "1", **env},
    )


def test_index_search_ask_end_to_end(
    make_repo: Callable[[dict[str, str]], Path], tmp_path: Path
) -> None:
    root = make_repo(SHOP)
    data = tmp_path / "data"
    indexed = run(["index", str(root), "--repo", "acme/shop"], data)
    assert indexed.returncode == 0, indexed.stderr
    assert "acme/shop" in indexed.stderr and "4 files" in indexed.stderr

    typo = run(["search", "TokenBucket", "--repo", "acme/shoop"], data)
    assert typo.returncode == 0 and "acme/shoop is not indexed (indexed: acme/shop)" in typo.stderr

    found = run(["search", "TokenBucket allow", "--json", "--k", "3"], data)
    assert found.returncode == 0, found.stderr
    rows = json.loads(found.stdout)
    assert rows[0]["repo"] == "acme/shop" and rows[0]["path"] == "shop/limits.py"
    assert set(rows[0]) == {"repo", "path", "start_line", "end_line", "symbol", "kind", "score"}

    answer = run(["ask", "where do we send the receipt email?"], data)
    assert answer.returncode == 0, answer.stderr
    assert "shop/mail.py:1-3" in answer.stdout
    assert "smtp.sendmail" in answer.stdout

    question = "how does TokenBucket decide to allow a call?"
    trail = run(["ask", question, "--explain"], data, COLUMNS="200")  # no wrapped rows
    assert trail.returncode == 0, trail.stderr
    header = "final  fused  bm25  knn  sym  rerank"
    assert header in trail.stdout
    table = trail.stdout.split(header, 1)[1].splitlines()
    rows = [ln.split() for ln in table if "acme/shop/shop/limits.py" in ln]
    # The definition the question names is first in the symbol list.
    assert rows and rows[0][4] == "1", trail.stdout


def test_ask_answers_through_the_asker_with_its_fallback_and_audit(
    make_repo: Callable[[dict[str, str]], Path], tmp_path: Path
) -> None:
    """The terminal asks like a chat user: a model that is down still gets the best places,
    and the question is in the audit log."""
    root = make_repo(SHOP)
    data = tmp_path / "data"
    assert run(["index", str(root), "--repo", "acme/shop"], data).returncode == 0
    down = {
        "CODEASK_LLM_MODEL": "openai/any",
        "CODEASK_LLM_API_BASE": "http://127.0.0.1:9/v1",  # nothing listens on port 9
        "CODEASK_LLM_RETRIES": "0",
    }
    answer = run(["ask", "where do we send the receipt email?"], data, **down)
    assert answer.returncode == 0, answer.stderr
    assert "The language model is unavailable right now" in answer.stdout
    assert "shop/mail.py" in answer.stdout
    audit = run(["audit", "--json"], data)
    assert audit.returncode == 0, audit.stderr
    [entry] = json.loads(audit.stdout)
    assert entry["question"] == "where do we send the receipt email?"
    assert entry["platform"] == "cli"


def test_repo_list_and_status_show_what_codeask_index_wrote(
    make_repo: Callable[[dict[str, str]], Path], tmp_path: Path
) -> None:
    root = make_repo(SHOP)
    (root / "shop/mail.py").unlink()  # deleted, not committed
    data = tmp_path / "data"
    indexed = run(["index", str(root), "--repo", "acme/shop", "--visibility", "public"], data)
    assert indexed.returncode == 0, indexed.stderr
    assert "skipped     1  deleted from the work tree" in indexed.stderr
    assert "submodule" not in indexed.stderr
    head = git(root, "rev-parse", "HEAD")[:12]

    listed = run(["repo", "list"], data, CODEASK_ADMINS="cli:*")
    assert listed.returncode == 0, listed.stderr
    assert re.match(rf"acme/shop  ready  {head}  (just now|\d+ min ago)  ", listed.stdout)
    assert "(indexed from the command line)" in listed.stdout
    status = run(["repo", "status"], data, CODEASK_ADMINS="cli:*")
    assert status.returncode == 0, status.stderr
    assert "1 repositories (1 indexed from the command line, not tracked)" in status.stdout
    one = run(["repo", "status", "acme/shop"], data, CODEASK_ADMINS="cli:*")
    assert "acme/shop: ready, public, indexed from the command line" in one.stdout
    assert f"indexed {head} (" in one.stdout


def test_index_missing_folder_is_a_clear_error(tmp_path: Path) -> None:
    result = run(["index", str(tmp_path / "nope")], tmp_path / "data")
    assert result.returncode == 2
    assert "is not a folder" in result.stderr
    assert "Traceback" not in result.stderr


def test_bad_names_counts_and_questions_are_clear_errors(tmp_path: Path) -> None:
    data = tmp_path / "data"
    # A name that would put the clone outside the repos folder is refused before cloning.
    escape = run(["index", "https://github.com/acme/..", "--repo", "acme/.."], data)
    assert escape.returncode == 2 and "is not a repository name" in escape.stderr
    assert not (data / "repos").exists()
    negative = run(["search", "TokenBucket", "--k", "-1"], data)
    assert negative.returncode == 2 and "greater than or equal to 1" in negative.stderr
    empty = run(["ask", "   "], data)
    assert empty.returncode == 2 and "no letters or digits" in empty.stderr
    for result in (escape, negative, empty):
        assert "Traceback" not in result.stderr


def test_repository_names_from_urls() -> None:
    from indexer.source import name_from_url

    assert name_from_url("https://github.com/acme/shop.git") == "acme/shop"
    assert name_from_url("git@github.com:acme/my.shop.git") == "acme/my.shop"
    # A page of the repository pasted from the browser names the repository, not the page.
    assert name_from_url("https://github.com/acme/shop/tree/main/src") == "acme/shop"
