"""The schema as code before migrations created it (commit ad335cc).

Tables and indexes are created only if absent: a database made by that code's
``create_all`` holds some or all of them already (tables were created as their modules
were imported), and :func:`indexer.db.upgrade` adopts it by running this revision.
Unique constraints stay unnamed, as then: PostgreSQL names them ``<table>_<columns>_key``
on a new database as it did on an old one, so both end up the same.

Revision ID: 0001
Revises:
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _when(name: str, nullable: bool = False) -> sa.Column:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def _text(name: str, kind: type[sa.types.TypeEngine] = sa.String) -> sa.Column:
    return sa.Column(name, kind(), nullable=False)


def upgrade() -> None:
    _registry()
    _acl()
    op.create_table(
        "bot_feedback",
        sa.Column("id", sa.Integer(), primary_key=True),
        *(_text(c) for c in ("question_id", "platform", "user_id", "verdict")),
        sa.Column("created_at", sa.Float(), nullable=False),
        if_not_exists=True,
    )
    _index("bot_feedback", "question_id")


def _registry() -> None:
    op.create_table(
        "registry_repos",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("full_name", sa.String(200), nullable=False),
        sa.Column("github_id", sa.Integer(), nullable=True),
        *(_text(c) for c in ("visibility", "default_branch", "tracked_branch", "clone_url")),
        *(_text(c) for c in ("include_globs", "exclude_globs", "status", "last_indexed_commit")),
        _when("last_indexed_at", nullable=True),
        _text("head_commit"),
        sa.Column("commits_behind", sa.Integer(), nullable=True),
        sa.Column("chunk_count", sa.Integer(), nullable=False),
        _text("last_error", sa.Text),
        _when("created_at"),
        _when("updated_at"),
        sa.UniqueConstraint("full_name"),
        if_not_exists=True,
    )
    op.create_table(
        "registry_index_runs",
        sa.Column("id", sa.Integer(), primary_key=True),
        _text("repo"),
        sa.Column("job_id", sa.Integer(), nullable=True),
        _text("commit"),
        _when("started_at"),
        _when("finished_at", nullable=True),
        *(sa.Column(c, sa.Integer(), nullable=False) for c in ("files", "changed_files")),
        *(sa.Column(c, sa.Integer(), nullable=False) for c in ("chunks", "embedded")),
        sa.Column("seconds", sa.Float(), nullable=False),
        sa.Column("full", sa.Boolean(), nullable=False),
        _text("outcome"),
        _text("error", sa.Text),
        if_not_exists=True,
    )
    _index("registry_index_runs", "repo")
    op.create_table(
        "registry_jobs",
        sa.Column("id", sa.Integer(), primary_key=True),
        *(_text(c) for c in ("repo", "kind", "status", "commit", "reason")),
        sa.Column("attempts", sa.Integer(), nullable=False),
        _when("not_before"),
        _text("locked_by"),
        _when("heartbeat_at", nullable=True),
        _when("created_at"),
        _when("finished_at", nullable=True),
        _text("last_error", sa.Text),
        if_not_exists=True,
    )
    op.create_index(
        "ix_registry_jobs_take", "registry_jobs", ["status", "not_before"], if_not_exists=True
    )
    op.create_index(
        "uq_registry_jobs_one_queued",
        "registry_jobs",
        ["repo"],
        unique=True,
        sqlite_where=sa.text("status = 'queued'"),
        postgresql_where=sa.text("status = 'queued'"),
        if_not_exists=True,
    )
    _index("registry_jobs", "repo")
    op.create_table(
        "registry_webhook_deliveries",
        sa.Column("delivery_id", sa.String(100), primary_key=True),
        _text("event"),
        _when("received_at"),
        if_not_exists=True,
    )
    op.create_table(
        "registry_events",
        sa.Column("id", sa.Integer(), primary_key=True),
        *(_text(c) for c in ("kind", "repo")),
        _text("detail", sa.Text),
        _when("created_at"),
        if_not_exists=True,
    )
    op.create_table(
        "registry_admin_actions",
        sa.Column("id", sa.Integer(), primary_key=True),
        *(_text(c) for c in ("actor", "action", "target")),
        _text("detail", sa.Text),
        _when("created_at"),
        if_not_exists=True,
    )


def _acl() -> None:
    op.create_table(
        "acl_identity_links",
        sa.Column("id", sa.Integer(), primary_key=True),
        *(_text(c) for c in ("platform", "chat_user_id")),
        sa.Column("github_user_id", sa.BigInteger(), nullable=False),
        _text("github_login"),
        sa.Column("linked_at", sa.Float(), nullable=False),
        sa.UniqueConstraint("platform", "chat_user_id"),
        if_not_exists=True,
    )
    _index("acl_identity_links", "github_user_id")
    _index("acl_identity_links", "platform")
    op.create_table(
        "acl_pending_links",
        sa.Column("code_hash", sa.String(), primary_key=True),
        *(_text(c) for c in ("platform", "chat_user_id")),
        sa.Column("github_user_id", sa.BigInteger(), nullable=False),
        _text("github_login"),
        sa.Column("expires_at", sa.Float(), nullable=False),
        sa.Column("failed_attempts", sa.Integer(), nullable=False),
        if_not_exists=True,
    )
    op.create_table(
        "acl_link_states",
        sa.Column("state", sa.String(), primary_key=True),
        *(_text(c) for c in ("platform", "chat_user_id")),
        sa.Column("expires_at", sa.Float(), nullable=False),
        if_not_exists=True,
    )
    op.create_table(
        "acl_channel_grants",
        sa.Column("id", sa.Integer(), primary_key=True),
        *(_text(c) for c in ("platform", "channel_id", "repo", "granted_by")),
        sa.Column("granted_at", sa.Float(), nullable=False),
        sa.UniqueConstraint("platform", "channel_id", "repo"),
        if_not_exists=True,
    )
    _index("acl_channel_grants", "channel_id")
    _index("acl_channel_grants", "repo")
    op.create_table(
        "acl_permission_cache",
        sa.Column("github_user_id", sa.BigInteger(), primary_key=True, autoincrement=False),
        sa.Column("repo", sa.String(), primary_key=True),
        sa.Column("allowed", sa.Boolean(), nullable=False),
        sa.Column("fetched_at", sa.Float(), nullable=False),
        if_not_exists=True,
    )
    _index("acl_permission_cache", "repo")
    op.create_table(
        "acl_repo_overrides",
        sa.Column("repo", sa.String(), primary_key=True),
        *(_text(c) for c in ("visibility", "reason")),
        sa.Column("updated_at", sa.Float(), nullable=False),
        if_not_exists=True,
    )
    op.create_table(
        "acl_audit",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("ts", sa.Float(), nullable=False),
        *(_text(c) for c in ("platform", "user_id", "github_login", "place")),
        *(_text(c, sa.Text) for c in ("question", "allowed_repos", "cited")),
        sa.Column("withheld", sa.Boolean(), nullable=False),
        *(_text(c) for c in ("reason", "request_id")),
        if_not_exists=True,
    )
    _index("acl_audit", "ts")


def _index(table: str, column: str) -> None:
    op.create_index(f"ix_{table}_{column}", table, [column], if_not_exists=True)


def downgrade() -> None:
    for table in (
        "bot_feedback",
        "acl_audit",
        "acl_repo_overrides",
        "acl_permission_cache",
        "acl_channel_grants",
        "acl_link_states",
        "acl_pending_links",
        "acl_identity_links",
        "registry_admin_actions",
        "registry_events",
        "registry_webhook_deliveries",
        "registry_jobs",
        "registry_index_runs",
        "registry_repos",
    ):
        op.drop_table(table)
