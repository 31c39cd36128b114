"""Linking a chat user to a GitHub account, proven by GitHub OAuth (web flow)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from urllib.parse import urlencode

import httpx

from acl.github import GitHubUser
from acl.models import IdentityLink
from acl.permissions import Principal
from acl.settings import AclSettings
from acl.store import AclStore
from indexer.errors import AccessDenied, ConfigError, InvalidInput, UpstreamUnavailable

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PendingConfirmation:
    """A finished GitHub sign-in that links nobody until the chat user sends ``code``."""

    platform: str
    chat_user_id: str
    github_login: str
    code: str


class OAuthLinker:
    """Issues one-time authorize URLs and turns a GitHub sign-in into an identity link.

    The ``state`` in the URL is random, single-use, expires, and is bound to the chat user
    who asked, so a link URL cannot be replayed. A URL can still be forwarded, and whoever
    opens it signs in with *their* GitHub account (without even a consent page if they
    approved the app before), so the callback links nobody: it shows a one-time code, and
    only the chat user who asked can confirm it (``link confirm CODE``). Someone tricked
    into opening another user's link URL therefore grants nothing unless they also hand
    over the code. Only the numeric GitHub user id is trusted; the user's OAuth token is
    used once and dropped.
    """

    def __init__(
        self,
        settings: AclSettings,
        store: AclStore,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        if not (settings.github_oauth_client_id and settings.github_oauth_client_secret):
            raise ConfigError(
                "Linking needs a GitHub OAuth app: set CODEASK_GITHUB_OAUTH_CLIENT_ID and "
                "CODEASK_GITHUB_OAUTH_CLIENT_SECRET."
            )
        self.settings = settings
        self.store = store
        self._transport = transport

    def start(self, principal: Principal) -> str:
        """The URL the chat user opens to prove which GitHub account is theirs."""
        state = self.store.create_link_state(
            principal.platform, principal.user_id, self.settings.link_state_ttl_seconds
        )
        query = {"client_id": self.settings.github_oauth_client_id, "state": state}
        if self.settings.github_oauth_redirect_url:
            query["redirect_uri"] = self.settings.github_oauth_redirect_url
        return (
            f"{self.settings.github_web_url.rstrip('/')}/login/oauth/authorize?{urlencode(query)}"
        )

    def complete(self, state: str, code: str) -> PendingConfirmation:
        """Finish the OAuth callback: consume ``state``, exchange ``code``, and hold the
        sign-in until the chat user confirms it with the returned code."""
        owner = self.store.consume_link_state(state)
        if owner is None:
            raise AccessDenied("This link request is unknown or has expired; ask for a new one.")
        if not code:
            raise InvalidInput("GitHub did not return an authorization code.")
        user = self._exchange(code)
        confirm = self.store.create_pending_link(
            owner[0], owner[1], user.id, user.login, self.settings.link_state_ttl_seconds
        )
        log.info("sign-in of GitHub user #%d for %s:%s awaits confirmation", user.id, *owner)
        return PendingConfirmation(owner[0], owner[1], user.login, confirm)

    def confirm(self, principal: Principal, code: str) -> IdentityLink:
        """Link ``principal`` to the GitHub account of the sign-in that ``code`` names."""
        found = self.store.consume_pending_link(principal.platform, principal.user_id, code)
        if found is None:
            raise AccessDenied(
                "That confirmation code is wrong, expired or not yours; send `link` to start again."
            )
        link = self.store.link(principal.platform, principal.user_id, found[0], found[1])
        log.info("linked %s:%s to GitHub user #%d", principal.platform, principal.user_id, found[0])
        return link

    def _exchange(self, code: str) -> GitHubUser:
        s = self.settings
        form = {
            "client_id": s.github_oauth_client_id,
            "client_secret": s.github_oauth_client_secret,
            "code": code,
        }
        if s.github_oauth_redirect_url:
            form["redirect_uri"] = s.github_oauth_redirect_url
        try:
            with httpx.Client(transport=self._transport, timeout=s.github_timeout_seconds) as http:
                token_response = http.post(
                    f"{s.github_web_url.rstrip('/')}/login/oauth/access_token",
                    data=form,
                    headers={"Accept": "application/json", "User-Agent": "codeask"},
                )
                body = token_response.json() if token_response.content else {}
                token = body.get("access_token") if isinstance(body, dict) else None
                if token_response.status_code != 200 or not token:
                    reason = body.get("error_description") if isinstance(body, dict) else None
                    why = reason or token_response.status_code
                    raise AccessDenied(
                        f"GitHub did not accept the sign-in ({why}); start the link again."
                    )
                user_response = http.get(
                    f"{s.github_api_url.rstrip('/')}/user",
                    headers={
                        "Authorization": f"Bearer {token}",
                        "Accept": "application/vnd.github+json",
                        "User-Agent": "codeask",
                    },
                )
        except httpx.HTTPError as exc:
            raise UpstreamUnavailable(
                f"GitHub could not be reached ({type(exc).__name__})."
            ) from exc
        except ValueError as exc:
            raise UpstreamUnavailable(
                "GitHub answered the sign-in with something other than JSON."
            ) from exc
        if user_response.status_code != 200:
            raise UpstreamUnavailable(
                f"GitHub did not say who signed in (HTTP {user_response.status_code})."
            )
        user = user_response.json()
        return GitHubUser(int(user["id"]), str(user["login"]))
