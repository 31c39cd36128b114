"""Linking a chat user to a GitHub account through the OAuth web flow."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from acl import AclSettings, AclStore, OAuthLinker, Principal
from indexer.errors import AccessDenied, ConfigError
from tests.conftest import migrated_engine
from tests.fake_github import FakeGitHub, FakeGitHubServer


class Clock:
    now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def server() -> Iterator[FakeGitHubServer]:
    fake = FakeGitHub()
    fake.add_user("alice")
    fake.add_user("mallory")
    with FakeGitHubServer(fake) as srv:
        yield srv


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def linker(server: FakeGitHubServer, tmp_path: Path, clock: Clock) -> OAuthLinker:
    settings = AclSettings(
        github_api_url=server.url,
        github_web_url=server.url,
        github_oauth_client_id="client-id",
        github_oauth_client_secret="client-secret",
        github_oauth_redirect_url="https://codeask.example.com/github/oauth/callback",
    )
    engine = migrated_engine(f"sqlite:///{tmp_path / 'acl.db'}")
    return OAuthLinker(settings, AclStore(engine, clock=clock))


def state_of(url: str) -> str:
    return parse_qs(urlsplit(url).query)["state"][0]


ALICE = Principal("slack", "T1:UALICE")
MALLORY = Principal("slack", "T1:UMALLORY")


def test_link_binds_the_chat_user_to_the_numeric_github_id_once_confirmed(
    linker: OAuthLinker, server: FakeGitHubServer
) -> None:
    url = linker.start(ALICE)
    assert url.startswith(f"{server.url}/login/oauth/authorize?client_id=client-id")
    server.fake.oauth_codes["code-1"] = "alice"
    pending = linker.complete(state_of(url), "code-1")
    assert (pending.platform, pending.chat_user_id, pending.github_login) == (
        "slack",
        "T1:UALICE",
        "alice",
    )
    assert linker.store.identity("slack", "T1:UALICE") is None  # not before confirmation
    link = linker.confirm(ALICE, pending.code.lower().replace("-", " "))  # as typed back
    assert (link.platform, link.chat_user_id, link.github_user_id, link.github_login) == (
        "slack",
        "T1:UALICE",
        server.fake.users["alice"],
        "alice",
    )
    assert linker.store.identity("slack", "T1:UALICE") is not None
    with pytest.raises(AccessDenied, match="wrong, expired or not yours"):
        linker.confirm(ALICE, pending.code)  # single use


def test_a_forwarded_link_url_grants_nothing_to_the_user_who_asked(
    linker: OAuthLinker, server: FakeGitHubServer
) -> None:
    """Mallory asks for a link and gets Alice to open it: Alice's browser signs in as Alice,
    but without the code from Alice's page Mallory cannot finish, and guessing is capped."""
    url = linker.start(MALLORY)
    server.fake.oauth_codes["code-1"] = "alice"
    pending = linker.complete(state_of(url), "code-1")  # in Alice's browser
    assert pending.chat_user_id == "T1:UMALLORY" and pending.github_login == "alice"
    for guess in ("AAAA-AAAA", "BBBB-BBBB", "CCCC-CCCC"):
        with pytest.raises(AccessDenied):
            linker.confirm(MALLORY, guess)
    # Three misses drop the pending sign-in: even the right code is now refused.
    with pytest.raises(AccessDenied):
        linker.confirm(MALLORY, pending.code)
    assert linker.store.identity("slack", "T1:UMALLORY") is None


def test_a_code_sent_by_another_chat_user_links_nobody(
    linker: OAuthLinker, server: FakeGitHubServer
) -> None:
    url = linker.start(ALICE)
    server.fake.oauth_codes["code-1"] = "alice"
    pending = linker.complete(state_of(url), "code-1")
    with pytest.raises(AccessDenied):
        linker.confirm(MALLORY, pending.code)
    # The code leaked, so it is void for its owner too.
    with pytest.raises(AccessDenied):
        linker.confirm(ALICE, pending.code)
    assert linker.store.identity("slack", "T1:UMALLORY") is None
    assert linker.store.identity("slack", "T1:UALICE") is None


