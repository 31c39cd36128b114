"""Helpful / wrong verdicts on answers, keyed by question id, for the eval sets."""

from __future__ import annotations

import time

from sqlalchemy import delete
from sqlalchemy.engine import Engine
from sqlmodel import Field, Session, SQLModel, col, select

VERDICTS = ("helpful", "wrong")


class Feedback(SQLModel, table=True):
    """One user's latest verdict on one answer; the question itself is in the audit log."""

    __tablename__ = "bot_feedback"

    id: int | None = Field(default=None, primary_key=True)
    question_id: str = Field(index=True)
    platform: str
    user_id: str
    verdict: str
    created_at: float


def record_feedback(
    engine: Engine, question_id: str, platform: str, user_id: str, verdict: str
) -> Feedback:
    """Store ``verdict``; a user's second click on the same answer replaces the first."""
    if verdict not in VERDICTS:
        raise ValueError(f"verdict must be one of {VERDICTS}")
    with Session(engine) as s:
        s.execute(
            delete(Feedback).where(
                col(Feedback.question_id) == question_id,
                col(Feedback.platform) == platform,
                col(Feedback.user_id) == user_id,
            )
        )
        row = Feedback(
            question_id=question_id,
            platform=platform,
            user_id=user_id,
            verdict=verdict,
            created_at=time.time(),
        )
        s.add(row)
        s.commit()
        s.refresh(row)
        return row


def feedback_for(engine: Engine, question_id: str) -> list[Feedback]:
    with Session(engine) as s:
        return list(s.exec(select(Feedback).where(Feedback.question_id == question_id)))
