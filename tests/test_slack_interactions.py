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
from bot.slack.render import ACTION_HELPFUL, ACTION_PRIVATE, ACTION_SOURCES
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