def test_confirmation_expires(linker: OAuthLinker, server: FakeGitHubServer, clock: Clock) -> None:
    url = linker.start(ALICE)
    server.fake.oauth_codes["code-1"] = "alice"
    pending = linker.complete(state_of(url), "code-1")
    clock.now += 601
    with pytest.raises(AccessDenied):
        linker.confirm(ALICE, pending.code)
    assert linker.store.identity("slack", "T1:UALICE") is None


def test_state_is_single_use(linker: OAuthLinker, server: FakeGitHubServer) -> None:
    state = state_of(linker.start(ALICE))
    server.fake.oauth_codes["code-1"] = "alice"
    pending = linker.complete(state, "code-1")
    server.fake.oauth_codes["code-2"] = "mallory"
    with pytest.raises(AccessDenied, match="expired"):
        linker.complete(state, "code-2")
    linker.confirm(ALICE, pending.code)
    assert linker.store.identity("slack", "T1:UALICE").github_login == "alice"  # type: ignore[union-attr]


def test_expired_state_is_refused(
    linker: OAuthLinker, server: FakeGitHubServer, clock: Clock
) -> None:
    state = state_of(linker.start(Principal("slack", "T1:UALICE")))
    clock.now += 601
    server.fake.oauth_codes["code-1"] = "alice"
    with pytest.raises(AccessDenied):
        linker.complete(state, "code-1")
    assert linker.store.identity("slack", "T1:UALICE") is None


def test_forged_state_and_bad_code_are_refused(linker: OAuthLinker) -> None:
    with pytest.raises(AccessDenied):
        linker.complete("made-up", "code-1")
    state = state_of(linker.start(Principal("teams", "aad-1")))
    with pytest.raises(AccessDenied, match="incorrect or expired"):
        linker.complete(state, "never-issued")
    assert linker.store.identity("teams", "aad-1") is None


def test_linking_needs_an_oauth_app(tmp_path: Path) -> None:
    engine = migrated_engine(f"sqlite:///{tmp_path / 'acl.db'}")
    with pytest.raises(ConfigError, match="OAUTH_CLIENT_ID"):
        OAuthLinker(AclSettings(), AclStore(engine))


async def test_oauth_callback_route_links_the_user_over_http(
    server: FakeGitHubServer, tmp_path: Path
) -> None:
    """GitHub's redirect to /github/oauth/callback on `codeask serve` completes the link."""
    import aiohttp
    from aiohttp.test_utils import TestServer

    from bot.chat import Invoker, commands_for
    from bot.server import create_app
    from bot.services import Services
    from bot.settings import BotSettings
    from indexer.settings import IndexerSettings

    acl = AclSettings(
        github_api_url=server.url,
        github_web_url=server.url,
        github_oauth_client_id="client-id",
        github_oauth_client_secret="client-secret",
    )
    services = Services(BotSettings(), acl, IndexerSettings(data_dir=tmp_path / "data"))
    url = OAuthLinker(acl, services.acl_store).start(Principal("teams", "aad-1"))
    server.fake.oauth_codes["code-9"] = "alice"
    async with (
        TestServer(create_app(services, reconcile_seconds=0)) as http,
        aiohttp.ClientSession() as session,
    ):
        ok = await session.get(
            http.make_url("/github/oauth/callback"),
            params={"state": state_of(url), "code": "code-9"},
        )
        assert ok.status == 200
        page = await ok.text()
        assert "signed in to GitHub as alice. Nothing is linked yet" in page
        assert "requested by Microsoft Teams user aad-1" in page
        code = re.search(r"link confirm ([A-Z0-9]{4}-[A-Z0-9]{4})", page)
        assert code is not None
        assert services.acl_store.identity("teams", "aad-1") is None
        replay = await session.get(
            http.make_url("/github/oauth/callback"),
            params={"state": state_of(url), "code": "code-9"},
        )
        assert replay.status == 400
        assert "expired or was already used" in await replay.text()
    # The chat user finishes it with the code, through the same command every chat runs.
    commands = commands_for(services)
    result = commands.run(Invoker("teams", "aad-1"), f"link confirm {code.group(1)}")
    assert result.lines == ["Linked to GitHub @alice."]
    link = services.acl_store.identity("teams", "aad-1")
    assert link is not None and link.github_login == "alice"
    again = commands.run(Invoker("teams", "aad-1"), f"link confirm {code.group(1)}")
    assert "wrong, expired or not yours" in again.lines[0]
