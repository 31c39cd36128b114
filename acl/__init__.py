"""Who may read which repository: GitHub permissions, identity links and place policy."""

from __future__ import annotations

from typing import TYPE_CHECKING

from indexer.lazy import lazy_attributes

if TYPE_CHECKING:
    from acl.github import GitHubClient
    from acl.linking import OAuthLinker, PendingConfirmation
    from acl.permissions import Access, AccessResolver, GitHubIdentity, Place, Principal
    from acl.settings import AclSettings
    from acl.store import AclStore
    from acl.webhooks import handle_acl_webhook, previous_name, verify_signature

# Loaded on first use: most commands need one or two of these, and the GitHub client
# brings its HTTP stack.
_HOME = {
    "Access": "acl.permissions",
    "AccessResolver": "acl.permissions",
    "AclSettings": "acl.settings",
    "AclStore": "acl.store",
    "GitHubClient": "acl.github",
    "GitHubIdentity": "acl.permissions",
    "OAuthLinker": "acl.linking",
    "PendingConfirmation": "acl.linking",
    "Place": "acl.permissions",
    "Principal": "acl.permissions",
    "handle_acl_webhook": "acl.webhooks",
    "previous_name": "acl.webhooks",
    "verify_signature": "acl.webhooks",
}

__all__ = [
    "Access",
    "AccessResolver",
    "AclSettings",
    "AclStore",
    "GitHubClient",
    "GitHubIdentity",
    "OAuthLinker",
    "PendingConfirmation",
    "Place",
    "Principal",
    "handle_acl_webhook",
    "previous_name",
    "verify_signature",
]

__getattr__ = lazy_attributes(__name__, _HOME)
