"""GitHub webhooks that change who can read what: verified, then the cache is cleared."""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from acl.store import AclStore
from indexer.errors import AccessDenied, ConfigError, InvalidInput

log = logging.getLogger(__name__)


@dataclass
class WebhookResult:
    """What a webhook changed, for logs and the HTTP response."""

    event: str
    action: str = ""
    repos: list[str] = field(default_factory=list)
    users: list[int] = field(default_factory=list)
    everything: bool = False

    @property
    def changed(self) -> bool:
        return bool(self.repos or self.users or self.everything)


def _header(headers: Mapping[str, str], name: str) -> str:
    for key, value in headers.items():
        if key.lower() == name.lower():
            return value
    return ""


def verify_signature(secret: str, headers: Mapping[str, str], body: bytes) -> None:
    """Raise ``AccessDenied`` unless ``X-Hub-Signature-256`` is the HMAC-SHA256 of ``body``."""
    if not secret:
        raise ConfigError("CODEASK_GITHUB_WEBHOOK_SECRET is not set; webhooks are refused.")
    given = _header(headers, "X-Hub-Signature-256")
    if not given.isascii():  # raw header bytes arrive surrogate-escaped and cannot be encoded
        raise AccessDenied("The webhook signature does not match; the request was ignored.")
    expected = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    if not hmac.compare_digest(given.encode(), expected.encode()):
        raise AccessDenied("The webhook signature does not match; the request was ignored.")


def process_webhook(
    secret: str, headers: Mapping[str, str], body: bytes, store: AclStore
) -> WebhookResult:
    """Verify, parse and apply one webhook delivery (what an HTTP route calls)."""
    verify_signature(secret, headers, body)
    event = _header(headers, "X-GitHub-Event")
    if not event:
        raise InvalidInput("The webhook has no X-GitHub-Event header.")
    try:
        payload = json.loads(body)
    except ValueError as exc:
        raise InvalidInput("The webhook body is not JSON.") from exc
    if not isinstance(payload, dict):
        raise InvalidInput("The webhook body is not a JSON object.")
    return handle_acl_webhook(event, payload, store)


def _repo_name(payload: Mapping[str, Any]) -> str | None:
    repo = payload.get("repository")
    if isinstance(repo, dict) and isinstance(repo.get("full_name"), str):
        return str(repo["full_name"])
    return None


def _user_id(obj: Any) -> int | None:
    if isinstance(obj, dict) and isinstance(obj.get("id"), int):
        return int(obj["id"])
    return None


def handle_acl_webhook(
    event: str,
    payload: Mapping[str, Any],
    store: AclStore,
    registered_as: str | None = None,
) -> WebhookResult:
    """Apply an already verified delivery: clear the cached permissions it may have changed.

    When the exact scope is unclear the whole cache is cleared: a few extra GitHub calls
    are cheaper than an answer from a repository someone just lost. ``registered_as`` is
    the name the index knows the payload's repository by (found by its GitHub id), when
    that differs from GitHub's current name, e.g. after an organization was renamed.
    """
    action = str(payload.get("action") or "")
    result = WebhookResult(event, action)
    repo = _repo_name(payload)
    names = [n for n in dict.fromkeys([repo, registered_as]) if n]

    if event == "member":  # a collaborator added, removed or changed on one repository
        result.repos.extend(names)
        user = _user_id(payload.get("member"))
        if user is not None:
            result.users.append(user)
    elif event == "membership":  # team membership: the team may reach any number of repos
        user = _user_id(payload.get("member"))
        if user is None:
            result.everything = True
        else:
            result.users.append(user)
    elif event == "organization":  # member_added, member_removed, member_invited, renamed
        membership = payload.get("membership")
        user = _user_id(membership.get("user")) if isinstance(membership, dict) else None
        if user is None:
            result.everything = True
        else:
            result.users.append(user)
    elif event in ("team_add", "team"):
        if names:
            result.repos.extend(names)
        else:
            result.everything = True
    elif event == "repository" and repo:
        _repository_event(action, repo, names, payload, store, result)
    elif event in ("installation", "installation_repositories", "github_app_authorization"):
        result.everything = True

    if result.everything:
        store.invalidate_all()
    for r in result.repos:
        store.invalidate_repo(r)
    for u in result.users:
        store.invalidate_user(u)
    if result.changed:
        log.info(
            "webhook %s/%s cleared permissions: repos=%s users=%s all=%s",
            event,
            action,
            result.repos,
            result.users,
            result.everything,
        )
    return result


def _repository_event(
    action: str,
    repo: str,
    names: list[str],
    payload: Mapping[str, Any],
    store: AclStore,
    result: WebhookResult,
) -> None:
    """``repo`` is GitHub's current name; ``names`` adds the name the index uses for it."""
    if action in ("privatized", "publicized"):
        for name in names:
            store.set_repo_override(name, "private" if action == "privatized" else "public", action)
        result.repos.extend(names)
    elif action == "deleted":
        # The name may soon point at a different repository: nobody reads it until re-added.
        for name in names:
            store.set_repo_override(name, "gone", action)
        result.repos.extend(names)
    elif action in ("renamed", "transferred"):
        # The payload names the repository as it is now; the old name is what may soon
        # point at a different repository, so that one is gone. The new name now means
        # this repository: a "gone" left on it by an earlier move or deletion is cleared.
        old = previous_name(action, repo, payload)
        if old and old != repo:
            store.set_repo_override(old, "gone", action)
            result.repos.append(old)
        elif not old:
            result.everything = True  # the old name is unknown: drop every cached answer
        for name in names:
            if name != old and store.repo_overrides().get(name) == "gone":
                store.clear_repo_override(name)
        result.repos.extend(n for n in names if n != old)
    elif action in ("edited", "created", "archived", "unarchived"):
        visibility = (payload.get("repository") or {}).get("visibility")
        if action == "edited" and isinstance(visibility, str):
            for name in names:
                store.set_repo_override(name, visibility, action)
        result.repos.extend(names)


def previous_name(action: str, repo: str, payload: Mapping[str, Any]) -> str | None:
    """The repository's name before a rename (same owner) or a transfer (old owner), from
    a ``repository`` event's ``changes``; None when the payload does not say."""
    changes = _object(payload.get("changes"))
    owner, _, name = repo.partition("/")
    if action == "renamed":
        old_name = _object(_object(changes.get("repository")).get("name")).get("from")
        return f"{owner}/{old_name}" if isinstance(old_name, str) and old_name else None
    if action == "transferred":
        src = _object(_object(changes.get("owner")).get("from"))
        login = (_object(src.get("user")) or _object(src.get("organization"))).get("login")
        return f"{login}/{name}" if isinstance(login, str) and login else None
    return None


def _object(value: object) -> Mapping[str, Any]:
    """``value`` if it is a JSON object, else an empty one (payload fields can be anything)."""
    return value if isinstance(value, dict) else {}
