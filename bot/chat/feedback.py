"""Helpful / wrong verdicts on answers, keyed by question id, for the eval sets.

One vote per user per answer: a later vote replaces the earlier one (an upsert on the
unique (question, platform, user) key, so two replicas handling two quick clicks still
leave one row), and undoing it removes the row.
"""

from __future__ import annotations

import time

from sqlalchemy import Index
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Engine
from sqlmodel import Field, Session, SQLModel, select

from indexer.db import is_sqlite, write_session

VERDICTS = ("helpful", "wrong")


class Feedback(SQLModel, table=True):
    """One user's latest verdict on one answer; the question itself is in the audit log."""

    __tablename__ = "bot_feedback"
    __table_args__ = (
        Index("ux_bot_feedback_vote", "question_id", "platform", "user_id", unique=True),
    )

    id: int | None = Field(default=None, primary_key=True)
    question_id: str = Field(index=True)
    platform: str
    user_id: str
    verdict: str
    created_at: float


def record_feedback(
    engine: Engine, question_id: str, platform: str, user_id: str, verdict: str
) -> Feedback:
    """Store ``verdict`` as this user's one vote on the answer, replacing an earlier one."""
    if verdict not in VERDICTS:
        raise ValueError(f"verdict must be one of {VERDICTS}")
    values = {
        "question_id": question_id,
        "platform": platform,
        "user_id": user_id,
        "verdict": verdict,
        "created_at": time.time(),
    }
    insert = sqlite_insert if is_sqlite(engine) else postgresql_insert
    upsert = (
        insert(Feedback)
        .values(**values)
        .on_conflict_do_update(
            index_elements=["question_id", "platform", "user_id"],
            set_={"verdict": verdict, "created_at": values["created_at"]},
        )
    )
    with write_session(engine) as s:
        s.execute(upsert)
        s.commit()
        row = _vote(s, question_id, platform, user_id)
    assert row is not None  # just written, in this transaction's successor
    return row


def remove_feedback(engine: Engine, question_id: str, platform: str, user_id: str) -> bool:
    """Undo this user's vote on the answer; False when there was none."""
    with write_session(engine) as s:
        row = _vote(s, question_id, platform, user_id)
        if row is None:
            return False
        s.delete(row)
        s.commit()
    return True


def vote_of(engine: Engine, question_id: str, platform: str, user_id: str) -> str | None:
    """This user's current verdict on the answer, or None."""
    with Session(engine) as s:
        row = _vote(s, question_id, platform, user_id)
    return row.verdict if row is not None else None


def feedback_for(engine: Engine, question_id: str) -> list[Feedback]:
    with Session(engine) as s:
        return list(s.exec(select(Feedback).where(Feedback.question_id == question_id)))


def _vote(s: Session, question_id: str, platform: str, user_id: str) -> Feedback | None:
    return s.exec(
        select(Feedback).where(
            Feedback.question_id == question_id,
            Feedback.platform == platform,
            Feedback.user_id == user_id,
        )
    ).first()
