"""Who may act on a stored answer, and what survives the database round trip."""

from __future__ import annotations

from pathlib import Path

from acl import Place, Principal
from bot.answer import Source
from bot.answer.records import AnsweredQuestion, load_answer, parse_place, record_answer, seen_here
from indexer.models import Chunk
from tests.conftest import migrated_engine

ALICE = Principal("slack", "T1:UALICE")
BOB = Principal("slack", "T1:UBOB")


def _answer(place: Place) -> AnsweredQuestion:
    return AnsweredQuestion("q1", ALICE, place, "where?", [])


def test_a_dm_answer_is_its_askers_alone_and_only_in_a_dm() -> None:
    dm = _answer(Place("dm"))
    assert seen_here(dm, ALICE, Place("dm"))
    assert not seen_here(dm, BOB, Place("dm"))
    assert not seen_here(dm, ALICE, Place("channel", "C1"))
    assert not seen_here(dm, ALICE, Place("cli"))


def test_a_channel_answer_belongs_to_its_channel_and_never_to_one_without_an_id() -> None:
    channel = _answer(Place("channel", "C1"))
    assert seen_here(channel, BOB, Place("channel", "C1"))
    assert not seen_here(channel, BOB, Place("channel", "C2"))
    assert not seen_here(channel, ALICE, Place("dm"))
    nameless = _answer(Place("channel", ""))
    assert not seen_here(nameless, ALICE, Place("channel", ""))
    assert not seen_here(_answer(Place("cli")), ALICE, Place("cli"))


def test_places_round_trip_and_unknown_ones_match_no_click() -> None:
    for place in (Place("dm"), Place("cli"), Place("channel", "C1")):
        assert parse_place(str(place)) == place
    odd = parse_place("weird:C1")
    assert odd.kind == "channel" and odd != Place("channel", "C1")


def test_sources_survive_the_database_and_unknown_ids_are_none(tmp_path: Path) -> None:
    engine = migrated_engine(f"sqlite:///{tmp_path / 'meta.db'}")
    chunk = Chunk(
        "acme/api",
        "a.py",
        3,
        4,
        "def a():\n    pass",
        "a",
        "python",
        "source",
        header="secret header",
        commit="c0ffee",
    )
    record_answer(
        engine,
        "q1",
        ALICE,
        Place("channel", "C1"),
        "where is a?",
        [Source(1, chunk, 0.5)],
        "In a.py [1].",
        ["Regenerated once."],
        False,
    )
    stored = load_answer(engine, "q1")
    assert stored is not None
    assert (stored.asker, stored.place, stored.question) == (
        ALICE,
        Place("channel", "C1"),
        "where is a?",
    )
    # What a shared answer and a refreshed card are built from again.
    assert (stored.text, stored.notes, stored.found) == (
        "In a.py [1].",
        ("Regenerated once.",),
        False,
    )
    [source] = stored.sources
    assert source.chunk.text == chunk.text and source.link() == Source(1, chunk, 0.5).link()
    assert source.chunk.header == ""  # search context is never kept
    assert load_answer(engine, "nope") is None and load_answer(engine, "") is None
