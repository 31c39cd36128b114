"""Webhook verification and the cache invalidations each event causes."""

from __future__ import annotations

import hashlib
import hmac
import json
from pathlib import Path

import pytest

from acl import AclStore
from acl.webhooks import handle_acl_webhook, previous_name, process_webhook, verify_signature
from indexer.errors import AccessDenied, ConfigError, InvalidInput
from tests.conftest import migrated_engine

SECRET = "It's a Secret to Everybody"


def sign(body: bytes, secret: str = SECRET) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


@pytest.fixture
def store(tmp_path: Path) -> AclStore:
    s = AclStore(migrated_engine(f"sqlite:///{tmp_path / 'acl.db'}"))
    s.put_permissions(1, {"acme/api": True, "acme/web": True})
    s.put_permissions(2, {"acme/api": True, "acme/web": False})
    return s


def test_githubs_documented_example_signature_verifies() -> None:
    # The example from GitHub's "Validating webhook deliveries" documentation.
    body = b"Hello, World!"
    expected = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
    verify_signature(SECRET, {"X-Hub-Signature-256": expected}, body)


def test_forged_signature_is_rejected_and_changes_nothing(store: AclStore) -> None:
    body = json.dumps({"action": "removed", "repository": {"full_name": "acme/api"}}).encode()
    headers = {"X-GitHub-Event": "member", "X-Hub-Signature-256": sign(body, "guess")}
    with pytest.raises(AccessDenied, match="signature"):
        process_webhook(SECRET, headers, body, store)
    tampered = {"X-GitHub-Event": "member", "X-Hub-Signature-256": sign(b"{}")}
    with pytest.raises(AccessDenied):
        process_webhook(SECRET, tampered, body, store)
    with pytest.raises(AccessDenied):
        process_webhook(SECRET, {"X-GitHub-Event": "member"}, body, store)
    assert store.cached_permissions(1, 300) == {"acme/api": True, "acme/web": True}


def test_without_a_configured_secret_every_webhook_is_refused(store: AclStore) -> None:
    body = b"{}"
    with pytest.raises(ConfigError):
        process_webhook(
            "", {"X-Hub-Signature-256": sign(body, ""), "X-GitHub-Event": "ping"}, body, store
        )


def test_signed_member_event_clears_the_repo_for_everyone(store: AclStore) -> None:
    body = json.dumps(
        {"action": "removed", "member": {"id": 1}, "repository": {"full_name": "acme/api"}}
    ).encode()
    headers = {"x-github-event": "member", "x-hub-signature-256": sign(body)}  # any header case
    result = process_webhook(SECRET, headers, body, store)
    assert result.repos == ["acme/api"] and result.users == [1]
    assert store.cached_permissions(1, 300) == {}
    assert store.cached_permissions(2, 300) == {"acme/web": False}


def test_malformed_body_is_invalid_input(store: AclStore) -> None:
    body = b"not json"
    with pytest.raises(InvalidInput):
        process_webhook(
            SECRET, {"X-GitHub-Event": "member", "X-Hub-Signature-256": sign(body)}, body, store
        )


@pytest.mark.parametrize(
    ("event", "payload", "left_for_user_2"),
    [
        ("membership", {"action": "removed", "member": {"id": 2}, "team": {"slug": "core"}}, {}),
        ("organization", {"action": "member_removed", "membership": {"user": {"id": 2}}}, {}),
        ("team_add", {"repository": {"full_name": "acme/web"}}, {"acme/api": True}),
        (
            "team",
            {"action": "removed_from_repository", "repository": {"full_name": "acme/web"}},
            {"acme/api": True},
        ),
        ("installation", {"action": "suspend"}, {}),
        (
            "repository",
            {
                "action": "transferred",
                "changes": {"owner": {"from": {"user": {"login": "someone"}}}},
                "repository": {"full_name": "acme/api"},
            },
            {"acme/web": False},
        ),
    ],
)
def test_access_changing_events_clear_the_cache(
    store: AclStore, event: str, payload: dict[str, object], left_for_user_2: dict[str, bool]
) -> None:
    assert handle_acl_webhook(event, payload, store).changed
    assert store.cached_permissions(2, 300) == left_for_user_2


