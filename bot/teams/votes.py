"""A vote on an answer card as the voter sees it (pure functions over card data).

A vote button is an ``Action.Execute``; the bot answers its ``adaptiveCard/action`` invoke
with the answer card built again from the stored answer, showing the vote as state ("You
marked this answer helpful.") with a button to change it and one to undo it. Teams shows
that card to the clicker alone; everyone else keeps the card as posted.
"""

from __future__ import annotations

from typing import Any

from bot.answer import Answer, AnsweredQuestion
from bot.teams.elements import text_block
from bot.teams.render import (
    CARD_BUDGET,
    CARD_CONTENT_TYPE,
    FEEDBACK_ACTION,
    UNDO,
    VERDICT_TITLES,
    Card,
    answer_card,
    feedback_action,
)

VOTED_TEXT = {
    "helpful": "You marked this answer helpful.",
    "wrong": "You marked this answer wrong or unhelpful; thanks, it helps us improve.",
}
UNDO_TITLE = "Undo"
STATE_ROOM = 1_000  # bytes kept free under the card budget for the vote's line and buttons


def voted_answer_card(answered: AnsweredQuestion, vote: str | None, web_base: str) -> Card:
    """The stored answer's card, as it is posted, with ``vote`` (None: no vote) shown."""
    answer = Answer(
        answered.question,
        answered.text,
        answered.sources,
        found=answered.found,
        notes=list(answered.notes),
    )
    card = answer_card(
        answer, answered.question_id, web_base=web_base, budget=CARD_BUDGET - STATE_ROOM
    )
    return with_vote(card, answered.question_id, vote)


def with_vote(card: Card, question_id: str, vote: str | None) -> Card:
    """``card`` with its vote buttons for someone whose vote is ``vote``: the other
    verdicts and Undo after the line that says what they chose; other actions stay."""
    if vote is None:
        return card
    others = [a for a in card.get("actions", []) if not _is_vote(a)]
    votes = [
        feedback_action(title, question_id, verdict)
        for verdict, title in VERDICT_TITLES.items()
        if verdict != vote
    ]
    state = text_block(VOTED_TEXT[vote], subtle=True, spacing="Medium")
    return {
        **card,
        "body": [*card["body"], state],
        "actions": [*votes, feedback_action(UNDO_TITLE, question_id, UNDO), *others],
    }


def card_invoke_body(card: Card) -> dict[str, Any]:
    """The ``adaptiveCard/action`` response that shows ``card`` in place of the clicked one."""
    return {"statusCode": 200, "type": CARD_CONTENT_TYPE, "value": card}


def _is_vote(action: dict[str, Any]) -> bool:
    data = action.get("data")
    return isinstance(data, dict) and data.get("action") == FEEDBACK_ACTION
