"""A small GitHub REST client: App or token auth, permissions, rate limits, ETags."""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import quote

import httpx
import jwt

from acl.settings import AclSettings
from indexer.errors import ConfigError, UpstreamUnavailable

log = logging.getLogger(__name__)

API_VERSION = "2022-11-28"
# Roles that can read code. "none" (and anything unknown, e.g. a typo) denies.
READ_PERMISSIONS = frozenset({"read", "triage", "write", "maintain", "admin", "pull", "push"})
_TOKEN_MARGIN_SECONDS = 60
_ETAG_ENTRIES = 4096


@dataclass(frozen=True)
class RepoInfo:
    """Repository metadata as GitHub reports it."""

    full_name: str
    id: int
    visibility: str  # public | internal | private
    default_branch: str
    archived: bool


@dataclass(frozen=True)
class GitHubUser:
    id: int
    login: str


@dataclass(frozen=True)
class Permission:
    """A user's role on a repository; ``user_id`` is who GitHub says the login is now."""

    role: str
    user_id: int | None

    @property
    def can_read(self) -> bool:
        return self.role in READ_PERMISSIONS


def _parse_expiry(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def _next_link(header: str) -> str | None:
    """The ``rel="next"`` URL of a ``Link`` header, if any."""
    for part in header.split(","):
        pieces = part.split(";")
        if len(pieces) >= 2 and any(p.strip() == 'rel="next"' for p in pieces[1:]):
            return pieces[0].strip().strip("<>")
    return None


class GitHubClient:
    """GitHub REST over httpx. Thread-safe; every failure surfaces as ``UpstreamUnavailable``.

    Rate limits are never waited out in the request path: a ``Retry-After`` of at most
    ``max_retry_wait`` seconds is honoured once, anything longer raises at once.
    """

    def __init__(
        self,
        api_url: str = "https://api.github.com",
        *,
        token: str = "",
        app_id: str = "",
        private_key: str = "",
        installation_id: str = "",
        timeout: float = 10.0,
        transport: httpx.BaseTransport | None = None,
        max_retry_wait: float = 2.0,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
        on_error: Callable[[str], None] | None = None,
    ) -> None:
        if not token and not (app_id and private_key and installation_id):
            raise ConfigError(
                "GitHub is not configured: set CODEASK_GITHUB_TOKEN, or CODEASK_GITHUB_APP_ID, "
                "CODEASK_GITHUB_APP_PRIVATE_KEY(_PATH) and CODEASK_GITHUB_INSTALLATION_ID."
            )
        self.api_url = api_url.rstrip("/")
        self._token = token
        self._app_id = app_id
        self._private_key = private_key
        self._installation_id = installation_id
        self._clock = clock
        self._sleep = sleep
        # Told each failed request's kind (timeout, unreachable, http_5xx, rate_limited):
        # the metrics count GitHub's errors where they happen.
        self._on_error = on_error
        self._max_retry_wait = max_retry_wait
        self._http = httpx.Client(
            base_url=self.api_url,
            timeout=timeout,
            transport=transport,
            headers={
                "Accept": "application/vnd.github+json",
                "X-GitHub-Api-Version": API_VERSION,
                "User-Agent": "codeask",
            },
        )
        self._lock = threading.Lock()
        self._installation_token: tuple[str, float] | None = None
        self._etags: OrderedDict[str, tuple[str, Any]] = OrderedDict()
        self._exhausted_until = 0.0

    @classmethod
    def from_settings(
        cls,
        settings: AclSettings,
        transport: httpx.BaseTransport | None = None,
        on_error: Callable[[str], None] | None = None,
    ) -> GitHubClient:
        return cls(
            settings.github_api_url,
            token=settings.github_token,
            app_id=settings.github_app_id if settings.uses_app_auth else "",
            private_key=settings.private_key_pem() if settings.uses_app_auth else "",
            installation_id=settings.github_installation_id,
            timeout=settings.github_timeout_seconds,
            transport=transport,
            on_error=on_error,
        )

    def close(self) -> None:
        self._http.close()

    # --- auth -----------------------------------------------------------------------

    def app_jwt(self) -> str:
        """A short-lived RS256 JWT identifying the App (valid 9 minutes, clock skew allowed)."""
        now = int(self._clock())
        payload = {"iat": now - 60, "exp": now + 540, "iss": str(self._app_id)}
        try:
            return jwt.encode(payload, self._private_key, algorithm="RS256")
        except (ValueError, TypeError, jwt.PyJWTError) as exc:
            raise ConfigError(
                f"The GitHub App private key is not a valid RSA PEM key: {exc}"
            ) from exc

    def _auth_header(self) -> str:
        if not self._app_id:
            return f"Bearer {self._token}"
        with self._lock:
            cached = self._installation_token
            if cached is not None and self._clock() < cached[1] - _TOKEN_MARGIN_SECONDS:
                return f"Bearer {cached[0]}"
        response = self._send(
            "POST",
            f"/app/installations/{self._installation_id}/access_tokens",
            auth=f"Bearer {self.app_jwt()}",
        )
        if response.status_code != 201:
            raise UpstreamUnavailable(
                f"GitHub refused an installation token for installation "
                f"{self._installation_id} (HTTP {response.status_code}); check the App id, key "
                "and installation id."
            )
        body = response.json()
        token, expires = str(body["token"]), _parse_expiry(str(body["expires_at"]))
        with self._lock:
            self._installation_token = (token, expires)
        return f"Bearer {token}"

    # --- transport ------------------------------------------------------------------

    def _send(
        self, method: str, url: str, *, auth: str, headers: dict[str, str] | None = None
    ) -> httpx.Response:
        """One request with rate-limit handling: a single short retry, never a long sleep."""
        if self._clock() < self._exhausted_until:
            raise self._rate_limited(self._exhausted_until - self._clock())
        all_headers = {"Authorization": auth, **(headers or {})}
        for attempt in range(2):
            try:
                response = self._http.request(method, url, headers=all_headers)
            except httpx.TimeoutException as exc:
                self._failed("timeout")
                raise UpstreamUnavailable("GitHub did not answer in time.") from exc
            except httpx.HTTPError as exc:
                self._failed("unreachable")
                raise UpstreamUnavailable(
                    f"GitHub could not be reached ({type(exc).__name__})."
                ) from exc
            wait = self._limit_wait(response)
            if wait is None and response.status_code < 500:
                return response
            if wait is None:
                wait = 0.5  # a transient server error: one quick retry
            if attempt == 0 and wait <= self._max_retry_wait:
                self._sleep(wait)
                continue
            if response.status_code >= 500:
                self._failed("http_5xx")
                raise UpstreamUnavailable(
                    f"GitHub failed the request (HTTP {response.status_code})."
                )
            self._failed("rate_limited")
            raise self._rate_limited(wait)
        raise AssertionError("unreachable")

    def _failed(self, kind: str) -> None:
        if self._on_error is not None:
            try:
                self._on_error(kind)
            except Exception:  # counting never changes what the caller sees
                log.exception("a GitHub error could not be counted")

    def _limit_wait(self, response: httpx.Response) -> float | None:
        """Seconds to wait when the response is a primary or secondary rate limit, else None."""
        if response.status_code not in (403, 429):
            return None
        retry_after = response.headers.get("retry-after")
        if retry_after is not None:
            try:
                return max(0.0, float(retry_after))
            except ValueError:
                return 60.0
        if response.headers.get("x-ratelimit-remaining") == "0":
            reset = float(response.headers.get("x-ratelimit-reset", "0") or 0)
            with self._lock:
                self._exhausted_until = reset
            return max(0.0, reset - self._clock())
        if response.status_code == 429:
            return 60.0
        return None  # a plain 403: a permission problem, not a limit

    @staticmethod
    def _rate_limited(wait: float) -> UpstreamUnavailable:
        return UpstreamUnavailable(
            f"GitHub's API rate limit was reached; access can be checked again in about "
            f"{max(1, round(wait))} s."
        )

    def _get(self, path: str) -> tuple[int, Any, httpx.Response]:
        """GET with a conditional request: a 304 reuses the cached body (and costs no quota)."""
        with self._lock:
            cached = self._etags.get(path)
        headers = {"If-None-Match": cached[0]} if cached else {}
        response = self._send("GET", path, auth=self._auth_header(), headers=headers)
        if response.status_code == 401 and self._app_id:
            with self._lock:
                self._installation_token = None  # revoked early: mint a fresh one once
            response = self._send("GET", path, auth=self._auth_header(), headers=headers)
        if response.status_code == 304 and cached is not None:
            return 200, cached[1], response
        body: Any = None
        if response.content:
            try:
                body = response.json()
            except ValueError as exc:
                raise UpstreamUnavailable(
                    f"GitHub answered {path} with something other than JSON."
                ) from exc
        etag = response.headers.get("etag")
        if response.status_code == 200 and etag:
            with self._lock:
                self._etags[path] = (etag, body)
                self._etags.move_to_end(path)
                while len(self._etags) > _ETAG_ENTRIES:
                    self._etags.popitem(last=False)
        return response.status_code, body, response

    def _unexpected(self, what: str, status: int) -> UpstreamUnavailable:
        hint = " (is the token or App allowed to read it?)" if status in (401, 403) else ""
        return UpstreamUnavailable(f"GitHub refused to return {what} (HTTP {status}){hint}.")

    # --- API ------------------------------------------------------------------------

    def verify(self) -> str:
        """What the credentials are, once GitHub accepted them (``codeask doctor``): an App
        obtains an installation token, a token reads its rate limit."""
        status, body, _ = self._get("/rate_limit")
        if status != 200:
            raise self._unexpected("the rate limit", status)
        core = (body or {}).get("resources", {}).get("core", {}) if isinstance(body, dict) else {}
        left = core.get("remaining", "?") if isinstance(core, dict) else "?"
        who = (
            f"App {self._app_id}, installation {self._installation_id}"
            if self._app_id
            else "the token"
        )
        return f"{who} accepted; {left} requests left this hour"

    def repository(self, full_name: str) -> RepoInfo | None:
        """Metadata of ``owner/name``; None when GitHub says it does not exist (or is hidden)."""
        status, body, _ = self._get(f"/repos/{_repo_path(full_name)}")
        if status == 404:
            return None
        if status != 200:
            raise self._unexpected(f"repository {full_name}", status)
        visibility = body.get("visibility") or ("private" if body.get("private") else "public")
        return RepoInfo(
            full_name=str(body["full_name"]),
            id=int(body["id"]),
            visibility=str(visibility),
            default_branch=str(body.get("default_branch") or "main"),
            archived=bool(body.get("archived", False)),
        )

    def permission(self, full_name: str, login: str) -> Permission:
        """The role of ``login`` on the repo; a 404 (unknown repo or user) is ``none``."""
        path = f"/repos/{_repo_path(full_name)}/collaborators/{quote(login, safe='')}/permission"
        status, body, _ = self._get(path)
        if status == 404:
            return Permission("none", None)
        if status != 200:
            raise self._unexpected(f"the permission of {login} on {full_name}", status)
        user = body.get("user") or {}
        user_id = user.get("id")
        return Permission(str(body.get("permission") or "none"), int(user_id) if user_id else None)

    def is_org_member(self, org: str, login: str) -> bool:
        """Whether ``login`` belongs to ``org``; a redirect (we cannot tell) counts as no."""
        path = f"/orgs/{quote(org, safe='')}/members/{quote(login, safe='')}"
        response = self._send("GET", path, auth=self._auth_header())
        if response.status_code == 204:
            return True
        if response.status_code in (302, 404):
            return False
        raise self._unexpected(f"the membership of {login} in {org}", response.status_code)

    def user(self, login: str) -> GitHubUser | None:
        """The account behind a login; None when there is none."""
        status, body, _ = self._get(f"/users/{quote(login, safe='')}")
        if status == 404:
            return None
        if status != 200:
            raise self._unexpected(f"the user {login}", status)
        return GitHubUser(int(body["id"]), str(body["login"]))

    def user_by_id(self, user_id: int) -> GitHubUser | None:
        """The current login of a numeric account id (logins can be renamed and reused)."""
        status, body, _ = self._get(f"/user/{int(user_id)}")
        if status == 404:
            return None
        if status != 200:
            raise self._unexpected(f"the user #{user_id}", status)
        return GitHubUser(int(body["id"]), str(body["login"]))

    def installation_repositories(self) -> Iterator[RepoInfo]:
        """Every repository the installation (or token) can see, following ``Link`` pages."""
        url: str | None = "/installation/repositories?per_page=100"
        if not self._app_id:
            url = "/user/repos?per_page=100"
        while url is not None:
            status, body, response = self._get(url)
            if status != 200:
                raise self._unexpected("the list of repositories", status)
            items = body.get("repositories", []) if isinstance(body, dict) else body
            for item in items:
                yield RepoInfo(
                    full_name=str(item["full_name"]),
                    id=int(item["id"]),
                    visibility=str(
                        item.get("visibility") or ("private" if item.get("private") else "public")
                    ),
                    default_branch=str(item.get("default_branch") or "main"),
                    archived=bool(item.get("archived", False)),
                )
            url = _next_link(response.headers.get("link", ""))
            if url and url.startswith(self.api_url):
                url = url[len(self.api_url) :]


def _repo_path(full_name: str) -> str:
    owner, _, name = full_name.partition("/")
    if not owner or not name or "/" in name:
        raise ValueError(f"not an owner/name repository: {full_name!r}")
    return f"{quote(owner, safe='')}/{quote(name, safe='')}"
