"""The App Home tab: your GitHub link, what you can ask about and how fresh it is.

Two buttons open what the app builds: "Ask in DM" (Slack's deep link to the app's
Messages tab) and, until the account is linked, "Link GitHub" (the one-time sign-in URL
of ``/codeask link``). Each repository shows its indexed commit, when it was indexed and,
for a registered one, whether it is behind the head last pushed to its branch.

Admins also see the index status of every repository, registered or indexed from the
command line, and recent failures.
``gather_home`` reads the databases and GitHub (blocking); ``home_view`` is pure.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from acl import Place, Principal
from bot.answer import Asker
from bot.chat import Invoker, admin_repos, command_context, searched_repo
from bot.services import Services
from bot.slack.render import OPEN_URL_PREFIX, _button, escape
from indexer.jobs import REPO_ERROR, age_text
from indexer.jobs import queue as jobs

log = logging.getLogger(__name__)

MAX_REPO_LINES = 40  # a Home view holds 100 blocks; long lists are summarised
SHORT_SHA = 7
ACTION_LINK_GITHUB = f"{OPEN_URL_PREFIX}_link_github"
ACTION_OPEN_DM = f"{OPEN_URL_PREFIX}_dm"


@dataclass(frozen=True)
class RepoFreshness:
    repo: str
    visibility: str
    commit: str  # indexed commit, abbreviated
    indexed: str  # "3 min ago"
    behind: str = ""  # "2 commits behind (head …)" when the branch moved on
    branch: str = ""  # the tracked branch, when registered
    up_to_date: bool = False  # indexed at the head last pushed (known for registered ones)


@dataclass
class HomeData:
    github_login: str | None
    repos: list[RepoFreshness]
    access_note: str = ""
    admin: bool = False
    index_status: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    queued_jobs: int = 0
    link_url: str = ""  # the one-time GitHub sign-in of `link`, when not linked yet
    dm_url: str = ""  # opens the app's Messages tab


def dm_url(team_id: str, app_id: str) -> str:
    """Slack's deep link to a DM with the app (its Messages tab), or "" without an app id."""
    if not app_id:
        return ""
    query = {"app": app_id, **({"team": team_id} if team_id else {})}
    return f"https://slack.com/app_redirect?{urlencode(query)}"


def gather_home(services: Services, asker: Asker, principal: Principal, admin: bool) -> HomeData:
    """Everything the Home tab shows for ``principal`` (blocking: run it in a thread)."""
    link = services.acl_store.identity(principal.platform, principal.user_id)
    access = asker.access(principal, Place("dm"))
    states = {s.repo: s for s in services.store.repo_states()}
    registered = {r.full_name: r for r in services.registry.all()}
    repos = []
    for name in sorted(access.repos):
        r = searched_repo(states.get(name), registered.get(name), name)
        repos.append(
            RepoFreshness(
                name,
                r.visibility,
                r.commit[:SHORT_SHA],
                age_text(r.indexed_at),
                r.behind,
                r.branch,
                bool(r.head_commit) and r.head_commit == r.commit,
            )
        )
    data = HomeData(link.github_login if link else None, repos, access.reason, admin)
    if link is None:
        data.link_url = _link_url(services, principal)
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


def _link_url(services: Services, principal: Principal) -> str:
    """The sign-in URL `link` gives (one-time, bound to this user); "" when linking is off."""
    start = command_context(services).link_url
    if start is None:
        return ""
    try:
        return start(Invoker(principal.platform, principal.user_id))
    except Exception:
        log.exception("App Home: could not start a GitHub link")
        return ""


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


def _repo_line(r: RepoFreshness) -> str:
    where = f"`{r.commit}`" if r.commit else "not indexed yet"
    branch = f" on `{escape(r.branch)}`" if r.branch else ""
    line = f"• *{escape(r.repo)}* ({escape(r.visibility)}) {where}{branch}, indexed {r.indexed}"
    if r.behind:
        return f"{line}, :warning: {escape(r.behind)}"
    return f"{line}, up to date" if r.up_to_date else line


def home_view(data: HomeData) -> dict[str, Any]:
    """The ``views.publish`` view for one user."""
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": "codeask"}},
        _section(
            "Ask about code: mention me in a channel, message me here, or use "
            f"`/codeask ask {escape('<question>')}`. `/codeask help` lists every command."
        ),
    ]
    buttons = []
    if data.dm_url:
        buttons.append(_button(":speech_balloon: Ask in DM", ACTION_OPEN_DM, url=data.dm_url))
    if not data.github_login and data.link_url:
        buttons.append(
            _button(":link: Link GitHub", ACTION_LINK_GITHUB, style="primary", url=data.link_url)
        )
    if buttons:
        blocks.append({"type": "actions", "block_id": "codeask_home", "elements": buttons})
    blocks.append({"type": "divider"})
    if data.github_login:
        blocks.append(_section(f"*GitHub account:* linked to `@{escape(data.github_login)}`"))
    elif data.link_url:
        blocks.append(
            _section(
                "*GitHub account:* not linked, so only public repositories are searched. "
                "*Link GitHub* opens the sign-in page (the link works once); send the code it "
                "shows as `/codeask link confirm CODE` to include the private ones you can read."
            )
        )
    else:
        blocks.append(
            _section(
                "*GitHub account:* not linked, so only public repositories are searched. "
                "Run `/codeask link` to include the private ones you can read."
            )
        )
    blocks.append(_section(f"*Repositories you can ask about ({len(data.repos)})*"))
    repo_lines = [_repo_line(r) for r in data.repos]
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
