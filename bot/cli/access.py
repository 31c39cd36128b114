"""The CLI's asker and place (``--as-github``, ``--place``) and the repositories they read."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from acl import GitHubIdentity, Place, Principal
from bot.answer import registered_repos
from bot.services import Services
from indexer.errors import ConfigError, InvalidInput


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


def cli_principal(services: Services, as_github: str | None, platform: str) -> Principal:
    """The local operator, or (``--as-github``) the GitHub user as GitHub knows them now."""
    if not as_github:
        return Principal.operator() if platform == "cli" else Principal(platform, "operator")
    if not services.acl.github_configured:
        raise ConfigError(
            "--as-github needs GitHub access: set CODEASK_GITHUB_TOKEN or the GitHub App settings."
        )
    user = services.github.user(as_github)
    if user is None:
        raise InvalidInput(f"GitHub has no user called {as_github!r}.")
    return Principal(platform, f"github:{user.id}", GitHubIdentity(user.id, user.login))


def allowed_repo_set(
    services: Services,
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
    registered = registered_repos(services.store)
    if as_github is None and where.kind == "cli":
        allowed = frozenset(repo for repo, _ in registered)
    else:
        principal = cli_principal(services, as_github, platform)
        access = services.resolver.allowed_repos(principal, where, registered)
        allowed = access.repos
        if notify is not None and access.reason:
            notify(access.reason)
    if not requested:
        return allowed
    if notify is not None:
        notify_unindexed(services, requested, notify)
    return allowed & frozenset(requested)


def notify_unindexed(
    services: Services, requested: Iterable[str], notify: Callable[[str], None]
) -> None:
    """Tell the operator which ``--repo`` names the search store does not hold."""
    indexed = {repo for repo, _ in registered_repos(services.store)}
    for name in sorted(set(requested) - indexed):
        notify(f"{name} is not indexed (indexed: {', '.join(sorted(indexed)) or 'nothing'})")
