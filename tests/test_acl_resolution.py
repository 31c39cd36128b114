"""Permission resolution and the place policy, through the real client and a fake GitHub."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from acl import AclStore, GitHubClient, handle_acl_webhook
from acl.permissions import (
    REASON_CHANNEL,
    REASON_GITHUB_DOWN,
    REASON_UNLINKED,
    AccessResolver,
    GitHubIdentity,
    Place,
    Principal,
)
from tests.conftest import migrated_engine
from tests.fake_github import FakeGitHub, FakeGitHubServer

REGISTERED = [
    ("acme/site", "public"),
    ("acme/api", "private"),
    ("acme/billing", "private"),
    ("acme/tools", "internal"),
]
ALICE = Principal("slack", "T1:UALICE")
BOB = Principal("slack", "T1:UBOB")
DM = Place("dm")
GENERAL = Place("channel", "CGENERAL")


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def server() -> Iterator[FakeGitHubServer]:
    fake = FakeGitHub()
    for repo, vis in REGISTERED:
        fake.add_repo(repo, vis)
    fake.add_user("alice")
    fake.add_user("bob")
    fake.roles[("acme/api", "alice")] = "read"
    fake.roles[("acme/billing", "alice")] = "admin"
    fake.roles[("acme/api", "bob")] = "none"
    fake.org_members["acme"] = {"alice"}
    with FakeGitHubServer(fake) as srv:
        yield srv


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def store(tmp_path: Path, clock: Clock) -> AclStore:
    return AclStore(migrated_engine(f"sqlite:///{tmp_path / 'acl.db'}"), clock=clock)


@pytest.fixture
def resolver(server: FakeGitHubServer, store: AclStore) -> AccessResolver:
    gh = GitHubClient(server.url, token=server.fake.token, sleep=lambda s: None)
    store.link("slack", ALICE.user_id, server.fake.users["alice"], "alice")
    store.link("slack", BOB.user_id, server.fake.users["bob"], "bob")
    return AccessResolver(store, gh, ttl_seconds=300)


def test_linked_user_reads_public_and_what_github_grants(resolver: AccessResolver) -> None:
    access = resolver.allowed_repos(ALICE, DM, REGISTERED)
    assert access.repos == {"acme/site", "acme/api", "acme/billing", "acme/tools"}
    assert access.reason == "" and not access.withheld and access.github_login == "alice"


def test_permission_none_denies_and_internal_needs_org_membership(resolver: AccessResolver) -> None:
    assert resolver.allowed_repos(BOB, DM, REGISTERED).repos == {"acme/site"}


def test_unlinked_user_reads_public_only_and_is_told_how_to_link(resolver: AccessResolver) -> None:
    access = resolver.allowed_repos(Principal("slack", "T1:USTRANGER"), DM, REGISTERED)
    assert access.repos == {"acme/site"}
    assert access.reason == REASON_UNLINKED


def test_permissions_are_cached_for_the_ttl(
    resolver: AccessResolver, server: FakeGitHubServer, clock: Clock
) -> None:
    resolver.allowed_repos(ALICE, DM, REGISTERED)
    calls = server.fake.calls()
    server.fake.roles[("acme/api", "alice")] = "none"  # revoked on GitHub, no webhook
    assert "acme/api" in resolver.allowed_repos(ALICE, DM, REGISTERED).repos
    assert server.fake.calls() == calls
    clock.now += 301  # the TTL bounds how long a revocation can go unnoticed
    assert "acme/api" not in resolver.allowed_repos(ALICE, DM, REGISTERED).repos


def test_member_webhook_revocation_takes_effect_on_the_next_question(
    resolver: AccessResolver, server: FakeGitHubServer, store: AclStore
) -> None:
    assert "acme/api" in resolver.allowed_repos(ALICE, DM, REGISTERED).repos
    server.fake.roles[("acme/api", "alice")] = "none"
    payload = {
        "action": "removed",
        "member": {"login": "alice", "id": server.fake.users["alice"]},
        "repository": {"full_name": "acme/api"},
    }
    assert handle_acl_webhook("member", payload, store).changed
    assert "acme/api" not in resolver.allowed_repos(ALICE, DM, REGISTERED).repos


def test_organization_member_removed_clears_that_users_cache(
    resolver: AccessResolver, server: FakeGitHubServer, store: AclStore
) -> None:
    assert "acme/tools" in resolver.allowed_repos(ALICE, DM, REGISTERED).repos
    server.fake.org_members["acme"] = set()
    payload = {
        "action": "member_removed",
        "membership": {"user": {"id": server.fake.users["alice"]}},
    }
    handle_acl_webhook("organization", payload, store)
    assert "acme/tools" not in resolver.allowed_repos(ALICE, DM, REGISTERED).repos


def test_privatized_repository_stops_being_public_at_once(
    resolver: AccessResolver, store: AclStore
) -> None:
    stranger = Principal("slack", "T1:USTRANGER")
    assert "acme/site" in resolver.allowed_repos(stranger, DM, REGISTERED).repos
    handle_acl_webhook(
        "repository", {"action": "privatized", "repository": {"full_name": "acme/site"}}, store
    )
    assert "acme/site" not in resolver.allowed_repos(stranger, DM, REGISTERED).repos


def test_deleted_repository_is_readable_by_nobody(
    resolver: AccessResolver, store: AclStore
) -> None:
    handle_acl_webhook(
        "repository", {"action": "deleted", "repository": {"full_name": "acme/api"}}, store
    )
    assert "acme/api" not in resolver.allowed_repos(ALICE, DM, REGISTERED).repos
    assert (
        "acme/api"
        not in resolver.allowed_repos(Principal.operator(), Place("cli"), REGISTERED).repos
    )


def test_github_down_denies_private_answers_public_and_says_why(
    resolver: AccessResolver, server: FakeGitHubServer
) -> None:
    server.fake.fail_status = 503
    access = resolver.allowed_repos(ALICE, DM, REGISTERED)
    assert access.repos == {"acme/site"}
    assert access.degraded and access.reason == REASON_GITHUB_DOWN
    server.fake.fail_status = None  # failures are not cached: access returns with GitHub
    assert "acme/api" in resolver.allowed_repos(ALICE, DM, REGISTERED).repos


def test_github_unreachable_fails_closed(store: AclStore) -> None:
    store.link("slack", ALICE.user_id, 5000, "alice")
    gh = GitHubClient("http://127.0.0.1:9", token="x", timeout=2, sleep=lambda s: None)
    access = AccessResolver(store, gh).allowed_repos(ALICE, DM, REGISTERED)
    assert access.repos == {"acme/site"} and access.reason == REASON_GITHUB_DOWN


def test_rate_limited_github_fails_closed(
    resolver: AccessResolver, server: FakeGitHubServer
) -> None:
    server.fake.secondary_limit = 120
    access = resolver.allowed_repos(ALICE, DM, REGISTERED)
    assert access.repos == {"acme/site"} and access.degraded


def test_channel_answer_never_uses_private_repos(resolver: AccessResolver) -> None:
    access = resolver.allowed_repos(ALICE, GENERAL, REGISTERED)
    assert access.repos == {"acme/site"}
    assert access.withheld and access.reason == REASON_CHANNEL
    for repo, _ in REGISTERED:
        assert repo not in access.reason


def test_channel_uses_repos_an_admin_granted_to_it(
    resolver: AccessResolver, store: AclStore
) -> None:
    store.grant("slack", "CBILLING", "acme/billing", granted_by="admin")
    store.grant("slack", "CBILLING", "acme/unindexed")
    billing = Place("channel", "CBILLING")
    # Granted repos are for the channel's whole audience, whoever asks.
    assert resolver.allowed_repos(BOB, billing, REGISTERED).repos == {"acme/site", "acme/billing"}
    assert not resolver.allowed_repos(BOB, billing, REGISTERED).withheld
    assert resolver.allowed_repos(ALICE, billing, REGISTERED).withheld
    # A grant is per platform and channel.
    assert resolver.allowed_repos(BOB, Place("channel", "COTHER"), REGISTERED).repos == {
        "acme/site"
    }
    assert resolver.allowed_repos(Principal("teams", "x"), billing, REGISTERED).repos == {
        "acme/site"
    }


def test_cli_operator_reads_everything_indexed(resolver: AccessResolver) -> None:
    access = resolver.allowed_repos(Principal.operator(), Place("cli"), REGISTERED)
    assert access.repos == {r for r, _ in REGISTERED}


def test_as_github_preview_uses_the_same_resolution(
    resolver: AccessResolver, server: FakeGitHubServer
) -> None:
    preview = Principal("cli", "preview", GitHubIdentity(server.fake.users["bob"], "bob"))
    assert resolver.allowed_repos(preview, Place("cli"), REGISTERED).repos == {"acme/site"}


def test_renamed_login_taken_by_someone_else_grants_nothing(
    resolver: AccessResolver, server: FakeGitHubServer, store: AclStore
) -> None:
    # Alice renames to "alice2"; Mallory registers "alice" (a new numeric id) and is a collaborator.
    alice_id = server.fake.users.pop("alice")
    server.fake.users["alice2"] = alice_id
    server.fake.add_user("alice")
    server.fake.roles[("acme/api", "alice")] = "admin"
    server.fake.roles[("acme/billing", "alice2")] = "read"
    access = resolver.allowed_repos(ALICE, DM, REGISTERED)
    assert access.repos == {"acme/site", "acme/billing"}
    assert store.identity("slack", ALICE.user_id).github_login == "alice2"  # type: ignore[union-attr]


def test_unlink_returns_to_public_only(resolver: AccessResolver, store: AclStore) -> None:
    assert store.unlink("slack", ALICE.user_id)
    assert resolver.allowed_repos(ALICE, DM, REGISTERED).repos == {"acme/site"}
