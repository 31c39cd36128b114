"""SQL tables of access control (sqlmodel: the same models on SQLite and PostgreSQL).

The schema is owned by the migrations of :mod:`indexer.db`; a change here needs a revision.
"""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, Text, UniqueConstraint
from sqlmodel import Field, SQLModel


class IdentityLink(SQLModel, table=True):
    """A chat user proven (by GitHub OAuth) to own a GitHub account, keyed by numeric id."""

    __tablename__ = "acl_identity_links"
    __table_args__ = (UniqueConstraint("platform", "chat_user_id"),)

    id: int | None = Field(default=None, primary_key=True)
    platform: str = Field(index=True)
    chat_user_id: str
    # Logins can be renamed and then taken by someone else; the numeric id cannot.
    github_user_id: int = Field(sa_column=Column(BigInteger, nullable=False, index=True))
    github_login: str
    linked_at: float


class PendingLink(SQLModel, table=True):
    """A GitHub sign-in that finished in a browser, waiting for the chat user to confirm it.

    The browser that finishes the OAuth flow is not proven to belong to the chat user who
    asked (a link URL can be forwarded), so the link only takes effect when that chat user
    sends back the code the callback page showed. Only a hash of the code is stored.
    """

    __tablename__ = "acl_pending_links"

    code_hash: str = Field(primary_key=True)
    platform: str
    chat_user_id: str
    github_user_id: int = Field(sa_column=Column(BigInteger, nullable=False))
    github_login: str
    expires_at: float
    failed_attempts: int = 0


class LinkState(SQLModel, table=True):
    """A one-time OAuth ``state``, bound to the chat user who asked to link, until it expires."""

    __tablename__ = "acl_link_states"

    state: str = Field(primary_key=True)
    platform: str
    chat_user_id: str
    expires_at: float


class ChannelGrant(SQLModel, table=True):
    """An admin's decision that everyone in a channel may see answers from ``repo``."""

    __tablename__ = "acl_channel_grants"
    __table_args__ = (UniqueConstraint("platform", "channel_id", "repo"),)

    id: int | None = Field(default=None, primary_key=True)
    platform: str
    channel_id: str = Field(index=True)
    repo: str = Field(index=True)
    granted_by: str = ""
    granted_at: float = 0.0


class PermissionCache(SQLModel, table=True):
    """Whether a GitHub user could read a repo when last asked (allowed or not)."""

    __tablename__ = "acl_permission_cache"

    github_user_id: int = Field(sa_column=Column(BigInteger, primary_key=True))
    repo: str = Field(primary_key=True, index=True)
    allowed: bool
    fetched_at: float


class RepoOverride(SQLModel, table=True):
    """Visibility learnt from a GitHub webhook after indexing; the stricter value wins.

    ``gone`` (deleted, transferred or renamed away) makes the old name readable by nobody.
    """

    __tablename__ = "acl_repo_overrides"

    repo: str = Field(primary_key=True)
    visibility: str
    reason: str = ""
    updated_at: float = 0.0


class AuditEntry(SQLModel, table=True):
    """Who asked what, where, over which repos, and which places were cited (never code)."""

    __tablename__ = "acl_audit"

    id: int | None = Field(default=None, primary_key=True)
    ts: float = Field(index=True)
    platform: str
    user_id: str
    github_login: str = ""
    place: str  # "dm", "cli" or "channel:<id>"
    question: str = Field(sa_column=Column(Text, nullable=False))
    allowed_repos: str = Field(sa_column=Column(Text, nullable=False))  # JSON list
    cited: str = Field(sa_column=Column(Text, nullable=False))  # JSON [{repo, path, lines}]
    withheld: bool = False
    reason: str = ""
    request_id: str = ""
