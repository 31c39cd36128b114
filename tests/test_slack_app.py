"""The Slack app end to end: real bolt over HTTP, signed Slack payloads, local Slack,
GitHub and LLM servers, a real index of two tiny repositories."""

from __future__ import annotations

import json
import time

from acl.permissions import REASON_CHANNEL, REASON_GITHUB_DOWN
from bot.answer import NOT_FOUND_TEXT
from bot.chat.feedback import feedback_for
from bot.slack.render import (
    ACTION_HELPFUL,
    ACTION_PRIVATE,
    ACTION_RETRY,
    ACTION_SOURCES,
    ACTION_WRONG,
    SEARCHING_TEXT,
)
from indexer.jobs import Repo
from tests import slack_world
from tests.fake_llm import Reply
from tests.fake_slack import Call
from tests.slack_world import (
    PRIVATE_PATH,
    PRIVATE_REPO,
    PRIVATE_SYMBOL,
    PUBLIC_REPO,
    World,
    block_action,
    direct_message,
    mention,
    sign,
)

indexed = slack_world.indexed_fixture
world = slack_world.world_fixture
PRIVATE_QUESTION = "how do we rotate the master encryption key?"


def _final(call: Call) -> bool:
    """The finished answer: a message carrying the feedback buttons."""
    blocks = call.args.get("blocks") or []
    return (
        call.status == 200
        and call.method in ("chat.update", "chat.postMessage", "response_url")
        and any(
            b.get("type") == "actions" and b.get("block_id", "").startswith("codeask_answer:")
            for b in blocks
        )
    )


def _buttons(call: Call) -> list[str]:
    """The buttons on the answer itself (the withheld note's offer is a block of its own)."""
    return [
        e["action_id"]
        for b in call.args.get("blocks") or []
        if b.get("type") == "actions" and b.get("block_id", "").startswith("codeask_answer:")
        for e in b["elements"]
    ]


def _text(call: Call) -> str:
    return json.dumps(call.args.get("blocks") or []) + str(call.args.get("text", ""))


def _question_id(call: Call) -> str:
    block = next(
        b for b in call.args["blocks"] if b.get("block_id", "").startswith("codeask_answer:")
    )
    return str(block["block_id"].split(":", 1)[1])


async def test_mention_is_answered_in_its_thread_with_citation_links(world: World) -> None:
    response = await world.post_event(
        mention("how does retry with backoff work?", "1700.000100"), "Ev01"
    )
    assert response.status == 200
    final = await world.slack.wait_for(_final)
    placeholder = world.slack.of("chat.postMessage")[0]
    assert placeholder.args["thread_ts"] == "1700.000100"  # answered in the thread
    assert SEARCHING_TEXT in placeholder.args["text"]
    assert final.method == "chat.update" and final.args["ts"] is not None
    body = _text(final)
    assert "*retries*" in body  # Markdown bold became mrkdwn bold
    assert f"https://github.com/{PUBLIC_REPO}/blob/" in body and "net/retry.py#L1-L7" in body
    assert "retry_with_backoff" in body  # the compact sources list names the symbol
    assert PRIVATE_REPO not in world.slack.bodies()  # a channel: the private repo is out


async def test_follow_up_in_a_thread_sends_earlier_turns_to_the_model(world: World) -> None:
    world.slack.threads[("C0GENERAL", "1700.000200")] = [
        {
            "type": "message",
            "user": "U0ALICE",
            "text": "<@UBOT> where is the backoff helper?",
            "ts": "1700.000200",
        },
        {
            "type": "message",
            "user": "UBOT",
            "bot_id": "BBOT",
            "text": "In net/retry.py [1].",
            "ts": "1700.000201",
        },
        {
            "type": "message",
            "user": "U0ALICE",
            "text": "<@UBOT> how many attempts?",
            "ts": "1700.000300",
        },
    ]
    event = mention("how many attempts?", "1700.000300", thread_ts="1700.000200")
    await world.post_event(event, "Ev02")
    await world.slack.wait_for(_final)
    replies = world.slack.of("conversations.replies")
    assert replies and replies[0].args["ts"] == "1700.000200"
    sent = json.dumps(world.llm.requests[0]["messages"])
    assert "where is the backoff helper?" in sent and "In net/retry.py [1]." in sent


