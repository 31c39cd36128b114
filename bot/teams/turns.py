"""What the bot does with each Teams activity: questions, commands, feedback, greetings.

Users are identified by their AAD object id (``from.aadObjectId``), never by display
name. The place decides the audience: a personal chat is the asker's own (``dm``); a team
channel and a group chat are shown to everyone there (``channel``), so the audience policy
of ``acl.permissions`` applies to both.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from botbuilder.core import ActivityHandler, InvokeResponse, TurnContext
from botbuilder.schema import (
    Activity,
    ActivityTypes,
    Attachment,
    ChannelAccount,
    ConversationAccount,
    ConversationParameters,
)

from acl import Place, Principal
from bot.answer import seen_here
from bot.chat import (
    CommandResult,
    Commands,
    Invoker,
    command_context,
    defang,
    record_feedback,
    remove_feedback,
)
from bot.teams.elements import escape, text_block
from bot.teams.render import (
    CARD_CONTENT_TYPE,
    UNDO,
    Card,
    Feedback,
    answer_card,
    command_card,
    help_card,
    parse_feedback,
    parse_retry,
    progress_text,
    text_card,
)
from bot.teams.votes import card_invoke_body, voted_answer_card

if TYPE_CHECKING:
    from bot.answer import Answer, AnsweredQuestion, Asker, Question
    from bot.services import Services

log = logging.getLogger(__name__)

PLATFORM = "teams"
WELCOME = (
    "Hi! I answer questions about the indexed code, citing the exact lines. Mention me in a "
    "channel or write to me here. Send **help** for commands; **link** connects your GitHub "
    "account so private repositories you can read are included in our personal chat."
)
EMPTY = "Ask me a question about the code, or send **help**."
NO_IDENTITY = "I could not tell who you are (no Azure AD id on the message), so I did not answer."
OTHER_TENANT = "This codeask bot serves another organization."
NOT_HERE = "That answer is not available to you here; please ask me again."
ASKED_AGAIN = "Asked again."
UNKNOWN_ANSWER = "That answer is unknown."
ANSWER_HERE = "answer_here"  # the note's button: the question again, in the personal chat
ABOUT_YOUR_QUESTION = "About your question in the shared conversation: "
SENT_PRIVATELY = "I sent you the result in our personal chat."
NOT_SENT_PRIVATELY = (
    "The result of that command is private and I could not reach you in a personal chat. "
    "Open a chat with me and send the command there."
)
USER_COMMANDS = {"help", "whoami", "link", "unlink"}
SUBCOMMANDS = {"repo": {"add", "list", "remove", "reindex"}, "channel": {"grant", "revoke"}}
_AT_TAG = re.compile(r"<at>(.*?)</at>", re.IGNORECASE | re.DOTALL)


def card_message(card: Card) -> Activity:
    return Activity(
        type=ActivityTypes.message,
        attachments=[Attachment(content_type=CARD_CONTENT_TYPE, content=card)],
    )


def looks_like_command(text: str) -> bool:
    """Whether a message is a text command rather than a question (``repo list``, ``help``)."""
    words = text.split()
    if not words:
        return False
    head = words[0].lower()
    if head in USER_COMMANDS:
        return len(words) == 1
    if head == "status":
        return len(words) == 1 or (len(words) == 2 and "/" in words[1])
    return len(words) >= 2 and words[1].lower() in SUBCOMMANDS.get(head, set())


def message_text(activity: Activity) -> str:
    """The message without the bot's @mention (Teams puts ``<at>Name</at>`` in the text)."""
    text = activity.text or ""
    bot_id = activity.recipient.id if activity.recipient else None
    for entity in activity.entities or []:
        props = entity.additional_properties or {}
        mentioned = props.get("mentioned") or {}
        if (entity.type or "").lower() == "mention" and mentioned.get("id") == bot_id:
            text = text.replace(props.get("text") or f"<at>{mentioned.get('name', '')}</at>", " ")
    text = _AT_TAG.sub(lambda m: m.group(1), text)  # other people's mentions keep their names
    return " ".join(text.replace("&nbsp;", " ").split())


