"""Votes on answers, on SQLite and PostgreSQL: one per user per answer, replaced, undone."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine

from bot.chat.feedback import feedback_for, record_feedback, remove_feedback, vote_of
from tests.conftest import DATABASES, PG_URL, migrated_engine


@pytest.fixture(params=DATABASES)
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    url = f"sqlite:///{tmp_path / 'meta.db'}" if request.param == "sqlite" else PG_URL
    eng = migrated_engine(url)
    yield eng
    eng.dispose()


def _votes(engine: Engine, question_id: str) -> list[tuple[str, str, str]]:
    return sorted((f.platform, f.user_id, f.verdict) for f in feedback_for(engine, question_id))


def test_a_later_vote_replaces_the_earlier_and_undo_removes_it(engine: Engine) -> None:
    record_feedback(engine, "q1", "slack", "T1:UALICE", "helpful")
    row = record_feedback(engine, "q1", "slack", "T1:UALICE", "wrong")
    assert (row.question_id, row.verdict) == ("q1", "wrong")
    record_feedback(engine, "q1", "teams", "T1:UALICE", "helpful")  # another platform's user
    record_feedback(engine, "q2", "slack", "T1:UALICE", "helpful")  # another answer
    assert _votes(engine, "q1") == [
        ("slack", "T1:UALICE", "wrong"),
        ("teams", "T1:UALICE", "helpful"),
    ]
    assert vote_of(engine, "q1", "slack", "T1:UALICE") == "wrong"

    assert remove_feedback(engine, "q1", "slack", "T1:UALICE") is True
    assert remove_feedback(engine, "q1", "slack", "T1:UALICE") is False  # nothing left
    assert vote_of(engine, "q1", "slack", "T1:UALICE") is None
    assert _votes(engine, "q1") == [("teams", "T1:UALICE", "helpful")]
    assert _votes(engine, "q2") == [("slack", "T1:UALICE", "helpful")]


def test_votes_racing_from_two_replicas_leave_one_row(engine: Engine) -> None:
    verdicts = ["helpful", "wrong"] * 8
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda v: record_feedback(engine, "q3", "slack", "T1:UBOB", v), verdicts))
    [(_, _, verdict)] = _votes(engine, "q3")
    assert verdict in ("helpful", "wrong")


def test_only_known_verdicts_are_stored(engine: Engine) -> None:
    with pytest.raises(ValueError, match="verdict"):
        record_feedback(engine, "q4", "slack", "T1:UBOB", "meh")
    assert feedback_for(engine, "q4") == []