async def test_a_follow_up_in_a_long_thread_uses_its_latest_turns(world: World) -> None:
    thread: list[dict[str, object]] = [
        {
            "type": "message",
            "user": "U0ALICE",
            "text": "<@UBOT> what is the token bucket?",
            "ts": "1700.100000",
        },
    ]
    for n in range(1, 300):  # chatter between people, more than a page of replies
        thread.append(
            {"type": "message", "user": "U0BOB", "text": f"note {n}", "ts": f"1700.1{n:05d}"}
        )
    thread += [
        {
            "type": "message",
            "user": "U0ALICE",
            "text": "<@UBOT> where is the backoff helper?",
            "ts": "1700.200000",
        },
        {
            "type": "message",
            "user": "UBOT",
            "bot_id": "BBOT",
            "text": "In net/retry.py [1].",
            "ts": "1700.200001",
        },
        {
            "type": "message",
            "user": "U0ALICE",
            "text": "<@UBOT> how many attempts?",
            "ts": "1700.300000",
        },
    ]
    world.slack.threads[("C0GENERAL", "1700.100000")] = thread
    event = mention("how many attempts?", "1700.300000", thread_ts="1700.100000")
    await world.post_event(event, "Ev02b")
    await world.slack.wait_for(_final)
    assert len(world.slack.of("conversations.replies")) == 2  # both pages were read
    sent = json.dumps(world.llm.requests[0]["messages"])
    assert "where is the backoff helper?" in sent and "In net/retry.py [1]." in sent


async def test_direct_message_answers_from_the_askers_private_repo(world: World) -> None:
    world.llm.script(Reply("The master key is rotated by re-wrapping data keys [1]."))
    await world.post_event(direct_message(PRIVATE_QUESTION, "1700.000400"), "Ev03")
    final = await world.slack.wait_for(_final)
    assert final.args["channel"] == "D0ALICE"
    body = _text(final)
    assert PRIVATE_REPO in body and PRIVATE_PATH in body
    audit = world.services.acl_store.audit_entries(limit=1)[0]
    assert (
        audit.place == "dm" and PRIVATE_REPO in audit.allowed_repos and PRIVATE_PATH in audit.cited
    )


async def test_a_direct_message_with_a_file_attached_is_still_a_question(world: World) -> None:
    world.llm.script(Reply("The master key is rotated by re-wrapping data keys [1]."))
    event = direct_message(PRIVATE_QUESTION, "1700.000410") | {
        "subtype": "file_share",
        "files": [{"id": "F1", "name": "trace.txt"}],
    }
    await world.post_event(event, "Ev03b")
    final = await world.slack.wait_for(_final)
    assert final.args["channel"] == "D0ALICE" and PRIVATE_PATH in _text(final)


