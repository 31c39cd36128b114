"""From a question's asker and place to the repositories its answer may use."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from acl.github import GitHubClient
from acl.permissions import AccessResolver, GitHubIdentity, Place, Principal
from acl.settings import AclSettings
from acl.store import AclStore
from indexer.errors import ConfigError, InvalidInput
from indexer.stores.contract import SearchBackend


@dataclass
class AccessContext:
    """The ACL pieces a front end needs, built once per process from ``AclSettings``."""

    settings: AclSettings
    store: AclStore
    github: GitHubClient | None
    resolver: AccessResolver

    @classmethod
    def from_settings(cls, settings: AclSettings | None = None) -> AccessContext:
        settings = settings or AclSettings()
        store = AclStore(settings.database_url)
        github = GitHubClient.from_settings(settings) if settings.github_configured else None
        resolver = AccessResolver(store, github, ttl_seconds=settings.permission_ttl_seconds)
        return cls(settings, store, github, resolver)

    def close(self) -> None:
        if self.github is not None:
            self.github.close()
        self.store.close()


def registered_repos(backend: SearchBackend) -> list[tuple[str, str]]:
    """(repo, visibility) of everything the search store holds."""
    return [(s.repo, s.visibility) for s in backend.repo_states()]


def parse_place(text: str | None) -> tuple[str, Place]:
    """``dm``, ``cli`` or ``channel:[PLATFORM:]ID`` (platform defaults to slack)."""
    if not text or text == "cli":
        return "cli", Place("cli")
    if text == "dm":
        return "cli", Place("dm")
    kind, _, rest = text.partition(":")
    if kind != "channel" or not rest:
        raise InvalidInput(f"--place must be dm, cli or channel:ID (got {text!r}).")
    platform, _, channel = rest.partition(":")
    if not channel:
        platform, channel = "slack", rest
    return platform, Place("channel", channel)


def cli_principal(context: AccessContext, as_github: str | None, platform: str) -> Principal:
    """The local operator, or (``--as-github``) the GitHub user as GitHub knows them now."""
    if not as_github:
        return Principal.operator() if platform == "cli" else Principal(platform, "operator")
    if context.github is None:
        raise ConfigError(
            "--as-github needs GitHub access: set CODEASK_GITHUB_TOKEN or the GitHub App settings."
        )
    user = context.github.user(as_github)
    if user is None:
        raise InvalidInput(f"GitHub has no user called {as_github!r}.")
    return Principal(platform, f"github:{user.id}", GitHubIdentity(user.id, user.login))


def allowed_repo_set(
    backend: SearchBackend,
    *,
    requested: list[str] | None = None,
    as_github: str | None = None,
    place: str | None = None,
    notify: Callable[[str], None] | None = None,
) -> frozenset[str]:
    """The CLI's repo set: everything indexed for the operator, else what the user would get.

    ``requested`` (``--repo``) narrows the set and never widens it; ``notify`` receives
    the user-facing reason (a channel withholding, GitHub being down).
    """
    platform, where = parse_place(place)
    if as_github is None and where.kind == "cli":
        allowed = frozenset(repo for repo, _ in registered_repos(backend))
    else:
        context = AccessContext.from_settings()
        try:
            principal = cli_principal(context, as_github, platform)
            access = context.resolver.allowed_repos(principal, where, registered_repos(backend))
        finally:
            context.close()
        allowed = access.repos
        if notify is not None and access.reason:
            notify(access.reason)
    if not requested:
        return allowed
    if notify is not None:
        indexed = {repo for repo, _ in registered_repos(backend)}
        for name in sorted(set(requested) - indexed):
            notify(f"{name} is not indexed (indexed: {', '.join(sorted(indexed)) or 'nothing'})")
    return allowed & frozenset(requested)
