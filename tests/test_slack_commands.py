"""``/codeask`` admin and user commands through the real bolt app over HTTP."""

from __future__ import annotations

import asyncio
import json
import re
import threading
from pathlib import Path
from typing import Any

from bot.slack.render import ACTION_WRONG
from indexer.embedding import SqliteEmbeddingCache
from indexer.jobs import Worker, WorkerConfig
from indexer.jobs import queue as jobs
from tests import slack_world
from tests.fake_llm import Reply
from tests.fake_slack import Call
from tests.slack_world import (
    PRIVATE_REPO,
    PUBLIC_FILES,
    PUBLIC_REPO,
    World,
    block_action,
    commit_repo,
    mention,
)

indexed = slack_world.indexed_fixture
world = slack_world.world_fixture

NEW_REPO = "acme/newlib"
NEW_FILES = {
    "ratelimit/bucket.py": (
        "class TokenBucket:\n"
        '    """Rate limiter: a bucket refilled with tokens at a fixed rate."""\n'
        "\n"
        "    def take(self, tokens=1):\n"
        "        if self.available >= tokens:\n"
        "            self.available -= tokens\n"
        "            return True\n"
        "        return False\n"
    ),
}


def _responses(world: World) -> list[Call]:
    return world.slack.of("response_url")


async def _command(world: World, text: str, user: str) -> Call:
    before = len(_responses(world))
    status, _ = await world.post_command(text, user=user)
    assert status == 200
    return await world.slack.wait_for(
        lambda c: c.method == "response_url" and c in _responses(world)[before:]
    )


def _final(call: Call) -> bool:
    blocks = call.args.get("blocks") or []
    return (
        call.status == 200
        and call.method == "chat.update"
        and any(b.get("block_id", "").startswith("codeask_answer:") for b in blocks)
    )


async def test_admin_repo_add_queues_indexes_and_becomes_askable(
    world: World, tmp_path: Path, embedder: Any
) -> None:
    world.github.add_repo(NEW_REPO, "public")
    commit_repo(tmp_path / "remotes" / NEW_REPO, NEW_FILES)
    # An earlier repository of that name was deleted on GitHub: its name was marked gone.
    world.services.acl_store.set_repo_override(NEW_REPO, "gone", "deleted")
    reply = await _command(world, f"repo add {NEW_REPO}", user="U0ADMIN")
    assert f"Registered {NEW_REPO} (public, branch main); indexing is queued." in reply.args["text"]
    assert reply.args["response_type"] == "ephemeral"
    engine = world.services.engine
    assert [j.repo for j in jobs.pending(engine)] == [NEW_REPO]

    cache = SqliteEmbeddingCache(tmp_path / "worker-embeddings.db")
    worker = Worker(
        engine,
        world.services.store,
        embedder,
        cache,
        WorkerConfig(repos_dir=tmp_path / "clones"),
    )
    done = await asyncio.to_thread(worker.run, threading.Event(), True)
    assert done == 1
    repo = world.services.registry.get(NEW_REPO)
    assert repo is not None and repo.status == "ready" and repo.chunk_count > 0

    world.llm.script(Reply("A token bucket refills at a fixed rate [1]."))
    await world.post_event(
        mention("how does the token bucket rate limiter work?", "1800.000100"), "EvA1"
    )
    final = await world.slack.wait_for(_final)
    assert f"https://github.com/{NEW_REPO}/blob/" in json.dumps(final.args["blocks"])


async def test_non_admin_cannot_run_admin_commands(world: World) -> None:
    reply = await _command(world, f"repo add {NEW_REPO}", user="U0BOB")
    assert "Only codeask admins can run that command" in reply.args["text"]
    assert reply.args["response_type"] == "ephemeral"
    assert world.services.registry.get(NEW_REPO) is None
    assert not jobs.pending(world.services.engine)


async def test_unknown_repo_is_refused_with_a_clear_reply(world: World) -> None:
    reply = await _command(world, "repo add acme/does-not-exist", user="U0ADMIN")
    assert "GitHub has no repository acme/does-not-exist" in reply.args["text"]
    assert world.services.registry.get("acme/does-not-exist") is None


async def test_admin_channel_grant_is_announced_in_channel(world: World, tmp_path: Path) -> None:
    commit_repo(tmp_path / "remotes" / PUBLIC_REPO, PUBLIC_FILES)
    added = await _command(world, f"repo add {PUBLIC_REPO}", user="U0ADMIN")
    assert "indexing is queued" in added.args["text"]
    reply = await _command(world, f"channel grant {PUBLIC_REPO}", user="U0ADMIN")
    assert reply.args["response_type"] == "in_channel"
    assert world.services.acl_store.channel_grants("slack", "C0GENERAL") == frozenset({PUBLIC_REPO})