async def test_channel_withholds_the_private_repo_and_never_names_it(world: World) -> None:
    await world.post_event(mention(PRIVATE_QUESTION, "1700.000500"), "Ev04")
    final = await world.slack.wait_for(_final)
    body = _text(final)
    assert REASON_CHANNEL.split(".")[0] not in body  # the channel is not told more exists
    assert not any(
        b.get("block_id", "").startswith("codeask_private:") for b in final.args["blocks"]
    )
    note = await world.slack.wait_for(lambda c: c.method == "chat.postEphemeral")
    assert note.args["user"] == "U0ALICE" and REASON_CHANNEL.split(".")[0] in _text(note)
    everything = world.slack.bodies()
    for secret in (PRIVATE_REPO, PRIVATE_PATH, PRIVATE_SYMBOL, "re-wrap every data key"):
        assert secret not in everything
    assert all(PRIVATE_REPO not in json.dumps(r) for r in world.llm.requests)
    audit = world.services.acl_store.audit_entries(limit=1)[0]
    assert audit.withheld and audit.place == "channel:C0GENERAL"

    # "Answer me in a DM": the same question, answered privately with the clicker's access.
    world.llm.script(Reply("Re-wrap the data keys [1]."))
    status = await world.post_action(
        block_action(ACTION_PRIVATE, _question_id(final), final.args["ts"], ephemeral=True)
    )
    assert status == 200
    dm = await world.slack.wait_for(lambda c: _final(c) and c.args.get("channel") == "D0ALICE")
    assert PRIVATE_PATH in _text(dm)


async def test_retried_event_is_answered_once(world: World) -> None:
    event = mention("how does retry with backoff work?", "1700.000600")
    first = await world.post_event(event, "Ev05")
    again = await world.post_event(
        event, "Ev05", headers={"X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_timeout"}
    )
    assert first.status == 200 and again.status == 200
    await world.slack.wait_for(_final)
    placeholders = [
        c for c in world.slack.of("chat.postMessage") if c.args.get("thread_ts") == "1700.000600"
    ]
    assert len(placeholders) == 1
    assert len(world.llm.requests) == 1


async def test_forged_signature_is_refused(world: World) -> None:
    body = json.dumps(
        {
            "type": "event_callback",
            "event_id": "Ev06",
            "team_id": "T1",
            "event": mention("hi", "1700.000700"),
        }
    )
    forged = sign(body, secret="not-the-signing-secret")
    response = await world.post(body, "application/json", signed=forged)
    assert response.status == 401
    assert not [c for c in world.slack.calls if c.method != "auth.test"]


async def test_stale_timestamp_is_refused(world: World) -> None:
    body = json.dumps(
        {
            "type": "event_callback",
            "event_id": "Ev07",
            "team_id": "T1",
            "event": mention("hi", "1700.000800"),
        }
    )
    stale = sign(body, timestamp=int(time.time()) - 10 * 60)  # validly signed, but replayed
    response = await world.post(body, "application/json", signed=stale)
    assert response.status == 401
    assert not world.slack.of("chat.postMessage")


async def test_github_down_answers_from_public_repos_with_a_note(world: World) -> None:
    world.github.fail_status = 502
    await world.post_event(direct_message(PRIVATE_QUESTION, "1700.000900"), "Ev08")
    final = await world.slack.wait_for(_final)
    body = _text(final)
    assert REASON_GITHUB_DOWN.split(";")[0] in body
    assert PRIVATE_REPO not in world.slack.bodies()


async def test_llm_down_says_so_and_shows_the_best_places(world: World) -> None:
    world.llm.script(Reply(status=500))
    await world.post_event(mention("how does retry with backoff work?", "1700.001000"), "Ev09")
    final = await world.slack.wait_for(_final)
    body = _text(final)
    assert final.args["blocks"][0]["text"]["text"].startswith(
        ":warning: The language model is unavailable"
    )
    assert json.dumps(final.args["blocks"]).count("net/retry.py:1-7") == 1  # listed once
    assert _buttons(final) == [ACTION_RETRY, ACTION_SOURCES]  # no feedback buttons
    assert "net/retry.py" in body
    assert "Traceback" not in world.slack.bodies()


