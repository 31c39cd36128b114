"""Who may read which repository, here: the place policy and its resolution against GitHub.

The policy (``decide_access``) is a pure function; ``AccessResolver`` gathers its inputs
(identity link, cached or fresh GitHub permissions, channel grants) and fails closed.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Literal, Protocol

from acl.github import Permission
from acl.store import AclStore, stricter
from indexer.errors import CodeaskError

log = logging.getLogger(__name__)

PlaceKind = Literal["dm", "channel", "cli"]
OPERATOR = "operator"

REASON_GITHUB_DOWN = "GitHub could not be reached; only public repositories were searched."
REASON_GITHUB_PARTIAL = (
    "GitHub could not be reached to confirm all of your access; "
    "repositories it could not confirm were left out."
)
REASON_UNLINKED = (
    "Only public repositories were searched. Link your GitHub account (the link command) "
    "to include the private ones you can read."
)
REASON_CHANNEL = (
    "In this channel only repositories everyone here may read were searched. "
    "Ask me in a direct message for an answer that can include more."
)


@dataclass(frozen=True)
class GitHubIdentity:
    id: int
    login: str


@dataclass(frozen=True)
class Principal:
    """The asker: a chat user (``slack``: ``TEAM:USER``, ``teams``: AAD object id) or the CLI.

    ``github`` is set only when the identity is already known (the CLI's ``--as-github``);
    chat users are looked up in the identity links.
    """

    platform: str
    user_id: str
    github: GitHubIdentity | None = None

    @classmethod
    def operator(cls) -> Principal:
        """The local operator of the CLI, who reads everything indexed locally."""
        return cls("cli", OPERATOR)

    @property
    def is_operator(self) -> bool:
        return self.platform == "cli" and self.user_id == OPERATOR and self.github is None


@dataclass(frozen=True)
class Place:
    """Where the answer will be shown: a direct message, a channel (by id) or the terminal."""

    kind: PlaceKind
    id: str = ""

    def __str__(self) -> str:
        return f"channel:{self.id}" if self.kind == "channel" else self.kind


@dataclass(frozen=True)
class Access:
    """The repositories an answer may draw on, and what to tell the asker.

    ``withheld`` means the asker could read more in a DM; ``reason`` is user-facing text
    that never names a repository outside ``repos``.
    """

    repos: frozenset[str]
    withheld: bool = False
    reason: str = ""
    degraded: bool = False  # GitHub failed; non-public repos it could not confirm are out
    github_login: str = ""


def decide_access(
    place: Place,
    visibility: Mapping[str, str],
    readable: frozenset[str],
    grants: frozenset[str],
    *,
    operator: bool = False,
    linked: bool = True,
    degraded: bool = False,
) -> Access:
    """The place policy over plain data.

    ``visibility`` maps every registered repo to its effective visibility; ``readable``
    holds the non-public repos GitHub confirmed the asker can read; ``grants`` the repos
    an admin granted to the channel.
    """
    registered = frozenset(visibility)
    if operator and place.kind == "cli":
        return Access(registered)
    public = frozenset(r for r, v in visibility.items() if v == "public")
    own = public | (readable & registered)
    if operator:
        own = registered
    if place.kind == "channel":
        shown = public | frozenset(
            r for r in grants if visibility.get(r) in ("public", "internal", "private")
        )
        withheld = bool(own - shown)
        reason = REASON_CHANNEL if withheld else ""
        if degraded:
            reason = " ".join(p for p in (reason, REASON_GITHUB_PARTIAL) if p)
        return Access(shown, withheld=withheld, reason=reason, degraded=degraded)
    reason = ""
    if degraded:
        reason = REASON_GITHUB_DOWN if own == public else REASON_GITHUB_PARTIAL
    elif not linked and registered - public:
        reason = REASON_UNLINKED
    return Access(own, reason=reason, degraded=degraded)


class PermissionSource(Protocol):
    """What resolution needs from GitHub (``acl.github.GitHubClient`` implements it)."""

    def permission(self, full_name: str, login: str) -> Permission: ...

    def is_org_member(self, org: str, login: str) -> bool: ...

    def user_by_id(self, user_id: int) -> object | None: ...


class AccessResolver:
    """Turns (principal, place) into an ``Access`` over the registered repositories.

    Answers are cached per (GitHub user, repo) for ``ttl_seconds``; webhooks clear them
    early. Any GitHub failure denies the repos it left unconfirmed and never raises.
    """

    def __init__(
        self,
        store: AclStore,
        github: PermissionSource | None,
        ttl_seconds: float = 300,
        workers: int = 4,
    ) -> None:
        self.store = store
        self.github = github
        self.ttl_seconds = ttl_seconds
        self.workers = workers

    def allowed_repos(
        self, principal: Principal, place: Place, registered: Sequence[tuple[str, str]]
    ) -> Access:
        """``registered`` is (repo, visibility at index time) for every indexed repository."""
        overrides = self.store.repo_overrides()
        visibility = {r: stricter(v, overrides.get(r, "public")) for r, v in registered}
        visibility = {r: v for r, v in visibility.items() if v != "gone"}
        grants = (
            self.store.channel_grants(principal.platform, place.id)
            if place.kind == "channel"
            else frozenset()
        )
        identity = principal.github
        if identity is None and not principal.is_operator:
            link = self.store.identity(principal.platform, principal.user_id)
            if link is not None:
                identity = GitHubIdentity(link.github_user_id, link.github_login)
        readable: frozenset[str] = frozenset()
        degraded = False
        if identity is not None:
            private = sorted(r for r, v in visibility.items() if v != "public")
            readable, degraded = self._readable(identity, private, visibility)
        access = decide_access(
            place,
            visibility,
            readable,
            grants,
            operator=principal.is_operator,
            linked=identity is not None,
            degraded=degraded,
        )
        if identity is not None:
            access = Access(
                access.repos, access.withheld, access.reason, access.degraded, identity.login
            )
        return access

    def _readable(
        self, identity: GitHubIdentity, repos: list[str], visibility: Mapping[str, str]
    ) -> tuple[frozenset[str], bool]:
        """Non-public repos the user can read, and whether GitHub failed to answer for some."""
        if not repos:
            return frozenset(), False
        cached = self.store.cached_permissions(identity.id, self.ttl_seconds)
        missing = [r for r in repos if r not in cached]
        fresh: dict[str, bool] = {}
        failed = False
        if missing:
            if self.github is None:
                failed = True
            else:
                try:
                    fresh = self._ask_github(identity, missing, visibility)
                except CodeaskError as exc:
                    # Fail closed: whatever GitHub did not confirm is not readable.
                    log.warning("GitHub permission check failed for user #%d: %s", identity.id, exc)
                    failed = True
                failed = failed or len(fresh) < len(missing)
                if fresh:
                    self.store.put_permissions(identity.id, fresh)
        answers = {**cached, **fresh}
        return frozenset(r for r in repos if answers.get(r) is True), failed

    def _ask_github(
        self, identity: GitHubIdentity, repos: list[str], visibility: Mapping[str, str]
    ) -> dict[str, bool]:
        github = self.github
        assert github is not None
        # Ask by current login: a renamed account's old login may now belong to someone else.
        current = github.user_by_id(identity.id)
        login = getattr(current, "login", None)
        if not isinstance(login, str):
            return {r: False for r in repos}  # the account is gone
        if login != identity.login:
            self.store.update_login(identity.id, login)
        members: dict[str, bool] = {}

        def check(repo: str) -> tuple[str, bool | None]:
            try:
                perm = github.permission(repo, login)
                if perm.user_id is not None and perm.user_id != identity.id:
                    return repo, False
                if perm.can_read:
                    return repo, True
                if visibility.get(repo) == "internal":
                    org = repo.split("/", 1)[0]
                    if org not in members:
                        members[org] = github.is_org_member(org, login)
                    return repo, members[org]
                return repo, False
            except CodeaskError as exc:
                log.warning("permission of user #%d on %s unknown: %s", identity.id, repo, exc)
                return repo, None

        with ThreadPoolExecutor(max_workers=max(1, min(self.workers, len(repos)))) as pool:
            results = list(pool.map(check, repos))
        return {repo: ok for repo, ok in results if ok is not None}
