"""Block Kit rendering: mrkdwn conversion, citation links, limits (pure functions)."""

from __future__ import annotations

import json
import re
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from acl.permissions import REASON_CHANNEL
from bot.answer import NOT_FOUND_TEXT, Answer, Source
from bot.answer.asking import LLM_DOWN_TEXT
from bot.answer.result import not_found_answer, source_list
from bot.slack.home import HomeData, RepoFreshness, dm_url, home_view
from bot.slack.private import withheld_message
from bot.slack.render import (
    ACTION_HELPFUL,
    ACTION_OPEN_SOURCE,
    ACTION_PRIVATE,
    ACTION_RETRY,
    ACTION_SOURCES,
    ACTION_WRONG,
    MAX_BLOCKS,
    MAX_SECTION_CHARS,
    SEARCHING_TEXT,
    SlackMessage,
    answer_messages,
    escape,
    link,
    markdown_to_mrkdwn,
    progress_message,
    source_details,
    split_mrkdwn,
    text_message,
)
from bot.slack.threads import strip_mentions, turns_from_messages
from indexer.models import Chunk

WEB = "https://github.com"
COMMIT = "a" * 40


def _source(
    n: int, repo: str = "acme/api", path: str = "src/retry.py", symbol: str = "retry"
) -> Source:
    chunk = Chunk(
        repo=repo,
        path=path,
        start_line=10 * n,
        end_line=10 * n + 4,
        text="def retry(x):\n    if x < 1 and x > 0:\n        return x & 1",
        symbol=symbol,
        language="python",
        kind="source",
        commit=COMMIT,
        visibility="public",
    )
    return Source(n, chunk, 1.0)


# --- mrkdwn conversion ---------------------------------------------------------------


def test_bold_italic_strike_become_mrkdwn() -> None:
    assert markdown_to_mrkdwn("**bold** and __also__") == "*bold* and *also*"
    assert markdown_to_mrkdwn("an *italic* word") == "an _italic_ word"
    assert markdown_to_mrkdwn("~~gone~~") == "~gone~"
    assert markdown_to_mrkdwn("**bold with *italic* inside**") == "*bold with _italic_ inside*"


def test_multiplication_is_not_italic() -> None:
    assert markdown_to_mrkdwn("a * b * c") == "a * b * c"
    assert markdown_to_mrkdwn("2*3*4") == "2*3*4"


def test_control_characters_are_escaped_everywhere() -> None:
    assert markdown_to_mrkdwn("a < b && c > d") == "a &lt; b &amp;&amp; c &gt; d"
    assert markdown_to_mrkdwn("<!channel> hi") == "&lt;!channel&gt; hi"
    assert markdown_to_mrkdwn("`x<y>`") == "`x&lt;y&gt;`"


def test_links_use_slack_syntax_and_cannot_break_out() -> None:
    assert markdown_to_mrkdwn("[docs](https://x.io/a_b)") == "<https://x.io/a_b|docs>"
    assert markdown_to_mrkdwn("<https://x.io>") == "<https://x.io|https://x.io>"
    # a label with "|" or ">" cannot end the link early
    assert markdown_to_mrkdwn("[a|b>c](https://x.io)") == "<https://x.io|a¦b&gt;c>"
    # only web links become links; any other is shown inert
    assert markdown_to_mrkdwn("[x](javascript:alert(1))") == "x (`javascript:alert(1)`)"
    assert link("src/a.py#L1-L2", "a.py") == "a.py"
    # Text the model wrote (or indexed code it quoted) cannot smuggle a control sequence
    # such as <!here> or <@U123> into a link's URL.
    for text in (
        "[docs](https://a.com/<!here)",
        "<https://a.com/<!channel>",
        "[x](https://a.com/<@U1)",
    ):
        out = markdown_to_mrkdwn(text)
        assert "<!" not in out and "<@" not in out, out
    assert link("https://a.com/a b<c", "x") == "<https://a.com/a%20b%3Cc|x>"


def test_underscores_in_urls_are_not_italics() -> None:
    out = markdown_to_mrkdwn("see [my_file](https://x.io/my_file_name) and _this_")
    assert out == "see <https://x.io/my_file_name|my_file> and _this_"


