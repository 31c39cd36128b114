"""One notion of "repositories" for the admin views (``repo list``, ``status``, App Home).

The registry tracks what ``repo add`` registered; the search store also holds what
``codeask index`` wrote, which is searchable and cited but never registered. An admin
view lists both, each saying how it was added. Pure: the caller reads the registry and
the store, and shows the result only where admin output may go (privately, to an admin).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from indexer.jobs import REPO_READY, Repo, age_text
from indexer.models import VISIBILITIES, RepoState

ADDED_REGISTERED = "registered with `repo add`"
ADDED_CLI = "indexed from the command line"


@dataclass(frozen=True)
class AdminRepo:
    """A repository as an admin sees it: registered, or only in the search store."""

    name: str
    added: str  # ADDED_REGISTERED | ADDED_CLI
    status: str
    visibility: str
    branch: str  # the tracked branch; "" when not registered (not tracked)
    commit: str  # the indexed commit; "" for never, or a folder that is not a git work tree
    indexed_at: datetime | None
    chunk_count: int
    head_commit: str = ""  # newest commit seen on the tracked branch
    commits_behind: int | None = None
    last_error: str = ""

    @property
    def registered(self) -> bool:
        return self.added == ADDED_REGISTERED

    @property
    def up_to_date(self) -> bool:
        """Indexed at the newest commit seen (only registered repositories are watched)."""
        return bool(self.registered and self.commit and self.head_commit in ("", self.commit))

    @property
    def behind(self) -> str:
        if not self.head_commit or self.head_commit == self.commit:
            return ""
        count = f"{self.commits_behind} commits" if self.commits_behind else "new commits"
        return f"{count} behind (head {self.head_commit[:12]})"

    def row(self) -> dict[str, str]:
        return {
            "repo": self.name,
            "status": self.status,
            "visibility": self.visibility,
            "branch": self.branch,
            "commit": self.commit[:12],
            "indexed": age_text(self.indexed_at),
            "behind": self.behind,
            "chunks": str(self.chunk_count),
            "added": self.added,
        }

    @property
    def indexed_as(self) -> str:
        """``branch@commit`` (abbreviated) for a tracked branch, else the commit, or "-"."""
        commit = self.commit[:12] or "-"
        return f"{self.branch}@{commit}" if self.branch else commit

    def line(self) -> str:
        """One line of ``repo list``: name, status, what was indexed and when, how added."""
        behind = f"  {self.behind}" if self.behind else ""
        return (
            f"{self.name}  {self.status}  {self.indexed_as}  {age_text(self.indexed_at)}{behind}"
            f"  ({self.added})"
        )


def admin_repos(registered: Iterable[Repo], indexed: Iterable[RepoState]) -> list[AdminRepo]:
    """Every registry row, and every repository of the store the registry does not know."""
    repos = {r.full_name: _from_registry(r) for r in registered}
    for state in indexed:
        if state.repo not in repos:
            repos[state.repo] = _from_store(state)
    return [repos[name] for name in sorted(repos)]


def searched_repo(state: RepoState | None, registered: Repo | None, name: str) -> AdminRepo:
    """``name`` as questions search it: the commit the store holds and when it was written,
    with the branch head the registry last saw (pushes and reconciles) when registered."""
    if state is None:
        return _from_registry(registered) if registered else _unknown(name)
    repo = _from_store(state)
    if registered is None:
        return repo
    return replace(
        repo,
        added=ADDED_REGISTERED,
        status=registered.status,
        branch=registered.tracked_branch,
        head_commit=registered.head_commit,
        commits_behind=registered.commits_behind,
        last_error=registered.last_error,
    )


def _unknown(name: str) -> AdminRepo:
    return AdminRepo(name, ADDED_CLI, REPO_READY, "private", "", "", None, 0)


def _from_registry(repo: Repo) -> AdminRepo:
    return AdminRepo(
        name=repo.full_name,
        added=ADDED_REGISTERED,
        status=repo.status,
        visibility=repo.visibility,
        branch=repo.tracked_branch,
        commit=repo.last_indexed_commit,
        indexed_at=repo.last_indexed_at,
        chunk_count=repo.chunk_count,
        head_commit=repo.head_commit,
        commits_behind=repo.commits_behind,
        last_error=repo.last_error,
    )


def _from_store(state: RepoState) -> AdminRepo:
    return AdminRepo(
        name=state.repo,
        added=ADDED_CLI,
        status=REPO_READY,  # it is in the store: searchable
        # Never shown as more open than known: a value the store should not hold is private.
        visibility=state.visibility if state.visibility in VISIBILITIES else "private",
        branch="",
        commit=state.commit,
        indexed_at=datetime.fromtimestamp(state.indexed_at, UTC) if state.indexed_at else None,
        chunk_count=state.chunk_count,
    )
