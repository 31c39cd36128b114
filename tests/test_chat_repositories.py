"""The one list of repositories the admin views show: registered, and indexed by the CLI."""

from __future__ import annotations

from bot.chat import ADDED_CLI, ADDED_REGISTERED, admin_repos, searched_repo
from indexer.jobs import Repo
from indexer.models import RepoState


def _state(repo: str, visibility: str = "private", commit: str = "c" * 40) -> RepoState:
    return RepoState(repo, commit, visibility, 7, 1_700_000_000.0)


def test_the_registry_row_wins_and_store_only_repos_are_added_by_name() -> None:
    registered = Repo(full_name="acme/b", visibility="public", last_indexed_commit="a" * 40)
    repos = admin_repos([registered], [_state("acme/c"), _state("acme/b"), _state("acme/a")])
    assert [(r.name, r.added) for r in repos] == [
        ("acme/a", ADDED_CLI),
        ("acme/b", ADDED_REGISTERED),
        ("acme/c", ADDED_CLI),
    ]
    assert repos[1].commit == "a" * 40 and repos[1].branch == "main"
    assert repos[0].branch == "" and repos[0].chunk_count == 7 and repos[0].indexed_at


def test_a_store_only_repo_is_never_shown_as_more_open_than_known() -> None:
    [odd] = admin_repos([], [_state("acme/x", visibility="")])
    assert odd.visibility == "private"
    [public] = admin_repos([], [_state("acme/y", visibility="public")])
    assert public.visibility == "public"


def test_only_a_registered_repo_counts_as_up_to_date() -> None:
    [cli] = admin_repos([], [_state("acme/x")])
    assert not cli.up_to_date and cli.behind == ""
    fresh = Repo(full_name="acme/r", last_indexed_commit="a" * 40, head_commit="a" * 40)
    behind = Repo(
        full_name="acme/s", last_indexed_commit="a" * 40, head_commit="b" * 40, commits_behind=2
    )
    [r, s] = admin_repos([fresh, behind], [])
    assert r.up_to_date and not s.up_to_date
    assert s.behind == f"2 commits behind (head {'b' * 12})"
    assert "acme/x  ready  cccccccccccc  " in cli.line() and cli.line().endswith(f"({ADDED_CLI})")


def test_a_searched_repo_shows_the_stores_commit_and_the_registrys_pushed_head() -> None:
    row = Repo(
        full_name="acme/b",
        visibility="public",
        tracked_branch="dev",
        last_indexed_commit="a" * 40,
        head_commit="b" * 40,
        commits_behind=3,
    )
    repo = searched_repo(_state("acme/b", visibility="public", commit="a" * 40), row, "acme/b")
    assert (repo.commit, repo.branch, repo.indexed_at is not None) == ("a" * 40, "dev", True)
    assert repo.behind == f"3 commits behind (head {'b' * 12})"
    cli = searched_repo(_state("acme/c"), None, "acme/c")
    assert cli.behind == "" and cli.head_commit == "" and cli.added == ADDED_CLI
    # A registered repository the store no longer holds: what the registry knows of it.
    gone = searched_repo(None, row, "acme/b")
    assert gone.commit == "a" * 40 and gone.indexed_at is None
