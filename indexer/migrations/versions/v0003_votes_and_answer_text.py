"""One feedback vote per user per answer; answers keep their text and notes.

``bot_feedback`` gets a unique (question_id, platform, user_id) index, so a vote is an
upsert; duplicates written before (two clicks racing the old delete-then-insert) are
reduced to the latest first. ``bot_answers`` gains ``answer``, ``notes`` (JSON list) and ``found``:
a refreshed Teams card and a shared private answer are built again from them; rows
written before have neither and show as an answer without text.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-03
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.execute(
        "DELETE FROM bot_feedback WHERE id NOT IN ("
        " SELECT MAX(id) FROM bot_feedback GROUP BY question_id, platform, user_id)"
    )
    op.create_index(
        "ux_bot_feedback_vote", "bot_feedback", ["question_id", "platform", "user_id"], unique=True
    )
    with op.batch_alter_table("bot_answers") as table:
        table.add_column(sa.Column("answer", sa.Text(), nullable=False, server_default=""))
        table.add_column(sa.Column("notes", sa.Text(), nullable=False, server_default="[]"))
        table.add_column(sa.Column("found", sa.Boolean(), nullable=False, server_default=sa.true()))


def downgrade() -> None:
    with op.batch_alter_table("bot_answers") as table:
        table.drop_column("found")
        table.drop_column("notes")
        table.drop_column("answer")
    op.drop_index("ux_bot_feedback_vote", table_name="bot_feedback")
