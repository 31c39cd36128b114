"""Earlier turns of a Slack conversation, as (question, answer) pairs for follow-ups."""

from __future__ import annotations

import logging
import re
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.answer import History
from bot.slack.render import SEARCHING_TEXT, WRITING_TEXT

log = logging.getLogger(__name__)

HISTORY_TURNS = 4
THREAD_PAGE_SIZE = 200
THREAD_PAGES = 10  # threads longer than 2,000 messages use their first 2,000
DM_HISTORY_SECONDS = 15 * 60  # an older DM message starts a new conversation
_MENTION = re.compile(r"<@[A-Z0-9]+(?:\|[^>]*)?>")
# Slack's other <...> forms: channels, special mentions, dates, links with or without a label.
_ANGLED = re.compile(r"<([#!]?)([^<>|]*)(?:\|([^<>]*))?>")


def _plain(m: re.Match[str]) -> str:
    sigil, target, label = m.group(1), m.group(2), m.group(3)
    if sigil == "#":
        return f"#{label}" if label else ""
    if sigil == "!":
        return label or ""  # <!here>, <!channel>: nothing to search for
    return label or target  # a link: its label, else the URL


def strip_mentions(text: str) -> str:
    """A message as its author typed it: mentions of people removed, Slack's markup for
    channels and links turned into their text, and Slack's escaping of ``& < >`` undone
    (so ``Result&lt;T&gt;`` is searched and asked as ``Result<T>``)."""
    text = _ANGLED.sub(_plain, _MENTION.sub(" ", text))
    text = text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    return " ".join(text.split())


def turns_from_messages(
    messages: list[dict[str, Any]], bot_user_id: str, before_ts: str
) -> History:
    """(question, answer) pairs from Slack messages (oldest first) written before ``before_ts``.

    A user message followed by a bot message is one turn; placeholders are skipped.
    """
    turns: list[tuple[str, str]] = []
    pending: str | None = None
    for m in messages:
        if float(m.get("ts", "0")) >= float(before_ts):
            break
        text = m.get("text") or ""
        from_bot = bool(m.get("bot_id")) or (bool(bot_user_id) and m.get("user") == bot_user_id)
        if from_bot:
            if pending is not None and text not in (SEARCHING_TEXT, WRITING_TEXT):
                turns.append((pending, text))
                pending = None
        elif m.get("subtype") is None:
            pending = strip_mentions(text) or None
    return tuple(turns[-HISTORY_TURNS:])


ANSWER_BLOCK = "codeask_answer:"  # block_id prefix of an answer's buttons (bot.slack.render)


def answers_among(
    messages: list[dict[str, Any]], bot_user_id: str, before_ts: str
) -> tuple[str, ...]:
    """Question ids of the bot's answers written before ``before_ts``, latest last: what
    a follow-up may read again (the Asker re-checks each against the asker and place)."""
    ids: list[str] = []
    for m in messages:
        if float(m.get("ts", "0")) >= float(before_ts):
            break
        from_bot = bool(m.get("bot_id")) or (bool(bot_user_id) and m.get("user") == bot_user_id)
        if not from_bot:
            continue
        for block in m.get("blocks") or []:
            block_id = block.get("block_id") if isinstance(block, dict) else None
            if isinstance(block_id, str) and block_id.startswith(ANSWER_BLOCK):
                ids.append(block_id[len(ANSWER_BLOCK) :][:64])
    return tuple(dict.fromkeys(ids))[-HISTORY_TURNS:]


async def thread_turns(
    client: AsyncWebClient, channel: str, thread_ts: str, before: str, context: Any
) -> tuple[History, tuple[str, ...]]:
    """The thread's earlier turns and the ids of the answers among them."""
    # Replies come oldest first, a page at a time: a long thread's latest turns are on its
    # last page, so every page is read (up to a bound) and the turns come from the end.
    messages: list[dict[str, Any]] = []
    cursor = ""
    try:
        for _ in range(THREAD_PAGES):
            response = await client.conversations_replies(
                channel=channel, ts=thread_ts, limit=THREAD_PAGE_SIZE, cursor=cursor or None
            )
            messages += list(response.get("messages") or [])
            cursor = (response.get("response_metadata") or {}).get("next_cursor") or ""
            if not response.get("has_more") or not cursor:
                break
    except SlackApiError as exc:
        log.warning("thread history unavailable: %s", exc.response.get("error"))
        if not messages:
            return (), ()
    bot = context.bot_user_id or ""
    return turns_from_messages(messages, bot, before), answers_among(messages, bot, before)


async def dm_turns(
    client: AsyncWebClient, channel: str, before: str, context: Any
) -> tuple[History, tuple[str, ...]]:
    """The DM's recent turns and the ids of the answers among them."""
    oldest = f"{max(float(before) - DM_HISTORY_SECONDS, 0):.6f}"
    try:
        response = await client.conversations_history(
            channel=channel, latest=before, oldest=oldest, limit=2 * HISTORY_TURNS + 2
        )
    except SlackApiError as exc:
        log.warning("DM history unavailable: %s", exc.response.get("error"))
        return (), ()
    messages = sorted(response.get("messages") or [], key=lambda m: float(m.get("ts", "0")))
    bot = context.bot_user_id or ""
    return turns_from_messages(messages, bot, before), answers_among(messages, bot, before)
