"""`make preview` keeps working: its pages embed what the real renderers build (no Chromium)."""

from __future__ import annotations

import json
import re
import struct
import zlib
from pathlib import Path
from typing import Any

from bot.chat.commands import help_result
from bot.chat.markdown import parse
from bot.slack.app import COMMAND
from bot.slack.home import home_view
from bot.slack.render import answer_messages, help_message
from bot.teams.render import answer_card, help_card
from scripts.preview.png import crop_top, png_size
from scripts.preview.preview import HERE, main
from scripts.preview.views import ANSWER_TEXT, QUESTION_ID, WEB, answers, home_data
from tests.test_answer_rendering import _assert_valid_card

VIEWS = {
    f"{platform}-{name}"
    for platform in ("slack", "teams")
    for name in ("answer", "not-found", "model-down", "help-user", "help-admin")
} | {"slack-home", "teams-welcome"}


def _embedded(page: Path) -> dict[str, Any]:
    text = page.read_text(encoding="utf-8")
    found = re.search(r'<script type="application/json" id="view">(.*?)</script>', text, re.S)
    assert found, page.name
    return json.loads(found.group(1))


def _pages(tmp_path: Path) -> dict[str, dict[str, Any]]:
    assert main(["--html-only", "--pages", str(tmp_path)]) == 0
    return {p.stem: _embedded(p) for p in tmp_path.glob("*.html")}


def test_preview_writes_a_page_for_every_view(tmp_path: Path) -> None:
    assert set(_pages(tmp_path)) == VIEWS


def test_preview_pages_embed_the_renderers_own_json(tmp_path: Path) -> None:
    pages = _pages(tmp_path)
    built = answers()
    for key, answer in built.items():
        slack = [
            {"text": m.text, "blocks": m.blocks} for m in answer_messages(answer, QUESTION_ID, WEB)
        ]
        assert pages[f"slack-{key}"]["payload"] == slack
        assert pages[f"teams-{key}"]["payload"] == answer_card(answer, QUESTION_ID, web_base=WEB)
    admin_help = help_message(help_result(admin=True).rows, COMMAND)
    assert pages["slack-help-admin"]["payload"] == [
        {"text": admin_help.text, "blocks": admin_help.blocks}
    ]
    assert pages["teams-help-user"]["payload"] == help_card(help_result(admin=False).rows)
    assert pages["slack-home"]["payload"] == home_view(home_data())


def test_preview_answer_uses_every_construct_a_model_writes() -> None:
    kinds = {node.kind for node in parse(ANSWER_TEXT)}
    assert {"heading", "paragraph", "list", "code", "table"} <= kinds
    for written in ("```python", "```go", "  - ", "**`send()`**", "[1]", "[2]", "](https://"):
        assert written in ANSWER_TEXT


def test_preview_cards_are_valid_adaptive_cards(tmp_path: Path) -> None:
    for name, page in _pages(tmp_path).items():
        if name.startswith("teams-"):
            _assert_valid_card(page["payload"])


def test_preview_pages_cannot_be_closed_by_the_json_they_embed(tmp_path: Path) -> None:
    _pages(tmp_path)
    for page in tmp_path.glob("*.html"):
        body = page.read_text(encoding="utf-8")
        start = body.index('id="view">')
        assert "<" not in body[start + 10 : body.index("</script>", start)]


def test_preview_pins_the_card_renderer_it_loads() -> None:
    wanted = json.loads((HERE / "package.json").read_text())["dependencies"]
    locked = json.loads((HERE / "package-lock.json").read_text())["packages"]
    for name, version in wanted.items():
        assert locked[f"node_modules/{name}"]["version"] == version


def _png(width: int, rows: list[bytes]) -> bytes:
    def chunk(kind: bytes, body: bytes) -> bytes:
        return (
            struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
        )

    header = struct.pack(">IIBBBBB", width, len(rows), 8, 2, 0, 0, 0)
    pixels = b"".join(b"\x02" + r for r in rows)  # filter "Up": each row depends on the last
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(pixels))
        + chunk(b"IEND", b"")
    )


def test_crop_keeps_the_top_rows_exactly() -> None:
    rows = [bytes([i, 2 * i, 3 * i]) * 2 for i in range(5)]
    cut = crop_top(_png(2, rows), 3)
    assert png_size(cut) == (2, 3)
    idat = cut[cut.index(b"IDAT") + 4 : cut.index(b"IEND") - 8]
    assert zlib.decompress(idat) == b"".join(b"\x02" + r for r in rows[:3])
    assert crop_top(_png(2, rows), 9) == _png(2, rows)