def test_citation_markers_link_to_their_source() -> None:
    links = {1: "https://gh/1", 2: "https://gh/2"}
    assert markdown_to_mrkdwn("Retries [1].", links) == "Retries <https://gh/1|[1]>."
    assert markdown_to_mrkdwn("Both [1, 2].", links) == "Both <https://gh/1|[1]><https://gh/2|[2]>."
    assert markdown_to_mrkdwn("Unknown [7].", links) == "Unknown [7]."
    assert markdown_to_mrkdwn("Local [1].", {1: "src/a.py#L1-L2"}) == "Local [1]."


def test_code_fences_keep_content_and_drop_the_language() -> None:
    md = "Look:\n```python\nif a < b and a[1]:\n    **x**\n```\nDone [1]."
    out = markdown_to_mrkdwn(md, {1: "https://gh/1"})
    assert out == "Look:\n```\nif a &lt; b and a[1]:\n    **x**\n```\nDone <https://gh/1|[1]>."


def test_unclosed_fence_is_code_to_the_end() -> None:
    assert markdown_to_mrkdwn("x\n```\n*a* [1]", {1: "https://gh/1"}) == "x\n```\n*a* [1]\n```"


def test_inline_code_is_not_formatted() -> None:
    assert markdown_to_mrkdwn("call `a[1]*b*` now") == "call `a[1]*b*` now"


def test_headings_bullets_and_quotes() -> None:
    md = "## Setup **now**\n- first\n* second\n  + nested\n> quoted <x>"
    assert markdown_to_mrkdwn(md) == (
        "*Setup now*\n• first\n• second\n    ◦ nested\n>quoted &lt;x&gt;"
    )


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from([*"ab <>&*_`[]()|~#-\n1:/.!@", "https://", "http://"]), max_size=80
    ).map("".join)
)
def test_no_raw_control_character_survives(text: str) -> None:
    out = markdown_to_mrkdwn(text, {1: "https://gh/1"})
    # Outside the links we generate, "<" and ">" only appear escaped (quotes excepted).
    stripped = re.sub(r"<https://gh/1\|\[1\]>", "", out)
    # Links the text itself made: their URL part may hold no "<" or whitespace.
    for url in re.findall(r"<(https?://[^|>]*)\|", stripped):
        assert "<" not in url and not re.search(r"\s", url), out
    stripped = re.sub(r"<https?://[^|<>\s]*\|[^<>]*>", "", stripped)
    stripped = re.sub(r"^>", "", stripped, flags=re.MULTILINE)
    assert "<" not in stripped and ">" not in stripped
    assert not re.search(r"&(?!amp;|lt;|gt;)", stripped)


# --- splitting -------------------------------------------------------------------------


@settings(max_examples=100, deadline=None)
@given(st.lists(st.text(alphabet="ab &<>\n`", max_size=400), max_size=30), st.integers(60, 500))
def test_split_respects_the_limit_and_keeps_all_text(parts: list[str], limit: int) -> None:
    text = escape("\n".join(parts))
    pieces = split_mrkdwn(text, limit)
    assert all(len(p) <= limit for p in pieces)
    assert re.sub(r"\s|`", "", "".join(pieces)) == re.sub(r"\s|`", "", text)


def test_split_closes_and_reopens_code_blocks() -> None:
    code = "```\n" + "\n".join(f"line {i}" for i in range(400)) + "\n```"
    pieces = split_mrkdwn(code, 500)
    assert len(pieces) > 1
    for piece in pieces:
        assert piece.startswith("```") and piece.endswith("```")
        assert piece.count("```") % 2 == 0


def test_split_never_cuts_an_escape_or_a_link() -> None:
    text = ("&amp;" * 50) + " " + ("<https://x.io/" + "a" * 30 + "|x>") * 20
    for piece in split_mrkdwn(text, 100):
        assert not re.search(r"&(?!amp;|lt;|gt;)", piece)
        assert piece.count("<") == piece.count(">")


# --- answer messages -------------------------------------------------------------------


def _assert_block_kit(message: SlackMessage) -> None:
    """Slack's documented Block Kit limits for one message."""
    blocks = message.blocks
    assert 1 <= len(blocks) <= MAX_BLOCKS and len(message.text) <= 3001
    block_ids = [b["block_id"] for b in blocks if "block_id" in b]
    assert len(block_ids) == len(set(block_ids)) and all(len(i) <= 255 for i in block_ids)
    buttons: list[dict[str, Any]] = []
    for b in blocks:
        assert b["type"] in {"section", "context", "actions"}, b
        if b["type"] == "section":
            assert 1 <= len(b["text"]["text"]) <= MAX_SECTION_CHARS
            buttons += [b["accessory"]] if "accessory" in b else []
        elif b["type"] == "context":
            assert 1 <= len(b["elements"]) <= 10
            assert all(1 <= len(e["text"]) <= MAX_SECTION_CHARS for e in b["elements"])
        else:
            assert 1 <= len(b["elements"]) <= 25
            buttons += b["elements"]
    for button in buttons:
        assert button["type"] == "button" and len(button["text"]["text"]) <= 75
        assert len(str(button["action_id"])) <= 255 and len(str(button.get("value", ""))) <= 2000
        assert len(str(button.get("url", ""))) <= 3000
    action_ids = [b["action_id"] for b in buttons]
    assert len(action_ids) == len(set(action_ids))


