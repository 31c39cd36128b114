"""bot.answer.asking: failures become answers a chat user can read, and access fails closed."""

from __future__ import annotations

from pathlib import Path

from acl import AclSettings, Place, Principal
from bot.answer.asking import ACCESS_DOWN_TEXT, NO_REPOS_TEXT, STORE_DOWN_TEXT, Asker, Question
from bot.services import Services
from bot.settings import BotSettings
from indexer.settings import IndexerSettings

ALICE = Principal("slack", "T1:U1")


def _services(tmp_path: Path, *, meta: str | None = None) -> Services:
    return Services(
        bot=BotSettings(),
        acl=AclSettings(),
        indexer=IndexerSettings(
            data_dir=tmp_path / "data", database_url=meta or f"sqlite:///{tmp_path / 'meta.db'}"
        ),
    )


async def test_search_store_down_is_a_clear_answer(tmp_path: Path) -> None:
    (tmp_path / "data" / "codeask.db").mkdir(parents=True)  # a folder where the database belongs
    answer = await Asker(_services(tmp_path)).ask(Question(ALICE, Place("dm"), "where is retry?"))
    assert answer.text == STORE_DOWN_TEXT and not answer.sources and not answer.found


async def test_access_database_down_searches_nothing(tmp_path: Path) -> None:
    (tmp_path / "meta").mkdir()
    services = _services(tmp_path, meta=f"sqlite:///{tmp_path / 'meta'}")  # a folder, not a file
    answer = await Asker(services).ask(Question(ALICE, Place("channel", "C1"), "where is retry?"))
    assert answer.text == ACCESS_DOWN_TEXT and not answer.sources


async def test_nothing_indexed_says_so_and_is_audited(tmp_path: Path) -> None:
    services = _services(tmp_path)
    question = Question(ALICE, Place("channel", "C1"), "where is retry?")
    answer = await Asker(services).ask(question)
    assert answer.text == NO_REPOS_TEXT and not answer.found
    [entry] = services.acl_store.audit_entries()
    assert (entry.user_id, entry.place, entry.request_id) == ("T1:U1", "channel:C1", question.id)
    answered = Asker(services).answered(question.id)
    assert answered is not None and answered.question == "where is retry?"
    services.close()