def place_of(activity: Activity) -> Place:
    """``dm`` for a personal chat; otherwise the team channel or the group chat's id.

    Only a conversation that says it is personal, and not a group, is a DM: one with no
    type (other Bot Framework channels) counts as shared, so it never gets the asker's
    private access.
    """
    conversation = activity.conversation
    if conversation is None:
        return Place("channel", "")
    kind = conversation.conversation_type or ""
    if kind == "personal" and not conversation.is_group:
        return Place("dm")
    data = activity.channel_data if isinstance(activity.channel_data, dict) else {}
    channel = data.get("channel") if isinstance(data.get("channel"), dict) else None
    if kind == "channel" and channel and channel.get("id"):
        return Place("channel", str(channel["id"]))
    # A channel conversation id names the thread ("19:…@thread.tacv2;messageid=…").
    return Place("channel", (conversation.id or "").split(";", 1)[0])


def tenant_of(activity: Activity) -> str:
    data = activity.channel_data if isinstance(activity.channel_data, dict) else {}
    tenant = data.get("tenant") if isinstance(data.get("tenant"), dict) else {}
    conversation_tenant = activity.conversation.tenant_id if activity.conversation else None
    return str((tenant or {}).get("id") or conversation_tenant or "")


class CodeaskTeamsHandler(ActivityHandler):
    def __init__(self, services: Services, asker: Asker) -> None:
        self.services = services
        self.settings = services.bot
        self.asker = asker
        self._commands: Commands | None = None

    # --- activities ---------------------------------------------------------------------

    async def on_message_activity(self, turn_context: TurnContext) -> None:
        activity = turn_context.activity
        asked_again = _answer_here(activity.value)
        if asked_again is not None:
            await self._answer_here(turn_context, asked_again)
            return
        feedback = parse_feedback(activity.value)
        if feedback is not None:
            # An Action.Submit from a card posted before votes became Action.Execute: it
            # counts, and nothing is said in the conversation (a channel would see it).
            if await self._store_feedback(activity, feedback) is None:
                log.info("Teams: a vote on an answer the voter may not act on was ignored")
            return
        retry = parse_retry(activity.value)
        if retry is not None:
            if not await self._retry(turn_context, retry):
                await self._reply(turn_context, text_card(NOT_HERE, attention=True))
            return
        if activity.value is not None and not activity.text:
            log.info("Teams: ignoring a card submission that is not feedback or a retry")
            return
        refusal = self._refusal(activity)
        if refusal:
            await self._reply(turn_context, text_card(refusal, attention=True))
            return
        text = message_text(activity)
        if not text:
            await self._reply(turn_context, text_card(EMPTY))
        elif looks_like_command(text):
            await self._command(turn_context, text)
        else:
            await self._question(turn_context, text)

    async def on_members_added_activity(
        self, members_added: list[ChannelAccount], turn_context: TurnContext
    ) -> None:
        bot_id = turn_context.activity.recipient.id if turn_context.activity.recipient else None
        if any(m.id == bot_id for m in members_added):
            await self._reply(turn_context, text_card(WELCOME))

    async def on_invoke_activity(self, turn_context: TurnContext) -> InvokeResponse | None:
        activity = turn_context.activity
        if activity.name != "adaptiveCard/action":
            return await super().on_invoke_activity(turn_context)
        retry = parse_retry(activity.value)
        if retry is not None and not self._refusal(activity):
            # Teams waits for the invoke's response: the new answer is sent before it.
            asked = await self._retry(turn_context, retry)
            return InvokeResponse(
                status=200, body=_invoke_message(ASKED_AGAIN if asked else NOT_HERE)
            )
        feedback = parse_feedback(activity.value)
        if feedback is None or self._refusal(activity):
            return InvokeResponse(
                status=400, body=_invoke_message("That action is not supported.", 400)
            )
        answered = await self._store_feedback(activity, feedback)
        if answered is None:
            return InvokeResponse(status=200, body=_invoke_message(UNKNOWN_ANSWER))
        vote = None if feedback.verdict == UNDO else feedback.verdict
        card = voted_answer_card(answered, vote, self.services.acl.github_web_url)
        return InvokeResponse(status=200, body=card_invoke_body(card))

    # --- questions ----------------------------------------------------------------------

    async def _retry(self, turn_context: TurnContext, question_id: str) -> bool:
        """Ask an answer's question again, for the clicker where they clicked and with the
        access they have there now; False (nothing asked) when they may not act on it."""
        activity = turn_context.activity
        if self._refusal(activity):
            return False
        answered = await asyncio.to_thread(self.asker.answered, question_id)
        clicker = Principal(PLATFORM, _aad_id(activity))
        if answered is None or not seen_here(answered, clicker, place_of(activity)):
            return False
        await self._question(turn_context, answered.question)
        return True

    async def _question(self, turn_context: TurnContext, text: str) -> None:
        from bot.answer import Question

        activity = turn_context.activity
        place = place_of(activity)
        question = Question(Principal(PLATFORM, _aad_id(activity)), place, text)
        log.info("Teams question %s from activity %s in %s", question.id, activity.id, place)
        await turn_context.send_activity(Activity(type=ActivityTypes.typing))
        # One message shows the steps and the text as it is written, in a personal chat
        # and in a channel's thread alike; it becomes the answer. A channel keeps the
        # typing indicator going at every step too.
        sent = await turn_context.send_activity(progress_text(""))
        progress = _Progress(
            turn_context, sent.id, self.settings.teams_update_seconds, self._connector_failed
        )
        typing = _Typing(turn_context, self._connector_failed) if place.kind == "channel" else None

        def step(text: str) -> None:
            progress.step(text)
            if typing is not None:
                typing.step(text)

        try:
            answer = await self.asker.ask(question, progress.push, step)
        finally:
            await progress.stop()
        started = time.perf_counter()
        card = answer_card(answer, question.id, web_base=self.services.acl.github_web_url)
        self.services.metrics.stage("render", time.perf_counter() - started)
        message = card_message(card)
        message.id = progress.activity_id
        await turn_context.update_activity(message)
        if answer.asker_note:
            await self._tell_asker(turn_context, question, answer)

    async def _tell_asker(
        self, turn_context: TurnContext, question: Question, answer: Answer
    ) -> None:
        """What the asker's access left out of a shared answer, in their personal chat."""
        card = asker_note_card(question.text, question.id, answer)
        if not await self._send_privately(turn_context, card):
            log.info("Teams question %s: the private note could not be delivered", question.id)

    async def _answer_here(self, turn_context: TurnContext, question_id: str) -> None:
        """ "Answer me here", clicked in the personal chat: the clicker's own question from a
        shared chat, answered again with their own access. Only its asker, only in a
        personal chat; anyone else learns nothing of it."""
        activity = turn_context.activity
        refusal = self._refusal(activity)
        if refusal:
            await self._reply(turn_context, text_card(refusal, attention=True))
            return
        answered = await asyncio.to_thread(self.asker.answered, question_id)
        clicker = Principal(PLATFORM, _aad_id(activity))
        if answered is None or answered.asker != clicker or place_of(activity).kind != "dm":
            await self._reply(turn_context, text_card(NOT_HERE))
            return
        await self._question(turn_context, answered.question)

    # --- commands -----------------------------------------------------------------------

    async def _command(self, turn_context: TurnContext, text: str) -> None:
        activity = turn_context.activity
        place = place_of(activity)
        invoker = Invoker(PLATFORM, _aad_id(activity), place.id or None)
        result: CommandResult = await asyncio.to_thread(self.commands.run, invoker, text)
        is_help = text.strip().lower().split(" ")[0] in ("help", "--help", "-h")
        card = help_card(result.rows) if is_help and not result.error else command_card(result)
        if place.kind == "dm" or not result.ephemeral or result.error:
            await self._reply(turn_context, card)
            return
        # Teams has no ephemeral messages: a private result goes to the invoker's 1:1 chat,
        # never to the channel (it may be a one-time link or private repository names).
        delivered = await self._send_privately(turn_context, card)
        await self._reply(
            turn_context, text_card(SENT_PRIVATELY if delivered else NOT_SENT_PRIVATELY)
        )

    @property
    def commands(self) -> Commands:
        if self._commands is None:
            ctx = command_context(self.services)
            teams_admins = {
                f"{PLATFORM}:{i.strip()}"
                for i in self.settings.teams_admins.split(",")
                if i.strip()
            }
            self._commands = Commands(replace(ctx, admins=ctx.admins | teams_admins))
        return self._commands

    async def _send_privately(self, turn_context: TurnContext, card: Card) -> bool:
        activity = turn_context.activity
        connector = turn_context.turn_state.get(turn_context.adapter.BOT_CONNECTOR_CLIENT_KEY)
        tenant = tenant_of(activity)
        params = ConversationParameters(
            is_group=False,
            bot=activity.recipient,
            members=[ChannelAccount(id=activity.from_property.id)],
            tenant_id=tenant or None,
            channel_data={"tenant": {"id": tenant}} if tenant else None,
        )
        try:
            created = await connector.conversations.create_conversation(params)
            message = card_message(card)
            message.conversation = ConversationAccount(id=created.id)
            message.from_property = activity.recipient
            await connector.conversations.send_to_conversation(created.id, message)
            return True
        except Exception as exc:
            log.warning("Teams: could not open a personal chat for a command result: %s", exc)
            self._connector_failed(exc)
            return False

    def _connector_failed(self, exc: Exception) -> None:
        """Count a failed Bot Connector call (its exception class and HTTP status)."""
        try:
            self.services.metrics.upstream_error("teams", connector_error_kind(exc))
        except Exception:  # counting never changes what the caller sees
            log.exception("a Teams API error could not be counted")

    # --- helpers ------------------------------------------------------------------------

    def _refusal(self, activity: Activity) -> str:
        if not _aad_id(activity):
            return NO_IDENTITY
        tenant = self.settings.teams_tenant_id
        if tenant and tenant_of(activity) != tenant:
            return OTHER_TENANT
        return ""

    async def _store_feedback(
        self, activity: Activity, feedback: Feedback
    ) -> AnsweredQuestion | None:
        """Record (or undo) a vote only from someone who may see the answer where they
        clicked; the answer voted on, or None when refused."""
        user = _aad_id(activity)
        if not user:
            return None
        answered = await asyncio.to_thread(self.asker.answered, feedback.question_id)
        if answered is None or not seen_here(
            answered, Principal(PLATFORM, user), place_of(activity)
        ):
            return None
        engine = self.services.engine
        if feedback.verdict == UNDO:
            await asyncio.to_thread(remove_feedback, engine, feedback.question_id, PLATFORM, user)
        else:
            await asyncio.to_thread(
                record_feedback, engine, feedback.question_id, PLATFORM, user, feedback.verdict
            )
        return answered

    async def _reply(self, turn_context: TurnContext, card: Card) -> None:
        # send_activity replies to the incoming activity: in a channel, into its thread.
        await turn_context.send_activity(card_message(card))