def _action_ids(message: SlackMessage) -> list[str]:
    return [e["action_id"] for b in message.blocks if b["type"] == "actions" for e in b["elements"]]


def _long_source(n: int, lines: int, start: int = 100) -> Source:
    text = "\n".join(f"line_{i} = {i}  # see https://evil.example/x?d={i}" for i in range(lines))
    chunk = Chunk(
        repo="acme/api",
        path=f"src/mod{n}.py",
        start_line=start,
        end_line=start + lines - 1,
        text=text,
        symbol=f"mod{n}",
        language="python",
        kind="source",
        commit=COMMIT,
        visibility="public",
    )
    return Source(n, chunk, 1.0)


def test_answer_message_has_text_sources_and_buttons() -> None:
    answer = Answer("q", "It **retries** [1].", [_source(1)], used_llm=True)
    [message] = answer_messages(answer, "q123", WEB)
    blocks = message.blocks
    assert blocks[0]["type"] == "section"
    pinned = f"{WEB}/acme/api/blob/{COMMIT}/src/retry.py#L10-L14"
    assert blocks[0]["text"]["text"] == f"It *retries* <{pinned}|[1]>."
    [row] = [b for b in blocks if b["type"] == "section" and b["text"]["text"].startswith("*[1]*")]
    assert row["text"] == {
        "type": "mrkdwn",
        "text": f"*[1]* <{pinned}|src/retry.py:10-14> · `retry` · acme/api",
        "verbatim": True,
    }
    actions = blocks[-1]
    assert actions["block_id"] == "codeask_answer:q123"
    assert [e["action_id"] for e in actions["elements"]] == [
        ACTION_HELPFUL,
        ACTION_WRONG,
        ACTION_SOURCES,
    ]
    assert {e["value"] for e in actions["elements"]} == {"q123"}
    assert message.text.startswith("It *retries*")


def test_the_public_answer_never_says_that_more_was_withheld() -> None:
    answer = Answer(
        "q", "Public only [1].", [_source(1)], withheld_private=True, asker_note=REASON_CHANNEL
    )
    [message] = answer_messages(answer, "q9", WEB)
    dumped = json.dumps(message.blocks)
    assert "direct message" not in dumped and "searched" not in dumped
    assert ACTION_PRIVATE not in dumped and "codeask_private" not in dumped


def test_the_askers_note_offers_a_dm_without_naming_anything() -> None:
    note = withheld_message(REASON_CHANNEL, "q9", offer_dm=True)
    assert "direct message" in json.dumps(note.blocks)
    offer = next(b for b in note.blocks if b.get("block_id") == "codeask_private:q9")
    assert (
        offer["elements"][0]["action_id"] == ACTION_PRIVATE
        and offer["elements"][0]["value"] == "q9"
    )
    bare = withheld_message(REASON_CHANNEL, "q9", offer_dm=False)
    assert [b["type"] for b in bare.blocks] == ["context"]


def test_answer_without_sources_has_no_show_sources_button() -> None:
    [message] = answer_messages(Answer("q", "It is set in the CI settings.", []), "q1", WEB)
    assert [e["action_id"] for e in message.blocks[-1]["elements"]] == [
        ACTION_HELPFUL,
        ACTION_WRONG,
    ]


def test_long_answers_split_within_slack_limits() -> None:
    paragraph = "word " * 500 + "[1]\n"
    answer = Answer("q", paragraph * 120, [_source(1)])
    messages = answer_messages(answer, "q2", WEB)
    assert len(messages) > 1
    for m in messages:
        assert len(m.blocks) <= MAX_BLOCKS
        for b in m.blocks:
            if b["type"] == "section":
                assert len(b["text"]["text"]) <= MAX_SECTION_CHARS
        assert len(m.text) <= 3001
    # sources and buttons close the last message only
    assert messages[-1].blocks[-1]["block_id"] == "codeask_answer:q2"
    assert all(b["type"] == "section" for m in messages[:-1] for b in m.blocks)


