"""Messages shown to one person (pure functions): a vote's state, the ``/codeask ask``
reply, the note that more could be answered in private; and a private answer once its
asker shares it with the channel.

Every text a user wrote is escaped and ``verbatim``, and URLs in it are shown inert, as
in :mod:`bot.slack.render`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from bot.answer import Answer, AnsweredQuestion
from bot.chat import defang
from bot.slack.mrkdwn import MAX_SECTION_CHARS, escape
from bot.slack.render import (
    ACTION_PRIVATE,
    MAX_BLOCKS,
    SlackMessage,
    _button,
    answer_messages,
)

Block = dict[str, Any]

ACTION_UNDO = "codeask_feedback_undo"
ACTION_SHARE = "codeask_share_in_channel"
VOTED = {
    "helpful": ":thumbsup: You marked this answer helpful.",
    "wrong": ":thumbsdown: You marked this answer wrong; thanks, it helps us improve.",
}
UNVOTED_TEXT = "Your vote on this answer was removed."
SHARED_TEXT = "Shared in this channel."
ALREADY_SHARED_TEXT = "This answer is already shared in this channel."
QUESTION_CHARS = 2_000  # of a restated question; the rest is elided
_SLACK_USER = re.compile(r"^[UW][A-Z0-9]{2,20}$")


def vote_message(verdict: str, question_id: str) -> SlackMessage:
    """The clicker's vote as state, with the button that takes it back."""
    text = VOTED[verdict]
    return SlackMessage(
        text,
        [
            {"type": "section", "text": {"type": "mrkdwn", "text": text}},
            {
                "type": "actions",
                "block_id": f"codeask_vote:{question_id}",
                "elements": [_button("Undo", ACTION_UNDO, question_id)],
            },
        ],
    )


def unvoted_message() -> SlackMessage:
    return SlackMessage(UNVOTED_TEXT, [_context(UNVOTED_TEXT)])


def private_answer_messages(
    answer: Answer, question: str, question_id: str, web_base: str, *, shareable: bool
) -> list[SlackMessage]:
    """The ``/codeask ask`` reply: the question restated (Slack does not show what was
    typed after a slash command), the answer, and "Share in channel" when offered."""
    messages = answer_messages(answer, question_id, web_base)
    if shareable:
        messages = _with_button(messages, _button("Share in channel", ACTION_SHARE, question_id))
    asked = _context(f"*You asked:* {quoted(question)}")
    first = messages[0]
    if len(first.blocks) < MAX_BLOCKS:
        return [SlackMessage(first.text, [asked, *first.blocks]), *messages[1:]]
    return [SlackMessage(first.text, [asked]), *messages]


def shared_messages(answered: AnsweredQuestion, sharer: str, web_base: str) -> list[SlackMessage]:
    """A private answer as its asker shares it in the channel: who shared it and what
    they asked, then the answer as they saw it (its notes, sources and buttons)."""
    answer = Answer(answered.question, answered.text, answered.sources, notes=list(answered.notes))
    messages = answer_messages(answer, answered.question_id, web_base)
    who = f"<@{sharer}>" if _SLACK_USER.match(sharer) else "Someone"
    shared = _context(f":speech_balloon: {who} shared an answer to: {quoted(answered.question)}")
    first = messages[0]
    if len(first.blocks) < MAX_BLOCKS:
        return [SlackMessage(first.text, [shared, *first.blocks]), *messages[1:]]
    return [SlackMessage(first.text, [shared]), *messages]


def withheld_message(note: str, question_id: str, *, offer_dm: bool) -> SlackMessage:
    """For the asker alone: what their access left out here, and the way to more."""
    text = f":lock: {escape(note)}"
    blocks: list[Block] = [_context(text)]
    if offer_dm:
        blocks.append(
            {
                "type": "actions",
                "block_id": f"codeask_private:{question_id}",
                "elements": [
                    _button(":lock: Answer me in a DM", ACTION_PRIVATE, question_id, "primary")
                ],
            }
        )
    return SlackMessage(note, blocks)


def quoted(question: str) -> str:
    """A question someone typed, as inert mrkdwn: escaped, URLs broken, within limits."""
    text = escape(defang(" ".join(question.split())))
    if len(text) > QUESTION_CHARS:
        text = text[: QUESTION_CHARS - 1]
        entity = text.rfind("&")
        if entity > text.rfind(";"):  # never end inside "&amp;", "&lt;" or "&gt;"
            text = text[:entity]
        text += "…"
    return text or "(no question)"


def _with_button(messages: Sequence[SlackMessage], button: Block) -> list[SlackMessage]:
    """``messages`` with ``button`` added to the answer's row of buttons (the last one)."""
    out = list(messages)
    last = out[-1]
    blocks = [
        {**b, "elements": [*b["elements"], button]}
        if b.get("type") == "actions" and str(b.get("block_id", "")).startswith("codeask_answer:")
        else b
        for b in last.blocks
    ]
    out[-1] = SlackMessage(last.text, blocks)
    return out


def _context(text: str) -> Block:
    return {
        "type": "context",
        "elements": [{"type": "mrkdwn", "text": text[:MAX_SECTION_CHARS], "verbatim": True}],
    }