async def test_not_found_in_a_channel_names_only_what_the_channel_may_read(world: World) -> None:
    # Alice can read the private repository; the channel's audience cannot.
    world.llm.script(Reply(NOT_FOUND_TEXT))
    await world.post_event(mention(PRIVATE_QUESTION, "1700.001050"), "Ev09b")
    final = await world.slack.wait_for(_final)
    blocks = final.args["blocks"]
    assert blocks[0]["text"]["text"].startswith(f":warning: {NOT_FOUND_TEXT}")
    searched = [e["text"] for b in blocks if b["type"] == "context" for e in b["elements"]]
    assert f"Searched: `{PUBLIC_REPO}`" in searched
    assert ACTION_HELPFUL not in _buttons(final) and ACTION_WRONG not in _buttons(final)
    for secret in (PRIVATE_REPO, PRIVATE_PATH, PRIVATE_SYMBOL):
        assert secret not in world.slack.bodies()


async def test_not_found_in_a_dm_names_the_askers_own_repositories(world: World) -> None:
    world.llm.script(Reply(NOT_FOUND_TEXT))
    await world.post_event(direct_message("where is the GPU autoscaler?", "1700.001060"), "Ev09c")
    final = await world.slack.wait_for(_final)
    assert f"Searched: `{PRIVATE_REPO}`, `{PUBLIC_REPO}`" in _text(final)
    assert _buttons(final) == [ACTION_SOURCES]


async def test_streaming_edits_survive_a_rate_limit(world: World) -> None:
    world.llm.script(Reply("Backoff doubles the wait each attempt [1]. " * 30, piece=20, delay=0.0))
    world.slack.rate_limit("chat.update", seconds=1, times=1)
    await world.post_event(mention("how does retry with backoff work?", "1700.001100"), "Ev10")
    final = await world.slack.wait_for(_final)
    updates = world.slack.of("chat.update")
    limited = [c for c in updates if c.status == 429]
    assert len(limited) == 1
    after = [c for c in updates if c.at > limited[0].at]
    assert after and after[0].at - limited[0].at >= 1.0  # Retry-After honoured
    assert final in updates


async def test_a_dropped_connection_while_streaming_still_delivers_the_answer(
    world: World,
) -> None:
    world.llm.script(Reply("Backoff doubles the wait each attempt [1]. " * 30, piece=20, delay=0.0))
    # The first progress edit and the client's one retry of it both lose the connection.
    world.slack.fail("chat.update", "disconnect", times=2)
    await world.post_event(mention("how does retry with backoff work?", "1700.001150"), "Ev10b")
    final = await world.slack.wait_for(_final)
    assert [c.status for c in world.slack.of("chat.update")][:2] == [0, 0]
    assert "Backoff doubles" in _text(final)
    assert "Sorry" not in world.slack.bodies()


async def test_when_the_final_edit_fails_the_answer_replaces_the_placeholder(
    world: World,
) -> None:
    world.llm.script(Reply("Backoff doubles the wait each attempt [1]."))
    world.slack.fail("chat.update", "invalid_blocks", times=5)
    await world.post_event(mention("how does retry with backoff work?", "1700.001160"), "Ev10c")
    final = await world.slack.wait_for(_final)
    assert final.method == "chat.postMessage"
    placeholder = world.slack.of("chat.postMessage")[0]
    deleted = await world.slack.wait_for(lambda c: c.method == "chat.delete")
    assert deleted.args["channel"] and deleted.args["ts"] != final.args.get("ts")
    assert placeholder.args["text"] == SEARCHING_TEXT


async def test_a_question_without_words_gets_told_so_not_a_model_outage(world: World) -> None:
    await world.post_event(mention("???", "1700.001170"), "Ev10d")
    reply = await world.slack.wait_for(
        lambda c: c.method in ("chat.update", "chat.postMessage") and "no letters" in c.raw
    )
    assert "language model is unavailable" not in _text(reply)
    assert world.llm.requests == []


async def test_slash_ask_is_ephemeral(world: World) -> None:
    status, ack = await world.post_command("ask how does retry with backoff work?")
    assert status == 200
    acknowledged = json.loads(ack)  # within Slack's 3 s, before any search
    assert SEARCHING_TEXT in acknowledged["text"] and acknowledged["response_type"] == "ephemeral"
    final = await world.slack.wait_for(_final)
    assert final.method == "response_url"
    assert final.args["response_type"] == "ephemeral" and final.args["replace_original"] is True
    assert "net/retry.py" in _text(final)


