"""What Slack shows one person only: a vote as state with Undo, the ``/codeask ask`` reply
with "Share in channel", and the note that more could be answered in private. Driven
through the real app over HTTP against the local Slack, GitHub and LLM servers."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from acl.permissions import REASON_CHANNEL
from bot.answer import Answer
from bot.chat.feedback import feedback_for
from bot.slack.app import NOT_HERE_TEXT
from bot.slack.private import (
    ACTION_SHARE,
    ACTION_UNDO,
    ALREADY_SHARED_TEXT,
    QUESTION_CHARS,
    SHARED_TEXT,
    UNVOTED_TEXT,
    private_answer_messages,
    quoted,
)
from bot.slack.render import ACTION_HELPFUL, ACTION_PRIVATE, ACTION_WRONG, MAX_BLOCKS
from tests import slack_world
from tests.fake_llm import Reply
from tests.fake_slack import Call
from tests.slack_world import (
    PRIVATE_PATH,
    PRIVATE_REPO,
    PRIVATE_SYMBOL,
    World,
    block_action,
    mention,
)
from tests.test_slack_app import PRIVATE_QUESTION, _final, _question_id, _text

indexed = slack_world.indexed_fixture
world = slack_world.world_fixture
RETRY_QUESTION = "how does retry with backoff work?"
SECRETS = (PRIVATE_REPO, PRIVATE_PATH, PRIVATE_SYMBOL, "re-wrap every data key")
PUBLIC_METHODS = ("chat.postMessage", "chat.update")


def _buttons(call: Call) -> dict[str, str]:
    """action_id -> button text of every button in the message."""
    return {
        e["action_id"]: e["text"]["text"]
        for b in call.args.get("blocks") or []
        if b.get("type") == "actions"
        for e in b["elements"]
    }


def _public_since(world: World, since: int) -> list[Call]:
    return [c for c in world.slack.calls[since:] if c.method in PUBLIC_METHODS]


async def _settled(world: World, since: int, method: str) -> list[Call]:
    """The calls of ``method`` after call number ``since``, once one arrived and the click
    had time to send anything else."""
    await world.slack.wait_for(lambda c: c.method == method and world.slack.calls.index(c) >= since)
    await asyncio.sleep(0.3)
    return [c for c in world.slack.calls[since:] if c.method == method]


async def _private_reply(world: World, command: str, channel: str = "C0GENERAL") -> Call:
    """The ``/codeask ask`` answer, once every part of the reply (a note may follow) is in."""
    await world.post_command(command, channel=channel)
    reply = await world.slack.wait_for(_final)
    await asyncio.sleep(0.5)
    return reply


def _on_private_message(
    world: World, action_id: str, qid: str, name: str, **where: str
) -> dict[str, Any]:
    """A click on a message only the clicker sees, with a response URL the fake records."""
    return block_action(
        action_id,
        qid,
        "1900.000999",
        ephemeral=True,
        response_url=world.slack.response_url(name),
        **where,
    )


def _votes(world: World, qid: str) -> list[tuple[str, str]]:
    return sorted((f.user_id, f.verdict) for f in feedback_for(world.services.engine, qid))


# --- feedback -----------------------------------------------------------------------


async def test_a_vote_is_one_per_user_changeable_undoable_and_never_public(world: World) -> None:
    # Asked by Bob (not linked: nothing withheld, so no private note to him either).
    await world.post_event(mention(RETRY_QUESTION, "1900.000100", user="U0BOB"), "EvV1")
    final = await world.slack.wait_for(_final)
    qid, ts = _question_id(final), final.args["ts"]
    since = len(world.slack.calls)

    await world.post_action(block_action(ACTION_HELPFUL, qid, ts))
    [helpful] = await _settled(world, since, "chat.postEphemeral")
    assert helpful.args["user"] == "U0ALICE" and helpful.args["channel"] == "C0GENERAL"
    assert "You marked this answer helpful" in _text(helpful)
    assert _buttons(helpful) == {ACTION_UNDO: "Undo"}
    assert _votes(world, qid) == [("T1:U0ALICE", "helpful")]

    mark = len(world.slack.calls)
    await world.post_action(block_action(ACTION_WRONG, qid, ts))
    [wrong] = await _settled(world, mark, "chat.postEphemeral")
    assert "You marked this answer wrong" in _text(wrong)
    assert _votes(world, qid) == [("T1:U0ALICE", "wrong")]  # replaced, not added

    await world.post_action(block_action(ACTION_HELPFUL, qid, ts, user="U0BOB"))
    await world.slack.wait_for(
        lambda c: c.method == "chat.postEphemeral" and c.args.get("user") == "U0BOB"
    )
    assert _votes(world, qid) == [("T1:U0ALICE", "wrong"), ("T1:U0BOB", "helpful")]

    # Undo, clicked on Alice's confirmation: her vote goes, the confirmation says so.
    mark = len(world.slack.calls)
    undo = _on_private_message(world, ACTION_UNDO, qid, "undo")
    assert await world.post_action(undo) == 200
    [replaced] = await _settled(world, mark, "response_url")
    assert replaced.args["text"] == UNVOTED_TEXT
    assert replaced.args["replace_original"] is True
    assert replaced.args["response_type"] == "ephemeral"
    assert _votes(world, qid) == [("T1:U0BOB", "helpful")]

    assert _public_since(world, since) == []  # no click posted or edited a public message


async def test_undo_by_someone_who_cannot_see_the_answer_changes_nothing(world: World) -> None:
    await world.post_event(mention(RETRY_QUESTION, "1900.000200", user="U0BOB"), "EvV2")
    final = await world.slack.wait_for(_final)
    qid = _question_id(final)
    await world.post_action(block_action(ACTION_HELPFUL, qid, final.args["ts"]))
    await world.slack.wait_for(
        lambda c: c.method == "chat.postEphemeral" and "You marked" in c.args["text"]
    )
    since = len(world.slack.calls)
    # From another channel than the answer's: refused, the vote stays.
    forged = _on_private_message(world, ACTION_UNDO, qid, "forged", channel="C0OTHER")
    await world.post_action(forged)
    [refused] = await _settled(world, since, "chat.postEphemeral")
    assert refused.args["text"] == NOT_HERE_TEXT
    assert _votes(world, qid) == [("T1:U0ALICE", "helpful")]


# --- /codeask ask ---------------------------------------------------------------------


async def test_slash_ask_restates_the_question_and_shares_it_on_request(world: World) -> None:
    question = "how does retry <b>with</b> backoff & jitter work?"
    reply = await _private_reply(world, f"ask {question}")
    assert reply.method == "response_url" and reply.args["response_type"] == "ephemeral"
    asked = reply.args["blocks"][0]
    assert asked["type"] == "context"
    assert asked["elements"][0]["text"] == (
        "*You asked:* how does retry &lt;b&gt;with&lt;/b&gt; backoff &amp; jitter work?"
    )
    assert _buttons(reply)[ACTION_SHARE] == "Share in channel"
    assert len(reply.args["blocks"]) <= MAX_BLOCKS
    qid = _question_id(reply)
    answer_text = next(b for b in reply.args["blocks"] if b["type"] == "section")["text"]["text"]
    assert world.slack.of("chat.postMessage") == []  # nothing public so far

    share = _on_private_message(world, ACTION_SHARE, qid, "share")
    since = len(world.slack.calls)
    assert await world.post_action(share) == 200
    [posted] = await _settled(world, since, "chat.postMessage")
    assert posted.args["channel"] == "C0GENERAL" and not posted.args.get("thread_ts")
    shared = posted.args["blocks"]
    assert "<@U0ALICE> shared an answer to:" in json.dumps(shared)
    assert "&lt;b&gt;with&lt;/b&gt;" in json.dumps(shared)
    assert json.dumps(answer_text)[1:-1] in json.dumps(shared) and "net/retry.py" in _text(posted)
    assert ACTION_SHARE not in _buttons(posted) and ACTION_HELPFUL in _buttons(posted)
    [told] = await _settled(world, since, "response_url")
    assert told.args["text"] == SHARED_TEXT and told.args["replace_original"] is False

    # Shared once: a second click does not post it again.
    again = len(world.slack.calls)
    assert await world.post_action(_on_private_message(world, ACTION_SHARE, qid, "again")) == 200
    [second] = await _settled(world, again, "response_url")
    assert second.args["text"] == ALREADY_SHARED_TEXT
    assert _public_since(world, again) == []


def test_a_restated_question_keeps_every_message_within_block_kit_limits() -> None:
    text = "\n\n".join(f"Paragraph {n}: " + "retry " * 450 for n in range(120))
    question = "why <@U0BOB> " + "x" * 5000
    messages = private_answer_messages(
        Answer("q", text, []), question, "q1", "https://github.com", shareable=True
    )
    assert len(messages) > 2 and all(len(m.blocks) <= MAX_BLOCKS for m in messages)
    asked = messages[0].blocks[0]["elements"][0]["text"]
    assert asked.startswith("*You asked:* why &lt;@U0BOB&gt; x") and len(asked) <= 3000
    ampersands = quoted("&" * 3000)
    assert ampersands.endswith("&amp;…") and len(ampersands) <= QUESTION_CHARS + 5
    last = messages[-1].blocks[-1]
    assert [e["action_id"] for e in last["elements"]][-1] == ACTION_SHARE


async def test_slash_ask_in_a_dm_is_not_offered_for_sharing(world: World) -> None:
    world.llm.script(Reply("The master key is rotated by re-wrapping data keys [1]."))
    reply = await _private_reply(world, f"ask {PRIVATE_QUESTION}", channel="D0ALICE")
    assert PRIVATE_PATH in _text(reply)  # a DM: the asker's own access
    assert "*You asked:* how do we rotate the master encryption key?" in _text(reply)
    assert ACTION_SHARE not in _buttons(reply)


async def test_share_is_refused_once_the_channel_may_no_longer_read_a_source(
    world: World,
) -> None:
    acl = world.services.acl_store
    acl.grant("slack", "C0GENERAL", PRIVATE_REPO)
    world.llm.script(Reply("The master key is rotated by re-wrapping data keys [1]."))
    reply = await _private_reply(world, f"ask {PRIVATE_QUESTION}")
    assert PRIVATE_PATH in _text(reply)  # granted to the channel: everyone there may read it
    assert ACTION_SHARE in _buttons(reply)
    qid = _question_id(reply)

    acl.revoke_grant("slack", "C0GENERAL", PRIVATE_REPO)
    since = len(world.slack.calls)
    share = _on_private_message(world, ACTION_SHARE, qid, "late")
    assert await world.post_action(share) == 200
    [refused] = await _settled(world, since, "response_url")
    assert refused.args["text"] == NOT_HERE_TEXT
    assert _public_since(world, since) == []
    for secret in SECRETS:
        assert secret not in "\n".join(c.raw for c in world.slack.calls[since:])


async def test_only_the_asker_may_share_a_private_answer(world: World) -> None:
    qid = _question_id(await _private_reply(world, f"ask {RETRY_QUESTION}"))
    since = len(world.slack.calls)
    forged = _on_private_message(world, ACTION_SHARE, qid, "bob", user="U0BOB")
    assert await world.post_action(forged) == 200
    [refused] = await _settled(world, since, "response_url")
    assert refused.args["text"] == NOT_HERE_TEXT
    assert _public_since(world, since) == []


# --- what a channel answer withheld ---------------------------------------------------


async def test_the_withheld_note_reaches_only_the_asker(world: World) -> None:
    await world.post_event(mention(PRIVATE_QUESTION, "1900.000600"), "EvW1")
    final = await world.slack.wait_for(_final)
    note = await world.slack.wait_for(lambda c: c.method == "chat.postEphemeral")
    assert note.args["user"] == "U0ALICE" and note.args["channel"] == "C0GENERAL"
    assert note.args["thread_ts"] == "1900.000600"  # in the question's thread
    assert REASON_CHANNEL.split(".")[0] in _text(note)
    assert _buttons(note) == {ACTION_PRIVATE: ":lock: Answer me in a DM"}

    public = [c for c in world.slack.calls if c.method in PUBLIC_METHODS]
    for call in public:  # placeholder, edits and the answer: no trace of the note or offer
        body = _text(call)
        assert "direct message" not in body and "withheld" not in body.lower()
        assert "searched" not in body and ACTION_PRIVATE not in body
        assert "codeask_private" not in body
    assert final in public

    # The button, clicked on the note only Alice sees, answers her in her DM.
    world.llm.script(Reply("Re-wrap the data keys [1]."))
    click = block_action(ACTION_PRIVATE, _question_id(final), "1900.000601", ephemeral=True)
    assert await world.post_action(click) == 200
    dm = await world.slack.wait_for(lambda c: _final(c) and c.args.get("channel") == "D0ALICE")
    assert PRIVATE_PATH in _text(dm)
