"""Buttons on answers, attacked: a click is authorized again for the clicker where it lands.

A signed ``block_actions`` payload can name any answer id (ids leak in failure messages
and logs). These tests forge such clicks over HTTP against the real server and check
that nothing of another user's answer reaches the clicker, and that a click served by a
second ``codeask serve`` process on the same database works.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote_plus

import aiohttp
import pytest

from bot.chat.feedback import feedback_for
from bot.slack.app import NOT_HERE_TEXT
from bot.slack.render import ACTION_HELPFUL, ACTION_PRIVATE, ACTION_RETRY, ACTION_SOURCES
from tests import slack_world
from tests.fake_llm import Reply
from tests.fake_slack import Call
from tests.slack_world import (
    PRIVATE_PATH,
    PRIVATE_REPO,
    PRIVATE_SYMBOL,
    SIGNING_SECRET,
    World,
    block_action,
    direct_message,
    mention,
    sign,
)
from tests.test_slack_app import PRIVATE_QUESTION, _final, _question_id, _text

indexed = slack_world.indexed_fixture
world = slack_world.world_fixture
SECRETS = (PRIVATE_REPO, PRIVATE_PATH, PRIVATE_SYMBOL, "re-wrap every data key")


async def _alice_dm_answer(world: World) -> str:
    world.llm.script(Reply("The master key is rotated by re-wrapping data keys [1]."))
    await world.post_event(direct_message(PRIVATE_QUESTION, "1700.100100"), "EvDM1")
    final = await world.slack.wait_for(_final)
    assert PRIVATE_PATH in _text(final)
    return _question_id(final)


async def _replies_to(world: World, user: str, since: int) -> list[Call]:
    """The ephemeral replies ``user`` got after call number ``since``, once one arrives."""
    await world.slack.wait_for(
        lambda c: (
            c.method == "chat.postEphemeral"
            and c.args.get("user") == user
            and world.slack.calls.index(c) >= since
        )
    )
    await asyncio.sleep(0.3)  # anything else the click would send
    return [c for c in world.slack.calls[since:] if c.args.get("user") == user]


@pytest.mark.parametrize(
    ("user", "channel"),
    [
        ("U0BOB", "C0GENERAL"),  # another user, in a public channel
        ("U0BOB", "D0BOB"),  # another user, in his own DM
        ("U0ALICE", "C0GENERAL"),  # the asker herself, but in a channel
    ],
)
async def test_forged_show_sources_click_shows_nothing_of_a_dm_answer(
    world: World, user: str, channel: str
) -> None:
    qid = await _alice_dm_answer(world)
    since = len(world.slack.calls)
    payload = block_action(ACTION_SOURCES, qid, "1700.100101", user=user, channel=channel)
    assert await world.post_action(payload) == 200
    replies = await _replies_to(world, user, since)
    assert [c.args["text"] for c in replies] == [NOT_HERE_TEXT]
    sent = "\n".join(c.raw for c in world.slack.calls[since:])
    for secret in SECRETS:
        assert secret not in sent


async def test_the_asker_sees_her_dm_sources_in_her_dm(world: World) -> None:
    qid = await _alice_dm_answer(world)
    since = len(world.slack.calls)
    payload = block_action(ACTION_SOURCES, qid, "1700.100102", channel="D0ALICE")
    assert await world.post_action(payload) == 200
    [details] = await _replies_to(world, "U0ALICE", since)
    assert "Sources" in details.args["text"] and "re-wrap every data key" in _text(details)


async def test_sources_are_refused_once_the_clicker_lost_access(world: World) -> None:
    qid = await _alice_dm_answer(world)
    world.github.roles[(PRIVATE_REPO, "alice")] = "none"
    world.services.acl_store.invalidate_all()  # as the member webhook would
    since = len(world.slack.calls)
    payload = block_action(ACTION_SOURCES, qid, "1700.100103", channel="D0ALICE")
    assert await world.post_action(payload) == 200
    replies = await _replies_to(world, "U0ALICE", since)
    assert [c.args["text"] for c in replies] == [NOT_HERE_TEXT]


async def test_channel_answer_sources_are_shown_to_others_in_that_channel_only(
    world: World,
) -> None:
    await world.post_event(mention("how does retry with backoff work?", "1700.100200"), "EvC1")
    qid = _question_id(await world.slack.wait_for(_final))
    since = len(world.slack.calls)
    here = block_action(ACTION_SOURCES, qid, "1700.100201", user="U0BOB")
    assert await world.post_action(here) == 200
    [details] = await _replies_to(world, "U0BOB", since)
    assert "def retry_with_backoff" in _text(details)

    since = len(world.slack.calls)
    elsewhere = block_action(ACTION_SOURCES, qid, "1700.100202", user="U0BOB", channel="C0OTHER")
    assert await world.post_action(elsewhere) == 200
    replies = await _replies_to(world, "U0BOB", since)
    assert [c.args["text"] for c in replies] == [NOT_HERE_TEXT]


async def test_forged_answer_me_in_a_dm_never_returns_another_users_question(
    world: World,
) -> None:
    qid = await _alice_dm_answer(world)
    asked = len(world.llm.requests)
    since = len(world.slack.calls)
    payload = block_action(ACTION_PRIVATE, qid, "1700.100300", user="U0BOB")
    assert await world.post_action(payload) == 200
    replies = await _replies_to(world, "U0BOB", since)
    assert [c.args["text"] for c in replies] == [NOT_HERE_TEXT]
    sent = "\n".join(c.raw for c in world.slack.calls[since:])
    assert "master encryption key" not in sent and PRIVATE_PATH not in sent
    assert len(world.llm.requests) == asked  # the question was not asked again for Bob


async def test_forged_feedback_is_not_recorded(world: World) -> None:
    qid = await _alice_dm_answer(world)
    since = len(world.slack.calls)
    payload = block_action(ACTION_HELPFUL, qid, "1700.100400", user="U0BOB")
    assert await world.post_action(payload) == 200
    replies = await _replies_to(world, "U0BOB", since)
    assert [c.args["text"] for c in replies] == [NOT_HERE_TEXT]
    assert feedback_for(world.services.engine, qid) == []


# --- Retry ------------------------------------------------------------------------------


async def _alice_dm_answer_with_the_model_down(world: World) -> str:
    world.llm.script(Reply(status=500))
    await world.post_event(direct_message(PRIVATE_QUESTION, "1700.100500"), "EvDM5")
    final = await world.slack.wait_for(_final)
    assert "language model is unavailable" in _text(final) and PRIVATE_PATH in _text(final)
    return _question_id(final)


async def test_retry_asks_the_askers_question_again_in_her_dm(world: World) -> None:
    qid = await _alice_dm_answer_with_the_model_down(world)
    world.llm.script(Reply("The master key is rotated by re-wrapping data keys [1]."))
    since = len(world.slack.calls)
    payload = block_action(ACTION_RETRY, qid, "1700.100501", channel="D0ALICE")
    del payload["message"]["thread_ts"]  # a top-level DM answer
    assert await world.post_action(payload) == 200
    again = await world.slack.wait_for(
        lambda c: _final(c) and world.slack.calls.index(c) >= since and _question_id(c) != qid
    )
    assert again.args["channel"] == "D0ALICE"
    assert "re-wrapping data keys" in _text(again) and PRIVATE_PATH in _text(again)
    assert PRIVATE_QUESTION in json.dumps(world.llm.requests[0])
    audit = world.services.acl_store.audit_entries(limit=1)[0]
    assert audit.user_id == "T1:U0ALICE" and audit.place == "dm"


@pytest.mark.parametrize(
    ("user", "channel"),
    [
        ("U0BOB", "C0GENERAL"),  # another user, in a public channel
        ("U0BOB", "D0BOB"),  # another user, in his own DM
        ("U0ALICE", "C0GENERAL"),  # the asker herself, but in a channel
    ],
)
async def test_forged_retry_of_a_dm_answer_asks_nothing_and_shows_nothing(
    world: World, user: str, channel: str
) -> None:
    qid = await _alice_dm_answer_with_the_model_down(world)
    asked = len(world.llm.requests)
    since = len(world.slack.calls)
    payload = block_action(ACTION_RETRY, qid, "1700.100502", user=user, channel=channel)
    assert await world.post_action(payload) == 200
    replies = await _replies_to(world, user, since)
    assert [c.args["text"] for c in replies] == [NOT_HERE_TEXT]
    sent = "\n".join(c.raw for c in world.slack.calls[since:])
    for secret in (*SECRETS, "master encryption key"):
        assert secret not in sent
    assert len(world.llm.requests) == asked  # the question was not asked again


async def test_retry_in_a_channel_answers_the_clicker_with_the_channels_access(
    world: World,
) -> None:
    world.llm.script(Reply(status=500))
    await world.post_event(mention(PRIVATE_QUESTION, "1700.100600"), "EvC6")
    final = await world.slack.wait_for(_final)
    qid = _question_id(final)
    world.llm.script(Reply("Keys are not in the shared code [1]."))
    since = len(world.slack.calls)
    payload = block_action(ACTION_RETRY, qid, "1700.100601", user="U0BOB")
    payload["message"]["thread_ts"] = "1700.100600"
    assert await world.post_action(payload) == 200
    again = await world.slack.wait_for(
        lambda c: _final(c) and world.slack.calls.index(c) >= since and _question_id(c) != qid
    )
    assert "not in the shared code" in _text(again)
    placeholder = next(c for c in world.slack.calls[since:] if c.method == "chat.postMessage")
    assert placeholder.args["channel"] == "C0GENERAL"
    assert placeholder.args["thread_ts"] == "1700.100600"  # in the answer's thread
    audit = world.services.acl_store.audit_entries(limit=1)[0]
    assert audit.user_id == "T1:U0BOB" and audit.place == "channel:C0GENERAL"
    assert PRIVATE_REPO not in audit.allowed_repos
    for secret in SECRETS:
        assert secret not in world.slack.bodies()
    assert all(PRIVATE_SYMBOL not in json.dumps(r) for r in world.llm.requests)


async def test_retry_of_a_follow_up_keeps_the_threads_earlier_turns(world: World) -> None:
    root, follow_up = "1700.100800", "1700.100802"
    world.slack.threads[("C0GENERAL", root)] = [
        {
            "type": "message",
            "user": "U0ALICE",
            "text": "<@UBOT> where is the backoff helper?",
            "ts": root,
        },
        {
            "type": "message",
            "user": "UBOT",
            "bot_id": "BBOT",
            "text": "In net/retry.py [1].",
            "ts": "1700.100801",
        },
        {
            "type": "message",
            "user": "U0ALICE",
            "text": "<@UBOT> how many attempts?",
            "ts": follow_up,
        },
    ]
    world.llm.script(Reply(status=500))
    await world.post_event(mention("how many attempts?", follow_up, thread_ts=root), "EvC8")
    final = await world.slack.wait_for(_final)
    qid = _question_id(final)
    world.llm.script(Reply("Five attempts [1]."))
    payload = block_action(ACTION_RETRY, qid, "1700.100803", user="U0BOB")
    payload["message"]["thread_ts"] = root
    assert await world.post_action(payload) == 200
    await world.slack.wait_for(lambda c: _final(c) and _question_id(c) != qid)
    sent = json.dumps(world.llm.requests[0]["messages"])
    assert "where is the backoff helper?" in sent and "In net/retry.py [1]." in sent
    assert "how many attempts?" in sent


async def test_retry_of_a_slash_ask_answer_replies_privately(world: World) -> None:
    world.llm.script(Reply(status=500))
    await world.post_command("ask how does retry with backoff work?")
    final = await world.slack.wait_for(_final)
    qid = _question_id(final)
    world.llm.script(Reply("Backoff doubles the wait each attempt [1]."))
    since = len(world.slack.calls)
    payload = block_action(ACTION_RETRY, qid, "1700.100701")
    payload["container"]["is_ephemeral"] = True
    payload["response_url"] = world.slack.response_url("retry")
    del payload["message"]
    assert await world.post_action(payload) == 200
    again = await world.slack.wait_for(lambda c: _final(c) and world.slack.calls.index(c) >= since)
    assert again.method == "response_url" and again.args["response_type"] == "ephemeral"
    assert "Backoff doubles" in _text(again)
    assert not [c for c in world.slack.calls[since:] if c.method == "chat.postMessage"]


# --- a second replica ------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(name="replica")
def replica_fixture(world: World, tmp_path: Path) -> Iterator[str]:
    """A second ``codeask serve`` process on the same database and index."""
    port = _free_port()
    services = world.services
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "CODEASK_HOST": "127.0.0.1",
        "CODEASK_PORT": str(port),
        "CODEASK_DATA_DIR": str(services.indexer.data_dir),
        "CODEASK_DATABASE_URL": services.indexer.database_url,
        "CODEASK_GITHUB_API_URL": services.acl.github_api_url,
        "CODEASK_GITHUB_TOKEN": services.acl.github_token or "",
        "CODEASK_SLACK_BOT_TOKEN": services.bot.slack_bot_token or "",
        "CODEASK_SLACK_SIGNING_SECRET": SIGNING_SECRET,
        "CODEASK_SLACK_API_URL": services.bot.slack_api_url,
        "CODEASK_RECONCILE_SECONDS": "0",
    }
    log = (tmp_path / "replica.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "bot.cli", "serve"],  # this tree's code, as installed or not
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


async def _wait_healthy(url: str) -> None:
    async with aiohttp.ClientSession() as http:
        for _ in range(600):
            try:
                async with http.get(f"{url}/healthz") as response:
                    if response.status == 200:
                        return
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.1)
    raise AssertionError("the second serve process did not start")


async def test_a_click_on_the_replica_that_did_not_answer_is_served_from_the_database(
    world: World, replica: str
) -> None:
    qid = await _alice_dm_answer(world)
    await _wait_healthy(replica)
    for user, channel, expect_sources in (
        ("U0ALICE", "D0ALICE", True),
        ("U0BOB", "C0GENERAL", False),
    ):
        since = len(world.slack.calls)
        body = "payload=" + quote_plus(
            json.dumps(block_action(ACTION_SOURCES, qid, "1.2", user, channel))
        )
        headers = {"Content-Type": "application/x-www-form-urlencoded", **sign(body)}
        async with (
            aiohttp.ClientSession() as http,
            http.post(f"{replica}/slack/events", data=body, headers=headers) as response,
        ):
            assert response.status == 200
        [reply] = await _replies_to(world, user, since)
        if expect_sources:
            assert "re-wrap every data key" in _text(reply)
        else:
            assert reply.args["text"] == NOT_HERE_TEXT