async def test_feedback_and_show_sources_buttons(world: World) -> None:
    await world.post_event(mention("how does retry with backoff work?", "1700.001200"), "Ev11")
    final = await world.slack.wait_for(_final)
    qid = _question_id(final)
    assert await world.post_action(block_action(ACTION_HELPFUL, qid, final.args["ts"])) == 200
    thanks = await world.slack.wait_for(
        lambda c: c.method == "chat.postEphemeral" and "You marked" in c.args["text"]
    )
    assert thanks.args["user"] == "U0ALICE" and "helpful" in thanks.args["text"]
    rows = feedback_for(world.services.engine, qid)
    assert [(r.user_id, r.verdict) for r in rows] == [("T1:U0ALICE", "helpful")]

    assert await world.post_action(block_action(ACTION_SOURCES, qid, final.args["ts"])) == 200
    details = await world.slack.wait_for(
        lambda c: c.method == "chat.postEphemeral" and "Sources" in c.args["text"]
    )
    assert "def retry_with_backoff" in _text(details)


async def test_app_home_shows_link_and_askable_repos(world: World) -> None:
    event = {
        "type": "app_home_opened",
        "user": "U0ALICE",
        "channel": "D0ALICE",
        "tab": "home",
        "event_ts": "1700.0013",
    }
    await world.post_event(event, "Ev12")
    call = await world.slack.wait_for(lambda c: c.method == "views.publish")
    assert call.args["user_id"] == "U0ALICE"
    view = json.dumps(call.args["view"])
    assert "@alice" in view and PUBLIC_REPO in view and PRIVATE_REPO in view
    assert "Index status" not in view  # not an admin
    assert "<question>" not in view and "&lt;question&gt;" in view
    commits = {s.repo: s.commit for s in world.services.store.repo_states()}
    assert f"*{PUBLIC_REPO}* (public) `{commits[PUBLIC_REPO][:7]}`, indexed " in view
    buttons = {
        e["text"]["text"]: e
        for b in call.args["view"]["blocks"]
        if b["type"] == "actions"
        for e in b["elements"]
    }
    dm = buttons[":speech_balloon: Ask in DM"]["url"]
    assert dm == "https://slack.com/app_redirect?app=A0CODEASK&team=T1"
    assert ":link: Link GitHub" not in buttons  # already linked


def _home_opened(user: str, ts: str) -> dict[str, str]:
    return {
        "type": "app_home_opened",
        "user": user,
        "channel": "D0X",
        "tab": "home",
        "event_ts": ts,
    }


async def test_app_home_offers_an_unlinked_user_the_link_flow(world: World) -> None:
    acl = world.services.acl
    acl.github_oauth_client_id, acl.github_oauth_client_secret = "Iv1.home", "s3cret"
    await world.post_event(_home_opened("U0BOB", "1700.0014"), "Ev12b")
    call = await world.slack.wait_for(lambda c: c.method == "views.publish")
    assert call.args["user_id"] == "U0BOB"
    [actions] = [b for b in call.args["view"]["blocks"] if b["type"] == "actions"]
    link = next(e for e in actions["elements"] if e["text"]["text"] == ":link: Link GitHub")
    assert link["url"].startswith("https://github.com/login/oauth/authorize?client_id=Iv1.home")
    assert "state=" in link["url"]
    # Clicking a URL button still sends an action: it is acknowledged, nothing else.
    since = len(world.slack.calls)
    click = block_action(link["action_id"], "", "1700.0015", user="U0BOB", channel="D0BOB")
    del click["actions"][0]["value"]
    assert await world.post_action(click) == 200
    assert [c.method for c in world.slack.calls[since:]] == []


