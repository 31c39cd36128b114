"""bot_answers: what each answer showed, for the buttons on it (added after ad335cc).

Created only if absent, like revision 0001: code before migrations created it on the
first answer.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "bot_answers",
        sa.Column("question_id", sa.String(), primary_key=True),
        *(sa.Column(c, sa.String(), nullable=False) for c in ("platform", "user_id", "place")),
        *(sa.Column(c, sa.Text(), nullable=False) for c in ("question", "sources")),
        sa.Column("created_at", sa.Float(), nullable=False),
        if_not_exists=True,
    )
    op.create_index("ix_bot_answers_created_at", "bot_answers", ["created_at"], if_not_exists=True)


def downgrade() -> None:
    op.drop_table("bot_answers")
