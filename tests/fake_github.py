"""A local GitHub REST API for tests: real status codes, headers, ETags, pages and App auth."""

from __future__ import annotations

import hashlib
import json
import secrets
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import jwt


@dataclass
class FakeGitHub:
    """The world GitHub knows about; tests change it while the server runs."""

    token: str = "ghp_fake_static_token"
    app_id: str = "4242"
    installation_id: str = "77"
    app_public_key: str = ""
    repos: dict[str, dict[str, Any]] = field(default_factory=dict)
    users: dict[str, int] = field(default_factory=dict)
    roles: dict[tuple[str, str], str] = field(default_factory=dict)
    org_members: dict[str, set[str]] = field(default_factory=dict)
    oauth_codes: dict[str, str] = field(default_factory=dict)  # code → login
    oauth_client: tuple[str, str] = ("client-id", "client-secret")
    fail_status: int | None = None  # every API call answers this (GitHub outage)
    secondary_limit: int | None = None  # Retry-After seconds of a secondary limit
    rate_remaining: int = 5000
    rate_reset: int = 0
    token_lifetime: int = 3600
    issued_tokens: dict[str, float] = field(default_factory=dict)
    requests: list[tuple[str, str, int]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add_repo(self, full_name: str, visibility: str = "private") -> None:
        self.repos[full_name] = {
            "id": 1000 + len(self.repos),
            "full_name": full_name,
            "name": full_name.split("/")[1],
            "private": visibility != "public",
            "visibility": visibility,
            "default_branch": "main",
            "archived": False,
        }

    def add_user(self, login: str) -> int:
        self.users.setdefault(login, 5000 + len(self.users))
        return self.users[login]

    def calls(self, fragment: str = "") -> int:
        with self.lock:
            return sum(1 for _, path, _ in self.requests if fragment in path)


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"  # keep-alive, as api.github.com
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:  # quiet test output
        pass

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def _dispatch(self, method: str) -> None:
        gh = self.server.fake
        url = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        status, payload, headers = self._route(gh, method, url.path, parse_qs(url.query), body)
        self._reply(gh, method, url.path, status, payload, headers)

    def _reply(
        self,
        gh: FakeGitHub,
        method: str,
        path: str,
        status: int,
        payload: Any,
        headers: dict[str, str],
    ) -> None:
        data = b"" if payload is None else json.dumps(payload).encode()
        etag = f'"{hashlib.sha1(data).hexdigest()}"' if data else ""
        if method == "GET" and status == 200 and etag:
            headers["ETag"] = etag
            if self.headers.get("If-None-Match") == etag:
                status, data = 304, b""
        with gh.lock:
            gh.requests.append((method, path, status))
            if status != 304 and not path.startswith("/login/"):
                gh.rate_remaining = max(0, gh.rate_remaining - 1)
            headers.setdefault("X-RateLimit-Limit", "5000")
            headers.setdefault("X-RateLimit-Remaining", str(gh.rate_remaining))
            headers.setdefault("X-RateLimit-Reset", str(gh.rate_reset or int(time.time()) + 3600))
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        if data:
            self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _authorized(self, gh: FakeGitHub) -> bool:
        auth = self.headers.get("Authorization", "")
        token = auth.removeprefix("Bearer ").removeprefix("token ")
        if token == gh.token:
            return True
        with gh.lock:
            expiry = gh.issued_tokens.get(token)
        return expiry is not None and expiry > time.time()

    def _route(
        self, gh: FakeGitHub, method: str, path: str, query: dict[str, list[str]], body: bytes
    ) -> tuple[int, Any, dict[str, str]]:
        if path == "/login/oauth/access_token" and method == "POST":
            return self._oauth_token(gh, body)
        if gh.fail_status is not None:
            return gh.fail_status, {"message": "Server Error"}, {}
        if gh.secondary_limit is not None:
            return (
                403,
                {"message": "You have exceeded a secondary rate limit."},
                {"Retry-After": str(gh.secondary_limit)},
            )
        if gh.rate_remaining <= 0:
            return 403, {"message": "API rate limit exceeded"}, {"X-RateLimit-Remaining": "0"}
        parts = [p for p in path.split("/") if p]
        if (
            method == "POST"
            and parts[:2] == ["app", "installations"]
            and parts[3:] == ["access_tokens"]
        ):
            return self._installation_token(gh, parts[2])
        if path == "/user" and self.headers.get("Authorization", "").startswith("Bearer gho_"):
            login = self.headers["Authorization"].removeprefix("Bearer gho_")
            return 200, {"id": gh.users[login], "login": login}, {}
        if not self._authorized(gh):
            return 401, {"message": "Bad credentials"}, {}
        if method != "GET":
            return 404, {"message": "Not Found"}, {}
        return self._get(gh, parts, query)

    def _get(
        self, gh: FakeGitHub, parts: list[str], query: dict[str, list[str]]
    ) -> tuple[int, Any, dict[str, str]]:
        not_found: tuple[int, Any, dict[str, str]] = (404, {"message": "Not Found"}, {})
        if parts == ["rate_limit"]:
            core = {"limit": 5000, "remaining": gh.rate_remaining, "reset": gh.rate_reset or 0}
            return 200, {"resources": {"core": core}, "rate": core}, {}
        if len(parts) == 3 and parts[0] == "repos":
            repo = gh.repos.get(f"{parts[1]}/{parts[2]}")
            return (200, repo, {}) if repo else not_found
        if (
            len(parts) == 6
            and parts[0] == "repos"
            and parts[3] == "collaborators"
            and parts[5] == "permission"
        ):
            name, login = f"{parts[1]}/{parts[2]}", parts[4]
            if name not in gh.repos or login not in gh.users:
                return not_found
            role = gh.roles.get((name, login), "none")
            legacy = {"maintain": "write", "triage": "read"}.get(role, role)
            user = {"login": login, "id": gh.users[login], "type": "User"}
            return 200, {"permission": legacy, "role_name": role, "user": user}, {}
        if len(parts) == 4 and parts[0] == "orgs" and parts[2] == "members":
            return (204, None, {}) if parts[3] in gh.org_members.get(parts[1], set()) else not_found
        if len(parts) == 2 and parts[0] == "users":
            uid = gh.users.get(parts[1])
            return (200, {"login": parts[1], "id": uid, "type": "User"}, {}) if uid else not_found
        if len(parts) == 2 and parts[0] == "user" and parts[1].isdigit():
            found = next((k for k, v in gh.users.items() if v == int(parts[1])), None)
            return (
                (200, {"login": found, "id": int(parts[1]), "type": "User"}, {})
                if found
                else not_found
            )
        if parts == ["installation", "repositories"]:
            return self._page(gh, query)
        return not_found

    def _page(self, gh: FakeGitHub, query: dict[str, list[str]]) -> tuple[int, Any, dict[str, str]]:
        per_page = int(query.get("per_page", ["30"])[0])
        page = int(query.get("page", ["1"])[0])
        items = list(gh.repos.values())
        chunk = items[(page - 1) * per_page : page * per_page]
        base = f"http://{self.headers['Host']}/installation/repositories"
        links = []
        if page * per_page < len(items):
            links.append(f'<{base}?per_page={per_page}&page={page + 1}>; rel="next"')
            last = (len(items) + per_page - 1) // per_page
            links.append(f'<{base}?per_page={per_page}&page={last}>; rel="last"')
        headers = {"Link": ", ".join(links)} if links else {}
        return 200, {"total_count": len(items), "repositories": chunk}, headers

    def _installation_token(
        self, gh: FakeGitHub, installation: str
    ) -> tuple[int, Any, dict[str, str]]:
        token = self.headers.get("Authorization", "").removeprefix("Bearer ")
        try:
            claims = jwt.decode(
                token,
                gh.app_public_key,
                algorithms=["RS256"],
                options={"require": ["iat", "exp", "iss"]},
            )
        except jwt.PyJWTError:
            return 401, {"message": "A JSON web token could not be decoded"}, {}
        if str(claims["iss"]) != gh.app_id:
            return 401, {"message": "Integration not found"}, {}
        if installation != gh.installation_id:
            return 404, {"message": "Not Found"}, {}
        issued = "ghs_" + secrets.token_hex(16)
        expires = time.time() + gh.token_lifetime
        with gh.lock:
            gh.issued_tokens[issued] = expires
        stamp = datetime.fromtimestamp(expires, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        return 201, {"token": issued, "expires_at": stamp, "permissions": {"metadata": "read"}}, {}

    def _oauth_token(self, gh: FakeGitHub, body: bytes) -> tuple[int, Any, dict[str, str]]:
        form = {k: v[0] for k, v in parse_qs(body.decode()).items()}
        if (form.get("client_id"), form.get("client_secret")) != gh.oauth_client:
            return 200, {"error": "incorrect_client_credentials"}, {}
        login = gh.oauth_codes.pop(form.get("code", ""), None)
        if login is None:
            return (
                200,
                {
                    "error": "bad_verification_code",
                    "error_description": "The code passed is incorrect or expired.",
                },
                {},
            )
        return 200, {"access_token": f"gho_{login}", "token_type": "bearer", "scope": ""}, {}


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    fake: FakeGitHub


class FakeGitHubServer:
    """Runs a ``FakeGitHub`` on 127.0.0.1 at a random port, in a background thread."""

    def __init__(self, fake: FakeGitHub | None = None) -> None:
        self.fake = fake or FakeGitHub()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.fake = self.fake
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> FakeGitHubServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