async def test_help_and_whoami_for_everyone(world: World) -> None:
    help_reply = await _command(world, "help", user="U0BOB")
    shown = json.dumps(help_reply.args.get("blocks") or []) + help_reply.args["text"]
    assert "whoami" in shown and "repo add" not in shown  # admin commands: admins only
    admin_help = await _command(world, "help", user="U0ADMIN")
    assert "repo add owner/name" in json.dumps(admin_help.args.get("blocks") or [])
    whoami = await _command(world, "whoami", user="U0ALICE")
    assert "linked to GitHub @alice" in whoami.args["text"]


async def test_wrong_feedback_is_stored_for_eval(world: World) -> None:
    from bot.chat.feedback import feedback_for

    await world.post_event(mention("how does retry with backoff work?", "1800.000200"), "EvA2")
    final = await world.slack.wait_for(_final)
    block = next(
        b for b in final.args["blocks"] if b.get("block_id", "").startswith("codeask_answer:")
    )
    qid = block["block_id"].split(":", 1)[1]
    await world.post_action(block_action(ACTION_WRONG, qid, final.args["ts"], user="U0BOB"))
    await world.slack.wait_for(
        lambda c: c.method == "chat.postEphemeral" and c.args.get("user") == "U0BOB"
    )
    assert [(f.user_id, f.verdict) for f in feedback_for(world.services.engine, qid)] == [
        ("T1:U0BOB", "wrong")
    ]


# --- repositories indexed with `codeask index` (in the store, not in the registry) ----


AGE = r"(just now|\d+ (min|h) ago)"  # when the module's index was written


async def _home(world: World, user: str) -> str:
    event = {"type": "app_home_opened", "user": user, "channel": f"D{user}", "tab": "home"}
    await world.post_event({**event, "event_ts": "1700.0100"}, f"EvHome{user}")
    call = await world.slack.wait_for(
        lambda c: c.method == "views.publish" and c.args["user_id"] == user
    )
    return json.dumps(call.args["view"])


async def test_repo_list_and_status_show_repositories_indexed_from_the_command_line(
    world: World, tmp_path: Path
) -> None:
    assert world.services.registry.all() == []  # the world's index was written by the CLI path
    private = world.services.store.repo_state(PRIVATE_REPO)
    assert private is not None
    world.github.add_repo(NEW_REPO, "public")
    commit_repo(tmp_path / "remotes" / NEW_REPO, NEW_FILES)
    await _command(world, f"repo add {NEW_REPO}", user="U0ADMIN")

    listed = await _command(world, "repo list", user="U0ADMIN")
    assert listed.args["response_type"] == "ephemeral"
    lines = {line.split()[0]: line for line in listed.args["text"].splitlines()}
    assert set(lines) == {NEW_REPO, PUBLIC_REPO, PRIVATE_REPO}
    assert "(registered with `repo add`)" in lines[NEW_REPO] and "pending" in lines[NEW_REPO]
    assert "(indexed from the command line)" in lines[PRIVATE_REPO]
    assert re.search(rf"  {private.commit[:12]}  {AGE}  ", lines[PRIVATE_REPO])

    status = await _command(world, "status", user="U0ADMIN")
    text = status.args["text"]
    assert status.args["response_type"] == "ephemeral"
    assert text.startswith("3 repositories (2 indexed from the command line, not tracked)")
    assert re.search(rf"{PRIVATE_REPO}  ready  {private.commit[:12]}  {AGE}", text)

    one = await _command(world, f"status {PRIVATE_REPO}", user="U0ADMIN")
    assert f"{PRIVATE_REPO}: ready, private, indexed from the command line" in one.args["text"]
    shown = rf"indexed {private.commit[:12]} \({AGE}\), {private.chunk_count} chunks"
    assert re.search(shown, one.args["text"])
    # The commands that act on the registry say why they do not act on it.
    reindex = await _command(world, f"repo reindex {PRIVATE_REPO}", user="U0ADMIN")
    assert f"`repo add {PRIVATE_REPO}` tracks it" in reindex.args["text"]

    home = await _home(world, "U0ADMIN")
    assert f"{PRIVATE_REPO}: ready, {private.commit[:12]}" in home
    assert "indexed from the command line" in home and "registered with `repo add`" in home


async def test_a_private_repo_indexed_from_the_command_line_is_not_shown_to_who_cannot_read_it(
    world: World,
) -> None:
    # Bob is not an admin and not linked to GitHub: he may read public repositories only.
    for text in ("repo list", "status", f"status {PRIVATE_REPO}"):
        reply = await _command(world, text, user="U0BOB")
        assert "Only codeask admins can run that command" in reply.args["text"]
        assert PRIVATE_REPO not in reply.args["text"]
    home = await _home(world, "U0BOB")
    assert PUBLIC_REPO in home
    assert PRIVATE_REPO not in home and "Index status" not in home
    # An admin's listing run in a channel goes to the admin alone, never to the channel.
    listed = await _command(world, "repo list", user="U0ADMIN")
    assert PRIVATE_REPO in listed.args["text"] and listed.args["response_type"] == "ephemeral"
    assert not [c for c in world.slack.of("chat.postMessage") if PRIVATE_REPO in c.raw]
