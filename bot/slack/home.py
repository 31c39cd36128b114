"""The App Home tab: your GitHub link, what you can ask about and how fresh it is.

Admins also see the index status of every repository, registered or indexed from the
command line, and recent failures.
``gather_home`` reads the databases and GitHub (blocking); ``home_view`` is pure.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from acl import Place, Principal
from bot.answer import Asker
from bot.chat import admin_repos
from bot.services import Services
from bot.slack.render import escape
from indexer.jobs import REPO_ERROR, age_text
from indexer.jobs import queue as jobs

MAX_REPO_LINES = 40  # a Home view holds 100 blocks; long lists are summarised


@dataclass(frozen=True)
class RepoFreshness:
    repo: str
    visibility: str
    commit: str  # indexed commit, abbreviated
    indexed: str  # "3 min ago"
    behind: str = ""  # "2 commits behind" when the branch moved on


@dataclass
class HomeData:
    github_login: str | None
    repos: list[RepoFreshness]
    access_note: str = ""
    admin: bool = False
    index_status: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    queued_jobs: int = 0


def gather_home(services: Services, asker: Asker, principal: Principal, admin: bool) -> HomeData:
    """Everything the Home tab shows for ``principal`` (blocking: run it in a thread)."""
    link = services.acl_store.identity(principal.platform, principal.user_id)
    access = asker.access(principal, Place("dm"))
    states = {s.repo: s for s in services.store.repo_states()}
    registered = {r.full_name: r for r in services.registry.all()}
    repos = []
    for name in sorted(access.repos):
        state = states.get(name)
        row = registered.get(name)
        indexed = (
            age_text(datetime.fromtimestamp(state.indexed_at, UTC))
            if state and state.indexed_at
            else "never"
        )
        behind = ""
        if row is not None and row.head_commit and row.head_commit != row.last_indexed_commit:
            behind = f"{row.commits_behind} commits behind" if row.commits_behind else "behind"
        repos.append(
            RepoFreshness(
                name,
                state.visibility if state else (row.visibility if row else "?"),
                (state.commit if state else "")[:12],
                indexed,
                behind,
            )
        )
    data = HomeData(link.github_login if link else None, repos, access.reason, admin)
    if admin:  # only an admin's own Home tab lists what is indexed beyond their access
        for r in admin_repos(registered.values(), states.values()):
            data.index_status.append(
                f"{r.name}: {r.status}, {r.indexed_as}, indexed {age_text(r.indexed_at)}, "
                f"{r.chunk_count} chunks, {r.added}"
            )
            if r.status == REPO_ERROR or r.last_error:
                data.failures.append(f"{r.name}: {r.last_error or r.status}")
        data.queued_jobs = len(jobs.pending(services.registry.engine))
    return data


def _section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text[:3000]}}


def _lines(items: list[str], empty: str) -> list[dict[str, Any]]:
    if not items:
        return [_section(f"_{empty}_")]
    shown = items[:MAX_REPO_LINES]
    blocks = []
    for start in range(0, len(shown), 10):
        blocks.append(_section("\n".join(shown[start : start + 10])))
    if len(items) > len(shown):
        blocks.append(_section(f"…and {len(items) - len(shown)} more"))
    return blocks


def home_view(data: HomeData) -> dict[str, Any]:
    """The ``views.publish`` view for one user."""
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": "codeask"}},
        _section(
            "Ask about code: mention me in a channel, message me here, or use "
            "`/codeask ask <question>`. `/codeask help` lists every command."
        ),
        {"type": "divider"},
    ]
    if data.github_login:
        blocks.append(_section(f"*GitHub account:* linked to `@{escape(data.github_login)}`"))
    else:
        blocks.append(
            _section(
                "*GitHub account:* not linked, so only public repositories are searched. "
                "Run `/codeask link` to include the private ones you can read."
            )
        )
    blocks.append(_section(f"*Repositories you can ask about ({len(data.repos)})*"))
    repo_lines = [
        f"• *{escape(r.repo)}* ({r.visibility}) `{r.commit or '-'}` indexed {r.indexed}"
        + (f", {r.behind}" if r.behind else "")
        for r in data.repos
    ]
    blocks += _lines(repo_lines, "No repository is indexed for you yet.")
    if data.access_note:
        blocks.append(
            {"type": "context", "elements": [{"type": "mrkdwn", "text": escape(data.access_note)}]}
        )
    if data.admin:
        blocks.append({"type": "divider"})
        blocks.append(
            _section(f"*Index status* (admin) — {data.queued_jobs} jobs queued or running")
        )
        blocks += _lines(
            [escape(s) for s in data.index_status], "No repository registered or indexed."
        )
        blocks.append(_section("*Recent failures*"))
        blocks += _lines([f"• {escape(f)}" for f in data.failures], "None.")
    return {"type": "home", "blocks": blocks}
