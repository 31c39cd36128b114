"""What each answer showed, kept in the metadata database for the buttons on it.

A click ("Show sources", "Answer me in a DM", feedback) can land on any replica, after a
restart, long after the answer was written, and its payload names the answer by id only.
So the answer's asker, place, question and sources are stored here, and every action is
authorized again at click time against the clicker and the place of the click
(:func:`seen_here`): an id is not a capability. Rows older than :data:`KEPT_SECONDS` are
pruned as new ones are written.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from sqlalchemy import Boolean, Column, Text, delete, true
from sqlalchemy.engine import Engine
from sqlmodel import Field, Session, SQLModel, col

from acl import Place, Principal
from bot.answer.result import Source
from indexer.models import Chunk

KEPT_SECONDS = 7 * 24 * 3600  # a week: long enough to click, short enough to hold little code
MAX_TEXT_CHARS = 16_000  # per source: more than "Show sources" ever shows


class AnswerRow(SQLModel, table=True):
    """One answer: who asked what where, what it said, and the sources it was given (JSON)."""

    __tablename__ = "bot_answers"

    question_id: str = Field(primary_key=True)
    platform: str
    user_id: str
    place: str  # "dm", "cli" or "channel:<id>"
    question: str = Field(sa_column=Column(Text, nullable=False))
    sources: str = Field(sa_column=Column(Text, nullable=False))
    created_at: float = Field(index=True)
    answer: str = Field(default="", sa_column=Column(Text, nullable=False, server_default=""))
    notes: str = Field(default="[]", sa_column=Column(Text, nullable=False, server_default="[]"))
    found: bool = Field(
        default=True, sa_column=Column(Boolean, nullable=False, server_default=true())
    )


@dataclass(frozen=True)
class AnsweredQuestion:
    """An answer as a click needs it."""

    question_id: str
    asker: Principal
    place: Place
    question: str
    sources: list[Source]
    text: str = ""  # the answer as written, its [n] referring to ``sources``
    notes: tuple[str, ...] = ()  # the notes shown with it to everyone who saw it
    found: bool = True  # False: "not found", a refusal or a failure, as the Answer said

    @property
    def repos(self) -> frozenset[str]:
        return frozenset(s.chunk.repo for s in self.sources)


def seen_here(answer: AnsweredQuestion, clicker: Principal, place: Place) -> bool:
    """Whether ``clicker``, clicking in ``place``, may act on ``answer`` at all.

    A DM answer is its asker's alone, and only in a DM; a channel answer belongs to its
    channel. The place comes from the click, never from the answer: a click elsewhere
    (a forged payload with another answer's id) is refused.
    """
    if answer.place.kind == "dm":
        return place.kind == "dm" and clicker == answer.asker
    return answer.place.kind == "channel" and bool(answer.place.id) and place == answer.place


def parse_place(text: str) -> Place:
    """The inverse of ``str(Place)``; anything unknown is an unreachable channel."""
    if text == "dm":
        return Place("dm")
    if text == "cli":
        return Place("cli")
    kind, _, ident = text.partition(":")
    return Place("channel", ident if kind == "channel" else f"?{text}")


def record_answer(
    engine: Engine,
    question_id: str,
    asker: Principal,
    place: Place,
    question: str,
    sources: list[Source],
    text: str = "",
    notes: Sequence[str] = (),
    found: bool = True,
) -> None:
    """Store the answer (replacing a row with the same id) and prune old rows."""
    now = time.time()
    row = AnswerRow(
        question_id=question_id,
        platform=asker.platform,
        user_id=asker.user_id,
        place=str(place),
        question=question,
        sources=json.dumps([_source_json(s) for s in sources]),
        created_at=now,
        answer=text,
        notes=json.dumps(list(notes)),
        found=found,
    )
    with Session(engine) as s:
        s.execute(delete(AnswerRow).where(col(AnswerRow.created_at) < now - KEPT_SECONDS))
        s.merge(row)
        s.commit()


def load_answer(engine: Engine, question_id: str) -> AnsweredQuestion | None:
    """The stored answer with this id, or None (unknown or pruned)."""
    with Session(engine) as s:
        row = s.get(AnswerRow, question_id)
    if row is None or row.created_at < time.time() - KEPT_SECONDS:
        return None
    return AnsweredQuestion(
        question_id=row.question_id,
        asker=Principal(row.platform, row.user_id),
        place=parse_place(row.place),
        question=row.question,
        sources=[_source_from(d) for d in json.loads(row.sources)],
        text=row.answer,
        notes=tuple(str(n) for n in json.loads(row.notes or "[]")),
        found=row.found,
    )


def _source_json(source: Source) -> dict[str, object]:
    chunk = asdict(source.chunk)
    chunk["text"] = source.chunk.text[:MAX_TEXT_CHARS]
    chunk["header"] = ""  # context for search only, never shown
    return {"number": source.number, "score": source.score, "chunk": chunk}


def _source_from(data: dict[str, object]) -> Source:
    chunk = data["chunk"]
    assert isinstance(chunk, dict)
    return Source(int(str(data["number"])), Chunk(**chunk), float(str(data["score"])))
