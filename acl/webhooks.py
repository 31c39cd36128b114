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


def handle_acl_webhook(event: str, payload: Mapping[str, Any], store: AclStore) -> WebhookResult:
    """Apply an already verified delivery: clear the cached permissions it may have changed.

    When the exact scope is unclear the whole cache is cleared: a few extra GitHub calls
    are cheaper than an answer from a repository someone just lost.
    """
    action = str(payload.get("action") or "")
    result = WebhookResult(event, action)
    repo = _repo_name(payload)

    if event == "member":  # a collaborator added, removed or changed on one repository
        if repo:
            result.repos.append(repo)
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
        if repo:
            result.repos.append(repo)
        else:
            result.everything = True
    elif event == "repository" and repo:
        _repository_event(action, repo, payload, store, result)
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
    action: str, repo: str, payload: Mapping[str, Any], store: AclStore, result: WebhookResult
) -> None:
    if action in ("privatized", "publicized"):
        store.set_repo_override(repo, "private" if action == "privatized" else "public", action)
        result.repos.append(repo)
    elif action in ("deleted", "transferred"):
        # The name may soon point at a different repository: nobody reads it until re-indexed.
        store.set_repo_override(repo, "gone", action)
        result.repos.append(repo)
    elif action == "renamed":
        changes = payload.get("changes")
        old = None
        if isinstance(changes, dict):
            old_name = ((changes.get("repository") or {}).get("name") or {}).get("from")
            if isinstance(old_name, str):
                old = f"{repo.split('/', 1)[0]}/{old_name}"
        if old:
            store.set_repo_override(old, "gone", "renamed")
            result.repos.append(old)
        result.repos.append(repo)
    elif action in ("edited", "created", "archived", "unarchived"):
        visibility = (payload.get("repository") or {}).get("visibility")
        if action == "edited" and isinstance(visibility, str):
            store.set_repo_override(repo, visibility, action)
        result.repos.append(repo)