class _Progress:
    """Edits the 1:1 placeholder with the text generated so far, at most every ``interval``."""

    def __init__(
        self,
        turn_context: TurnContext,
        activity_id: str,
        interval: float,
        on_error: Callable[[Exception], None] = lambda _exc: None,
    ) -> None:
        self.activity_id = activity_id
        self._on_error = on_error
        self._context = turn_context
        self._interval = interval
        self._loop = asyncio.get_running_loop()
        self._text = ""
        self._steps: list[str] = []
        self._shown: tuple[str, ...] = ("",)
        self._changed = asyncio.Event()
        self._done = False
        self._updating = False
        self._task = asyncio.create_task(self._run())

    def push(self, piece: str) -> None:
        """Called by the pipeline from its worker thread."""
        self._loop.call_soon_threadsafe(self._append, piece)

    def step(self, text: str) -> None:
        """A tool step of an agentic answer; the text before it was the model thinking."""
        self._loop.call_soon_threadsafe(self._add_step, text)

    def _append(self, piece: str) -> None:
        self._text += piece
        self._changed.set()

    def _add_step(self, text: str) -> None:
        self._steps.append(text)
        self._text = ""
        self._changed.set()

    async def _run(self) -> None:
        while not self._done:
            await self._changed.wait()
            self._changed.clear()
            state = (self._text, *self._steps)
            if self._done or state == self._shown:
                continue
            self._shown = state
            update = Activity(
                type=ActivityTypes.message,
                id=self.activity_id,
                text=progress_text(state[0], state[1:]),
            )
            self._updating = True
            try:
                await self._context.update_activity(update)
            except Exception as exc:  # a lost progress edit is cosmetic; the final one matters
                log.warning("Teams: progress update failed: %s", exc)
                self._on_error(exc)
            finally:
                self._updating = False
            if not self._done:
                await asyncio.sleep(self._interval)

    async def stop(self) -> None:
        """No edit starts after this returns; an edit in flight is allowed to finish first."""
        self._done = True
        self._changed.set()
        if not self._updating:
            self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task