def test_many_cited_sources_show_ten_rows_and_count_the_rest() -> None:
    sources = [_source(n) for n in range(1, 15)]
    text = " ".join(f"[{n}]" for n in range(1, 15))
    [message] = answer_messages(Answer("q", text, sources), "q3", WEB)
    _assert_block_kit(message)
    rows = "\n".join(b["text"]["text"] for b in message.blocks[1:] if b["type"] == "section").split(
        "\n"
    )
    assert [r.split("*")[1] for r in rows[:10]] == [f"[{n}]" for n in range(1, 11)]
    assert rows[10:] == ["…and 4 more under *Show sources*"]


def test_local_sources_are_not_links() -> None:
    local = Source(1, Chunk("local/x", "a.py", 1, 2, "x", "f", "python", "source"), 1.0)
    [message] = answer_messages(Answer("q", "See [1].", [local]), "q4", WEB)
    assert message.blocks[0]["text"]["text"] == "See [1]."


def test_progress_placeholder_and_partial_text() -> None:
    assert SEARCHING_TEXT in progress_message().text
    partial = progress_message("Code:\n```\nx = 1")
    assert partial.blocks[0]["text"]["text"] == "Code:\n```\nx = 1\n```"
    long = progress_message("y" * 10_000)
    assert len(long.blocks[0]["text"]["text"]) <= MAX_SECTION_CHARS


def test_source_details_show_escaped_code() -> None:
    details = source_details([_source(1)], WEB)
    code = details.blocks[1]["text"]["text"]
    assert code.startswith("```\n") and "x &lt; 1 and x &gt; 0" in code and "x &amp; 1" in code


def test_text_message_for_commands() -> None:
    assert (
        text_message("Use `repo add owner/name`.").blocks[0]["text"]["text"]
        == "Use `repo add owner/name`."
    )
    assert text_message("a <b>", code=True).blocks[0]["text"]["text"] == "```\na &lt;b&gt;\n```"


# --- thread history and App Home -------------------------------------------------------


def test_thread_turns_pair_questions_with_bot_answers() -> None:
    messages = [
        {"user": "U1", "text": "<@UBOT> where is retry?", "ts": "1.0"},
        {"user": "UBOT", "bot_id": "B1", "text": "In retry.py [1].", "ts": "2.0"},
        {"user": "U1", "text": "<@UBOT> and the backoff?", "ts": "3.0"},
        {"user": "UBOT", "bot_id": "B1", "text": SEARCHING_TEXT, "ts": "4.0"},
        {"user": "U2", "text": "now this", "ts": "5.0"},
    ]
    assert turns_from_messages(messages, "UBOT", "5.0") == (
        ("where is retry?", "In retry.py [1]."),
    )
    assert turns_from_messages(messages, "UBOT", "1.0") == ()


def test_questions_reach_search_and_the_model_as_the_user_typed_them() -> None:
    # What Slack delivers for: @codeask why does Result<T, E> && retries in #payments
    # ignore https://x.io/a?b=1&c=2 (see docs)? cc @here
    delivered = (
        "<@UBOT> why does Result&lt;T, E&gt; &amp;&amp; retries in <#C123|payments> ignore "
        "<https://x.io/a?b=1&amp;c=2> (see <https://x.io/docs|docs>)? cc <!here>"
    )
    assert strip_mentions(delivered) == (
        "why does Result<T, E> && retries in #payments ignore https://x.io/a?b=1&c=2 (see docs)? cc"
    )


def test_home_view_for_users_and_admins() -> None:
    repos = [RepoFreshness("acme/api", "private", "abc123", "3 min ago", "2 commits behind")]
    user = json.dumps(home_view(HomeData("alice", repos)))
    assert "@alice" in user and "acme/api" in user and "2 commits behind" in user
    assert "Index status" not in user
    admin = home_view(
        HomeData(
            None,
            [],
            admin=True,
            index_status=["acme/api: error"],
            failures=["acme/api: clone failed <x>"],
        )
    )
    dumped = json.dumps(admin)
    assert (
        "not linked" in dumped and "Index status" in dumped and "clone failed &lt;x&gt;" in dumped
    )
    assert admin["type"] == "home" and len(admin["blocks"]) <= 100


# --- sources under an answer and behind "Show sources" -----------------------------------


