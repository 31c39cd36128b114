"""The exact Slack blocks and Teams card built for each answer of the rendering corpus, a
not-found and a model-down answer, kept as pretty JSON under tests/golden_render/ (one
file per case and platform) so that any change to what users see is a reviewed diff.

After an intended renderer change, regenerate the files and read their diff:
``CODEASK_REGOLD_RENDER=1 pytest tests/test_render_golden.py``.
"""

from __future__ import annotations

import difflib
import json
import os
from pathlib import Path
from typing import Any

import pytest

from bot.answer import Answer
from bot.answer.asking import LLM_DOWN_TEXT
from bot.answer.result import not_found_answer, source_list
from bot.slack.render import answer_messages
from bot.teams.render import answer_card
from scripts.preview.views import answers as preview_answers
from tests.test_answer_rendering import FENCES, HEADINGS_AND_LISTS, LINKS, TABLE, WEB, _answer
from tests.test_answer_rendering import _source as _corpus_source

GOLDEN = Path(__file__).parent / "golden_render"
REGOLD = os.environ.get("CODEASK_REGOLD_RENDER") == "1"
QUESTION_ID = "q1"


def _cases() -> dict[str, Answer]:
    closest = [_corpus_source(1), _corpus_source(2)]
    not_found = not_found_answer("where is the GPU autoscaler?", closest)
    not_found.searched = ["acme/api", "acme/web"]
    down_text = f"{LLM_DOWN_TEXT}\n{source_list(closest)}"
    down = Answer("q", down_text, closest, found=False, unavailable=True, lead=LLM_DOWN_TEXT)
    return {
        "headings-and-lists": _answer(HEADINGS_AND_LISTS),
        "fences": _answer(FENCES),
        "table": _answer(TABLE),
        "links": _answer(LINKS),
        "mixed": preview_answers()["answer"],  # every construct at once, as the preview has it
        "not-found": not_found,
        "model-down": down,
    }


CASES = _cases()


def _rendered(case: str, platform: str) -> Any:
    answer = CASES[case]
    if platform == "slack":
        return [
            {"text": m.text, "blocks": m.blocks} for m in answer_messages(answer, QUESTION_ID, WEB)
        ]
    return answer_card(answer, QUESTION_ID, web_base=WEB)


def _pretty(payload: Any) -> str:
    return json.dumps(payload, indent=2, ensure_ascii=False) + "\n"


@pytest.mark.parametrize("platform", ["slack", "teams"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_rendering_matches_its_golden_file(case: str, platform: str) -> None:
    path = GOLDEN / f"{case}.{platform}.json"
    now = _pretty(_rendered(case, platform))
    if REGOLD:
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(now, encoding="utf-8")
    assert path.exists(), f"{path.name} is missing: CODEASK_REGOLD_RENDER=1 writes it"
    kept = path.read_text(encoding="utf-8")
    if kept != now:
        diff = difflib.unified_diff(
            kept.splitlines(), now.splitlines(), f"golden/{path.name}", "rendered now", lineterm=""
        )
        pytest.fail(
            f"{platform} rendering of {case!r} changed (CODEASK_REGOLD_RENDER=1 rewrites "
            "the file once the change is intended):\n" + "\n".join(diff),
            pytrace=False,
        )


def test_every_golden_file_belongs_to_a_case() -> None:
    expected = {f"{case}.{platform}.json" for case in CASES for platform in ("slack", "teams")}
    assert {p.name for p in GOLDEN.glob("*.json")} == expected