async def test_app_home_says_when_a_repository_is_behind_its_pushed_head(world: World) -> None:
    indexed = next(s.commit for s in world.services.store.repo_states() if s.repo == PUBLIC_REPO)
    world.services.registry.save(
        Repo(
            full_name=PUBLIC_REPO,
            visibility="public",
            status="ready",
            last_indexed_commit=indexed,
            head_commit="f" * 40,
            commits_behind=3,
        )
    )
    await world.post_event(_home_opened("U0ALICE", "1700.0016"), "Ev12c")
    call = await world.slack.wait_for(lambda c: c.method == "views.publish")
    view = json.dumps(call.args["view"])
    assert f"*{PUBLIC_REPO}* (public) `{indexed[:7]}` on `main`, indexed " in view
    assert f", :warning: 3 commits behind (head {'f' * 12})" in view


async def test_a_thread_follow_up_starts_from_the_places_the_thread_already_read(
    world: World,
) -> None:
    # The first answer, in #general; another one, in another channel.
    world.llm.script(Reply("Backoff doubles the wait each attempt [1]."))
    await world.post_event(mention("how does retry with backoff work?", "1700.002000"), "Ev40")
    here = await world.slack.wait_for(_final)
    await world.post_event(
        mention("how does retry with backoff work?", "1700.002100", channel="C0OTHER"), "Ev41"
    )
    elsewhere = await world.slack.wait_for(lambda c: _final(c) and c.args["ts"] != here.args["ts"])

    def bot_message(call: Call, ts: str) -> dict[str, object]:
        return {
            "type": "message",
            "user": "UBOT",
            "bot_id": "BBOT",
            "ts": ts,
            "text": call.args.get("text", ""),
            "blocks": call.args["blocks"],
        }

    for answered, ok in ((here, True), (elsewhere, False)):
        world.llm.requests.clear()
        world.slack.threads[("C0GENERAL", "1700.002000")] = [
            {
                "type": "message",
                "user": "U0ALICE",
                "ts": "1700.002000",
                "text": "<@UBOT> how does retry with backoff work?",
            },
            bot_message(answered, "1700.002001"),
            {
                "type": "message",
                "user": "U0ALICE",
                "ts": "1700.002300",
                "text": "<@UBOT> what is in the README?",
            },
        ]
        seen = {id(c) for c in world.slack.calls}
        event = mention("what is in the README?", "1700.002300", thread_ts="1700.002000")
        await world.post_event(event, f"Ev42{ok}")
        await world.slack.wait_for(lambda c, seen=seen: _final(c) and id(c) not in seen)
        opening = world.llm.requests[0]["messages"][-1]["content"]
        carried = "net/retry.py:1-7 (retry_with_backoff) (read earlier in this conversation)"
        # Only an answer given here carries its places; one from another channel is ignored.
        assert (carried in opening) is ok, opening


async def test_an_agentic_dm_answer_shows_each_step_then_cites_what_it_read(
    world: World,
) -> None:
    world.llm.script(
        Reply("", tool_calls=(("find_definitions", json.dumps({"name": PRIVATE_SYMBOL})),)),
        Reply("Every data key is re-wrapped with the new key [1].", delay=1.5),
    )
    event = direct_message(PRIVATE_QUESTION, "1700.003000") | {"thread_ts": "1700.002900"}
    await world.post_event(event, "Ev50")
    final = await world.slack.wait_for(_final)
    step = f"Looking up the definition of `{PRIVATE_SYMBOL}`"
    edits = [_text(c) for c in world.slack.of("chat.update") if c is not final]
    assert any(step in e for e in edits), edits
    [status] = world.slack.of("assistant.threads.setStatus")
    assert status.args["thread_ts"] == "1700.002900" and step in status.args["status"]
    assert "tools" in world.llm.requests[0]
    body = _text(final)
    assert f"/{PRIVATE_REPO}/blob/" in body and f"{PRIVATE_PATH}#L1-L6" in body