def test_only_cited_sources_are_rows_and_the_rest_wait_behind_show_sources() -> None:
    sources = [_source(n, path=f"src/file{n}.py") for n in range(1, 7)]
    answer = Answer("q", "Retries [1], then backs off [3].", sources, used_llm=True)
    [message] = answer_messages(answer, "q5", WEB)
    _assert_block_kit(message)
    shown = json.dumps(message.blocks)
    assert "src/file1.py:10-14" in shown and "src/file3.py:30-34" in shown
    for n in (2, 4, 5, 6):
        assert f"src/file{n}.py" not in shown
    rows = [b for b in message.blocks if b["type"] == "section" and "*[" in b["text"]["text"]]
    assert [r["text"]["text"].split("\n") for r in rows] == [
        [
            f"*[1]* <{WEB}/acme/api/blob/{COMMIT}/src/file1.py#L10-L14|src/file1.py:10-14>"
            " · `retry` · acme/api",
            f"*[3]* <{WEB}/acme/api/blob/{COMMIT}/src/file3.py#L30-L34|src/file3.py:30-34>"
            " · `retry` · acme/api",
        ]
    ]
    assert ACTION_SOURCES in _action_ids(message)
    behind = json.dumps(source_details(sources, WEB).blocks)
    assert all(f"src/file{n}.py" in behind for n in range(1, 7))


def test_an_answer_citing_nothing_lists_every_source() -> None:
    sources = [_source(n, path=f"src/file{n}.py") for n in range(1, 4)]
    [message] = answer_messages(Answer("q", "Check the retry code.", sources), "q6", WEB)
    shown = json.dumps(message.blocks)
    assert all(f"src/file{n}.py" in shown for n in range(1, 4))


def test_sources_view_shows_the_cited_lines_numbered_with_a_github_button() -> None:
    long, short = _long_source(1, 30), _long_source(2, 3, start=7)
    local = Source(3, Chunk("local/x", "a.py", 1, 2, "a = 1\nb = 2", "a", "python", "source"), 1.0)
    details = source_details([long, short, local], WEB)
    _assert_block_kit(details)
    row, code = details.blocks[0], details.blocks[1]["text"]["text"]
    pinned = f"{WEB}/acme/api/blob/{COMMIT}/src/mod1.py#L100-L129"
    assert row["accessory"]["url"] == pinned
    assert row["accessory"]["text"]["text"] == "View on GitHub"
    assert row["accessory"]["action_id"].startswith(ACTION_OPEN_SOURCE)
    lines = code.removeprefix("```\n").removesuffix("\n```").split("\n")
    assert lines[0].startswith("100  line_0 = 0") and lines[11].startswith("111  line_11 = 11")
    assert lines[12:] == ["… 18 more lines in the cited range"]
    assert "https://evil.example" not in code and "evil[.]example" in code  # indexed text
    short_code = details.blocks[3]["text"]["text"]
    assert short_code == (
        "```\n"
        "7  line_0 = 0  # see https[:]//evil[.]example/x?d=0\n"
        "8  line_1 = 1  # see https[:]//evil[.]example/x?d=1\n"
        "9  line_2 = 2  # see https[:]//evil[.]example/x?d=2\n"
        "```"
    )
    assert "accessory" not in details.blocks[4]  # a local repository has no GitHub page
    assert details.blocks[5]["text"]["text"] == "```\n1  a = 1\n2  b = 2\n```"


def test_sources_view_of_many_sources_stays_within_block_kit() -> None:
    details = source_details([_long_source(n, 40) for n in range(1, 40)], WEB)
    _assert_block_kit(details)
    assert len(details.blocks) == MAX_BLOCKS


# --- notices: not found, and a part down ----------------------------------------------


def test_not_found_is_a_warning_naming_the_searched_repos_with_its_places_once() -> None:
    closest = [_source(1, path="src/near.py"), _source(2, path="src/far.py")]
    answer = not_found_answer("where is the GPU autoscaler?", closest)
    answer.searched = ["acme/api", "acme/web"]
    [message] = answer_messages(answer, "q7", WEB)
    _assert_block_kit(message)
    first = message.blocks[0]["text"]["text"]
    assert first == f":warning: {NOT_FOUND_TEXT}\nThe closest places to look:"
    dumped = json.dumps(message.blocks)
    assert dumped.count("src/near.py:10-14") == 1 and dumped.count("src/far.py:20-24") == 1
    assert "Searched: `acme/api`, `acme/web`" in dumped
    assert _action_ids(message) == [ACTION_SOURCES]  # no feedback buttons
    assert message.blocks[-1]["block_id"] == "codeask_answer:q7"