def test_renamed_repository_makes_the_old_name_unreadable(store: AclStore) -> None:
    payload = {
        "action": "renamed",
        "changes": {"repository": {"name": {"from": "old-api"}}},
        "repository": {"full_name": "acme/api"},
    }
    result = handle_acl_webhook("repository", payload, store)
    assert result.repos == ["acme/old-api", "acme/api"]
    assert store.repo_overrides() == {"acme/old-api": "gone"}


def test_transferred_repository_makes_the_old_owners_name_unreadable_not_the_new(
    store: AclStore,
) -> None:
    payload = {
        "action": "transferred",
        "changes": {"owner": {"from": {"organization": {"login": "acme"}}}},
        "repository": {"full_name": "newco/api"},
    }
    result = handle_acl_webhook("repository", payload, store)
    assert result.repos == ["acme/api", "newco/api"]
    assert store.repo_overrides() == {"acme/api": "gone"}
    assert store.cached_permissions(2, 300) == {"acme/web": False}  # old name's answer dropped


def test_moving_a_repository_back_clears_the_gone_mark_on_its_name(store: AclStore) -> None:
    def renamed(old: str, new: str) -> dict[str, object]:
        return {
            "action": "renamed",
            "changes": {"repository": {"name": {"from": old}}},
            "repository": {"full_name": f"acme/{new}"},
        }

    handle_acl_webhook("repository", renamed("api", "api-v2"), store)
    assert store.repo_overrides() == {"acme/api": "gone"}
    handle_acl_webhook("repository", renamed("api-v2", "api"), store)
    assert store.repo_overrides() == {"acme/api-v2": "gone"}  # acme/api is this repo again


def test_a_transfer_without_the_old_owner_drops_every_cached_answer(store: AclStore) -> None:
    result = handle_acl_webhook(
        "repository", {"action": "transferred", "repository": {"full_name": "newco/api"}}, store
    )
    assert result.everything
    assert store.cached_permissions(1, 300) == {} and store.cached_permissions(2, 300) == {}


def test_events_also_apply_to_the_name_the_index_uses(store: AclStore) -> None:
    """After an organization rename GitHub names the repo differently from the index."""
    payload = {"action": "privatized", "repository": {"id": 7, "full_name": "newco/web"}}
    result = handle_acl_webhook("repository", payload, store, registered_as="acme/web")
    assert result.repos == ["newco/web", "acme/web"]
    assert store.repo_overrides() == {"newco/web": "private", "acme/web": "private"}
    member = {"action": "removed", "member": {"id": 2}, "repository": {"full_name": "newco/web"}}
    store.put_permissions(1, {"acme/web": True})
    handle_acl_webhook("member", member, store, registered_as="acme/web")
    assert "acme/web" not in store.cached_permissions(1, 300)


def test_unrelated_events_change_nothing(store: AclStore) -> None:
    assert not handle_acl_webhook("push", {"repository": {"full_name": "acme/api"}}, store).changed
    assert not handle_acl_webhook("ping", {"zen": "Keep it logically awesome."}, store).changed
    assert store.cached_permissions(1, 300) == {"acme/api": True, "acme/web": True}


@pytest.mark.parametrize(
    ("action", "changes", "expected"),
    [
        ("renamed", {"repository": {"name": {"from": "old"}}}, "acme/old"),
        ("transferred", {"owner": {"from": {"organization": {"login": "beta"}}}}, "beta/api"),
        ("transferred", {"owner": {"from": {"user": {"login": "carol"}}}}, "carol/api"),
        ("renamed", {"repository": "not an object"}, None),
        ("renamed", {"repository": {"name": {"from": ""}}}, None),
        ("transferred", {"owner": {"from": ["x"]}}, None),
        ("renamed", "changes as a string", None),
        ("edited", {"repository": {"name": {"from": "old"}}}, None),
    ],
)
def test_previous_name_reads_only_well_formed_changes(
    action: str, changes: object, expected: str | None
) -> None:
    """The indexer's rename handling and the permission cache read the old name the same way;
    a malformed ``changes`` is an unknown old name, never an error."""
    assert previous_name(action, "acme/api", {"changes": changes}) == expected