class _Typing:
    """In a channel only the typing indicator shows progress: sent again at every tool step
    of an agentic answer, so it lasts while the model reads."""

    def __init__(
        self, turn_context: TurnContext, on_error: Callable[[Exception], None] = lambda _e: None
    ) -> None:
        self._context = turn_context
        self._on_error = on_error
        self._loop = asyncio.get_running_loop()
        self._sending: set[asyncio.Task[None]] = set()

    def step(self, _text: str) -> None:
        """Called by the pipeline from its worker thread; the step text stays private."""
        self._loop.call_soon_threadsafe(self._start)

    def _start(self) -> None:
        task = asyncio.ensure_future(self._send())
        self._sending.add(task)  # held until done, or the loop could drop it half-way
        task.add_done_callback(self._sending.discard)

    async def _send(self) -> None:
        try:
            await self._context.send_activity(Activity(type=ActivityTypes.typing))
        except Exception as exc:  # cosmetic: the answer still goes out
            log.warning("Teams: typing indicator failed: %s", exc)
            self._on_error(exc)


def connector_error_kind(exc: Exception) -> str:
    """A failed Bot Connector call as a bounded label: the exception class, and the HTTP
    status where the SDK kept the response ("ErrorResponseException_403")."""
    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", None) or getattr(response, "status", None)
    name = type(exc).__name__[:40]
    return f"{name}_{status}" if isinstance(status, int) else name


def asker_note_card(question: str, question_id: str, answer: Answer) -> Card:
    """The note on what the asker's access left out of a shared answer, and, when more
    could be answered in the personal chat, the button that asks there."""
    asked = escape(defang(" ".join(question.split())[:500]))
    card = text_card(answer.asker_note)
    card["body"].insert(0, text_block(f"{ABOUT_YOUR_QUESTION}“{asked}”", subtle=True))
    if answer.withheld_private:
        data = {"action": ANSWER_HERE, "question_id": question_id}
        card["actions"] = [{"type": "Action.Submit", "title": "Answer me here", "data": data}]
    return card


def _aad_id(activity: Activity) -> str:
    sender = activity.from_property
    return str(getattr(sender, "aad_object_id", "") or "") if sender else ""


def _answer_here(value: object) -> str | None:
    """The question id an "Answer me here" submission names, or None."""
    if not isinstance(value, dict) or value.get("action") != ANSWER_HERE:
        return None
    question_id = value.get("question_id")
    return question_id if isinstance(question_id, str) and question_id else None


def _invoke_message(text: str, status: int = 200) -> dict[str, Any]:
    return {
        "statusCode": status,
        "type": "application/vnd.microsoft.activity.message",
        "value": text,
    }