def test_not_found_without_places_has_no_buttons_but_keeps_its_id() -> None:
    answer = not_found_answer("q", [])
    answer.searched = [f"acme/repo{n:02d}" for n in range(25)]
    [message] = answer_messages(answer, "q8", WEB)
    _assert_block_kit(message)
    assert _action_ids(message) == []
    assert message.blocks[0]["block_id"] == "codeask_answer:q8"
    searched = next(b for b in message.blocks if b["type"] == "context")["elements"][0]["text"]
    assert searched.endswith("`acme/repo09` and 15 more") and "acme/repo10" not in searched


def test_model_down_is_a_warning_with_retry_and_its_places_once() -> None:
    places = [_source(1, path="src/near.py"), _source(2, path="src/far.py")]
    text = f"{LLM_DOWN_TEXT}\n{source_list(places)}"
    answer = Answer("q", text, places, found=False, unavailable=True, lead=LLM_DOWN_TEXT)
    answer.searched = ["acme/api"]
    [message] = answer_messages(answer, "q9", WEB)
    _assert_block_kit(message)
    assert message.blocks[0]["text"]["text"] == f":warning: {LLM_DOWN_TEXT}"
    dumped = json.dumps(message.blocks)
    assert dumped.count("src/near.py:10-14") == 1 and dumped.count("src/far.py:20-24") == 1
    assert "Searched" not in dumped
    actions = next(b for b in message.blocks if b["type"] == "actions")
    retry = actions["elements"][0]
    assert (retry["action_id"], retry["value"], retry["style"]) == (ACTION_RETRY, "q9", "primary")
    assert _action_ids(message) == [ACTION_RETRY, ACTION_SOURCES]


def test_a_failure_without_places_offers_only_retry() -> None:
    answer = Answer("q", "The code search index is unavailable.", [], found=False, unavailable=True)
    [message] = answer_messages(answer, "q10", WEB)
    _assert_block_kit(message)
    assert _action_ids(message) == [ACTION_RETRY]


# --- App Home --------------------------------------------------------------------------


def test_home_escapes_the_question_placeholder() -> None:
    view = home_view(HomeData("alice", []))
    dumped = json.dumps(view)
    assert "<question>" not in dumped and "`/codeask ask &lt;question&gt;`" in dumped


def test_home_buttons_open_the_dm_and_the_github_sign_in() -> None:
    sign_in = "https://github.com/login/oauth/authorize?client_id=abc&state=s1"
    dm = dm_url("T1", "A0CODEASK")
    assert dm == "https://slack.com/app_redirect?app=A0CODEASK&team=T1"
    view = home_view(HomeData(None, [], link_url=sign_in, dm_url=dm))
    [actions] = [b for b in view["blocks"] if b["type"] == "actions"]
    buttons = {e["text"]["text"]: e for e in actions["elements"]}
    assert buttons[":speech_balloon: Ask in DM"]["url"] == dm
    assert buttons[":link: Link GitHub"]["url"] == sign_in
    assert "link confirm CODE" in json.dumps(view)
    linked = home_view(HomeData("alice", [], link_url=sign_in, dm_url=dm))
    assert "Link GitHub" not in json.dumps(linked) and dm in json.dumps(linked)
    assert not [b for b in home_view(HomeData("alice", []))["blocks"] if b["type"] == "actions"]


def test_home_shows_each_repos_commit_age_and_whether_it_is_behind() -> None:
    repos = [
        RepoFreshness("acme/api", "private", "abc1234", "3 min ago", "2 commits behind", "main"),
        RepoFreshness("acme/web", "public", "def5678", "1 d ago", "", "main", up_to_date=True),
        RepoFreshness("acme/cli", "public", "0a1b2c3", "2 h ago"),
    ]
    blocks = home_view(HomeData("alice", repos))["blocks"]
    lines = [
        line
        for b in blocks
        if b["type"] == "section"
        for line in b["text"]["text"].split("\n")
        if line.startswith("• ")
    ]
    assert lines == [
        "• *acme/api* (private) `abc1234` on `main`, indexed 3 min ago, :warning: 2 commits behind",
        "• *acme/web* (public) `def5678` on `main`, indexed 1 d ago, up to date",
        "• *acme/cli* (public) `0a1b2c3`, indexed 2 h ago",
    ]
