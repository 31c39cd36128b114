"""The GitHub client against a local server speaking GitHub's REST shapes."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from acl import GitHubClient
from indexer.errors import ConfigError, UpstreamUnavailable
from tests.fake_github import FakeGitHub, FakeGitHubServer


@pytest.fixture
def server() -> Iterator[FakeGitHubServer]:
    fake = FakeGitHub()
    fake.add_repo("acme/api", "private")
    fake.add_repo("acme/site", "public")
    fake.add_repo("acme/tools", "internal")
    fake.add_user("alice")
    fake.add_user("bob")
    fake.roles[("acme/api", "alice")] = "triage"
    fake.roles[("acme/api", "bob")] = "none"
    fake.org_members["acme"] = {"alice"}
    with FakeGitHubServer(fake) as srv:
        yield srv


def token_client(server: FakeGitHubServer, **kwargs: object) -> GitHubClient:
    return GitHubClient(server.url, token=server.fake.token, **kwargs)  # type: ignore[arg-type]


def test_repository_metadata_and_unknown_repo(server: FakeGitHubServer) -> None:
    gh = token_client(server)
    info = gh.repository("acme/tools")
    assert info is not None
    assert (info.full_name, info.visibility, info.default_branch, info.archived) == (
        "acme/tools",
        "internal",
        "main",
        False,
    )
    assert gh.repository("acme/nope") is None


def test_read_and_above_grant_and_none_denies(server: FakeGitHubServer) -> None:
    gh = token_client(server)
    alice = gh.permission("acme/api", "alice")
    assert alice.can_read and alice.user_id == server.fake.users["alice"]
    assert not gh.permission("acme/api", "bob").can_read
    assert not gh.permission("acme/api", "mallory").can_read  # unknown user: 404 denies
    assert not gh.permission("acme/ghost", "alice").can_read  # unseen repo: 404 denies


def test_org_membership(server: FakeGitHubServer) -> None:
    gh = token_client(server)
    assert gh.is_org_member("acme", "alice")
    assert not gh.is_org_member("acme", "bob")


def test_bad_token_is_an_upstream_error_not_a_grant(server: FakeGitHubServer) -> None:
    gh = GitHubClient(server.url, token="wrong")
    with pytest.raises(UpstreamUnavailable, match="HTTP 401"):
        gh.permission("acme/api", "alice")


def test_etag_makes_repeat_reads_conditional(server: FakeGitHubServer) -> None:
    gh = token_client(server)
    first = gh.repository("acme/api")
    remaining = server.fake.rate_remaining
    second = gh.repository("acme/api")
    assert first == second
    assert server.fake.requests[-1] == ("GET", "/repos/acme/api", 304)
    assert server.fake.rate_remaining == remaining  # a 304 costs no quota


def test_pagination_follows_link_headers(server: FakeGitHubServer) -> None:
    for i in range(5):
        server.fake.add_repo(f"acme/extra{i}", "private")
    gh = GitHubClient(server.url, token=server.fake.token)
    # The token path lists /user/repos; exercise the installation listing through App auth.
    key = _rsa_key(server)
    app = GitHubClient(server.url, app_id="4242", private_key=key, installation_id="77")
    names = [r.full_name for r in app.installation_repositories()]
    assert len(names) == 8 and len(set(names)) == 8
    assert server.fake.calls("/installation/repositories") == 1  # per_page=100: one page
    gh.close()


def test_pagination_multiple_pages(
    server: FakeGitHubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(250):
        server.fake.add_repo(f"acme/r{i:03}", "private")
    app = GitHubClient(
        server.url, app_id="4242", private_key=_rsa_key(server), installation_id="77"
    )
    names = [r.full_name for r in app.installation_repositories()]
    assert len(names) == 253 and len(set(names)) == 253
    assert server.fake.calls("/installation/repositories") == 3


def _rsa_key(server: FakeGitHubServer) -> str:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    server.fake.app_public_key = (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()


def test_app_auth_mints_installation_token_once_and_renews_near_expiry(
    server: FakeGitHubServer,
) -> None:
    pem = _rsa_key(server)
    server.fake.token_lifetime = 90
    offset = [0.0]
    app = GitHubClient(
        server.url,
        app_id="4242",
        private_key=pem,
        installation_id="77",
        clock=lambda: time.time() + offset[0],
    )
    assert app.permission("acme/api", "alice").can_read
    assert app.repository("acme/site") is not None
    assert server.fake.calls("/access_tokens") == 1
    offset[0] = 31  # inside the last minute of the token's life: mint a new one
    assert app.repository("acme/tools") is not None
    assert server.fake.calls("/access_tokens") == 2
    assert len(server.fake.issued_tokens) == 2


def test_app_with_wrong_key_is_refused(server: FakeGitHubServer) -> None:
    _rsa_key(server)
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = other.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    app = GitHubClient(server.url, app_id="4242", private_key=pem, installation_id="77")
    with pytest.raises(UpstreamUnavailable, match="installation token"):
        app.repository("acme/api")


def test_invalid_private_key_is_a_config_error(server: FakeGitHubServer) -> None:
    app = GitHubClient(server.url, app_id="1", private_key="not a key", installation_id="77")
    with pytest.raises(ConfigError, match="RSA"):
        app.repository("acme/api")


def test_unconfigured_client_is_refused() -> None:
    with pytest.raises(ConfigError, match="CODEASK_GITHUB_TOKEN"):
        GitHubClient("http://127.0.0.1:9")


def test_primary_rate_limit_fails_fast_with_reset_time(server: FakeGitHubServer) -> None:
    slept: list[float] = []
    server.fake.rate_remaining = 0
    server.fake.rate_reset = int(time.time()) + 600
    gh = token_client(server, sleep=slept.append)
    with pytest.raises(UpstreamUnavailable, match="rate limit"):
        gh.permission("acme/api", "alice")
    calls = server.fake.calls()
    with pytest.raises(UpstreamUnavailable, match="rate limit"):
        gh.permission("acme/api", "alice")
    assert server.fake.calls() == calls  # known exhausted: no further request is sent
    assert slept == []


def test_secondary_limit_long_retry_after_is_not_slept(server: FakeGitHubServer) -> None:
    slept: list[float] = []
    server.fake.secondary_limit = 60
    gh = token_client(server, sleep=slept.append)
    with pytest.raises(UpstreamUnavailable, match=r"about 60 s"):
        gh.repository("acme/api")
    assert slept == []


def test_secondary_limit_short_retry_after_is_retried_once(server: FakeGitHubServer) -> None:
    slept: list[float] = []
    server.fake.secondary_limit = 1

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        server.fake.secondary_limit = None  # the limit lifts while we wait

    gh = token_client(server, sleep=sleep)
    assert gh.repository("acme/api") is not None
    assert slept == [1.0]


def test_server_errors_and_unreachable_github_raise_upstream_unavailable(
    server: FakeGitHubServer,
) -> None:
    server.fake.fail_status = 502
    gh = token_client(server, sleep=lambda s: None)
    with pytest.raises(UpstreamUnavailable, match="HTTP 502"):
        gh.repository("acme/api")
    gone = GitHubClient("http://127.0.0.1:9", token="x", timeout=2)
    with pytest.raises(UpstreamUnavailable, match="could not be reached"):
        gone.repository("acme/api")
