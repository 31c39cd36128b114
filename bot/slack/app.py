"""The Slack adapter: slack-bolt's ``AsyncApp`` on the ``codeask serve`` aiohttp server.

Thin by design: Slack events become a :class:`bot.answer.asking.Question` or a command line for
:mod:`bot.chat.commands`; answers are rendered by :mod:`bot.slack.render`. Bolt verifies each
request's signature and timestamp and acknowledges within Slack's 3 seconds; listeners
then run in the background. Slack redelivers an event it thinks we missed, so event ids
are claimed once in the metadata database (shared by every replica).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import re
import time
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response
from slack_bolt.app.async_app import AsyncApp
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from acl import Place, Principal
from bot.answer import Answer, AnsweredQuestion, Asker, History, Question, seen_here
from bot.chat import (
    SERVICES,
    SLACK_MAX_AGE_SECONDS,
    BadRequest,
    CommandResult,
    Commands,
    Invoker,
    Mount,
    bad_request,
    claim_delivery,
    command_context,
    decode_utf8,
    forget_delivery,
    is_admin,
    read_body,
    record_feedback,
    remove_feedback,
    slack_body,
    verify_slack_signature,
)
from bot.services import Services
from bot.slack.errors import CountingErrors
from bot.slack.home import dm_url, gather_home, home_view
from bot.slack.private import (
    ACTION_SHARE,
    ACTION_UNDO,
    ALREADY_SHARED_TEXT,
    SHARED_TEXT,
    private_answer_messages,
    shared_messages,
    unvoted_message,
    vote_message,
    withheld_message,
)
from bot.slack.render import (
    ACTION_HELPFUL,
    ACTION_PRIVATE,
    ACTION_RETRY,
    ACTION_SOURCES,
    ACTION_WRONG,
    OPEN_URL_PREFIX,
    SEARCHING_TEXT,
    SlackMessage,
    answer_messages,
    help_message,
    source_details,
    text_message,
)
from bot.slack.stream import StreamingReply, call_slack
from bot.slack.threads import dm_turns, strip_mentions, thread_turns
from indexer.errors import AccessDenied, ConfigError

log = logging.getLogger(__name__)

EVENTS_PATH = "/slack/events"
COMMAND = "/codeask"
MAX_SLACK_BYTES = 1024 * 1024  # far above any event, command or interaction Slack sends
# What must be a single header for our checks and bolt's parser to read the same request.
SLACK_HEADERS = ("Content-Type", "X-Slack-Signature", "X-Slack-Request-Timestamp")
# A signature verifies for five minutes either side of its timestamp; Slack retries an
# event within minutes (after 1 and 5), so an hour covers every retry of an event id.
SIGNATURE_RETENTION = timedelta(seconds=2 * SLACK_MAX_AGE_SECONDS + 300)
EVENT_ID_RETENTION = timedelta(hours=1)
SHARE_RETENTION = timedelta(days=7)  # as long as the answer's buttons work (bot_answers)
FAILURE_TEXT = (
    "Sorry, something went wrong and I could not answer; the error was logged (reference {id})."
)
NOT_HERE_TEXT = "That answer is not available to you here; please ask me again."
NOT_SHARED_TEXT = (
    "I could not post in this channel; invite me with `/invite @codeask` and try again."
)
EMPTY_QUESTION_TEXT = (
    "Ask me a question about the code, e.g. `@codeask where is the retry policy configured?`"
)


def slack_mount(asker: Asker | None = None) -> Mount:
    """A mount for ``bot.server.app.create_app``; ``asker`` defaults to one over the services."""

    def mount(app: web.Application) -> None:
        services = app[SERVICES]
        settings = services.bot
        if settings.slack_socket_mode:
            bot = SlackBot(services, asker or services.asker)
            _run_socket_mode(app, bot)
            return
        if not (settings.slack_bot_token and settings.slack_signing_secret):
            app.router.add_post(EVENTS_PATH, _not_configured)
            return
        bot = SlackBot(services, asker or services.asker)
        app.router.add_post(EVENTS_PATH, bot.handle)

    return mount


mount_slack: Mount = slack_mount()


async def _not_configured(request: web.Request) -> web.Response:
    return web.json_response(
        {
            "error": "Slack is not configured: set CODEASK_SLACK_BOT_TOKEN and "
            "CODEASK_SLACK_SIGNING_SECRET."
        },
        status=503,
    )


def _run_socket_mode(app: web.Application, bot: SlackBot) -> None:
    from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler

    if not (bot.services.bot.slack_app_token and bot.services.bot.slack_bot_token):
        raise ConfigError(
            "Socket Mode needs CODEASK_SLACK_APP_TOKEN (xapp-…) and CODEASK_SLACK_BOT_TOKEN."
        )
    handler = AsyncSocketModeHandler(bot.app, bot.services.bot.slack_app_token)

    async def connect(_: web.Application) -> None:
        await handler.connect_async()

    async def close(_: web.Application) -> None:
        await handler.close_async()

    app.on_startup.append(connect)
    app.on_cleanup.append(close)


class SlackBot:
    """The bolt app and its listeners; one per process."""

    def __init__(self, services: Services, asker: Asker) -> None:
        self.services = services
        self.asker = asker
        settings = services.bot
        self.client = AsyncWebClient(
            token=settings.slack_bot_token, base_url=settings.slack_api_url
        )
        # First, so it sees every failure (bolt copies the handlers into each request's
        # client); it never retries, so the default retry handlers after it still do.
        counting = CountingErrors(lambda kind: services.metrics.upstream_error("slack", kind))
        self.client.retry_handlers.insert(0, counting)
        self.app = AsyncApp(
            client=self.client,
            signing_secret=settings.slack_signing_secret or None,
            # Listeners post their own failure messages; bolt must not retry or swallow.
            raise_error_for_unhandled_request=False,
        )
        self.app.middleware(self._drop_redeliveries)
        self.app.event("app_mention")(self._on_mention)
        self.app.event("message")(self._on_message)
        self.app.event("app_home_opened")(self._on_home)
        self.app.command(COMMAND)(self._on_command)
        self.app.action(ACTION_HELPFUL)(self._on_feedback)
        self.app.action(ACTION_WRONG)(self._on_feedback)
        self.app.action(ACTION_UNDO)(self._on_undo)
        self.app.action(ACTION_SHARE)(self._on_share)
        self.app.action(ACTION_SOURCES)(self._on_sources)
        self.app.action(ACTION_PRIVATE)(self._on_private)
        self.app.action(ACTION_RETRY)(self._on_retry)
        self.app.action(re.compile(f"^{OPEN_URL_PREFIX}"))(self._on_link_button)

    async def handle(self, request: web.Request) -> web.Response:
        """``POST /slack/events``: events, slash commands and interactions.

        The signature is checked on the raw bytes before anything parses them (401), then
        the body's shape (400, 413, 415); bolt sees only requests that passed both.
        """
        if any(len(request.headers.getall(name, ())) > 1 for name in SLACK_HEADERS):
            return web.json_response({"error": "a Slack header is repeated"}, status=400)
        raw = await read_body(request, MAX_SLACK_BYTES)
        secret = self.services.bot.slack_signing_secret
        try:
            verify_slack_signature(secret, request.headers, raw, time.time())
        except AccessDenied as exc:
            log.info("Slack request refused: %s", exc)
            return web.json_response({"error": "unauthorized"}, status=401)
        try:
            text = decode_utf8(raw)
            slack_body(request.headers.get("Content-Type", ""), text)
        except BadRequest as exc:
            log.info("signed Slack request refused: %s", exc)
            return bad_request(exc)
        bolt_request = AsyncBoltRequest(
            body=text,
            query=request.query_string,
            headers=request.headers,  # type: ignore[arg-type]
        )
        return await to_aiohttp_response(await self.app.async_dispatch(bolt_request))

    # --- middleware ----------------------------------------------------------------

    async def _drop_redeliveries(
        self, req: AsyncBoltRequest, body: dict[str, Any], next: Callable[[], Awaitable[None]]
    ) -> BoltResponse | None:
        """Run each request once across replicas: a repeated signature is a replay (a slash
        command or a click carries no id of its own; Slack re-signs every retry), a repeated
        event id is Slack's redelivery. Both are acknowledged and dropped."""
        engine = self.services.engine
        signature = (req.headers.get("x-slack-signature") or [""])[0]  # none in Socket Mode
        if signature:
            key = f"slack-sig:{signature}"
            first = await asyncio.to_thread(
                claim_delivery, engine, key, "slack-sig", SIGNATURE_RETENTION
            )
            if not first:
                log.info("Slack request replayed with a signature already used; ignored")
                return BoltResponse(status=200, body="")
        event_id = body.get("event_id") if isinstance(body, dict) else None
        if event_id:
            first = await asyncio.to_thread(
                claim_delivery, engine, f"slack:{event_id}", "slack", EVENT_ID_RETENTION
            )
            if not first:
                log.info("Slack redelivered %s; already handled", event_id)
                return BoltResponse(status=200, body="")
        await next()
        return None

    # --- asking --------------------------------------------------------------------

    async def _on_mention(self, event: dict[str, Any], context: Any) -> None:
        channel = event["channel"]
        thread_ts = event.get("thread_ts") or event["ts"]
        place = Place("dm") if channel.startswith("D") else Place("channel", channel)
        history: History = ()
        earlier: tuple[str, ...] = ()
        if event.get("thread_ts"):
            history, earlier = await thread_turns(
                self.client, channel, event["thread_ts"], event["ts"], context
            )
        await self._ask(context, event, channel, thread_ts, place, history, earlier)

    async def _on_message(self, event: dict[str, Any], context: Any) -> None:
        subtype = event.get("subtype")
        if event.get("channel_type") != "im" or event.get("bot_id"):
            return  # channel messages arrive as app_mention; bot posts are not questions
        if subtype and subtype != "file_share":
            return  # edits, deletions, joins: not questions (a message with a file is one)
        channel = event["channel"]
        thread_ts = event.get("thread_ts")
        if thread_ts:
            history, earlier = await thread_turns(
                self.client, channel, thread_ts, event["ts"], context
            )
        else:
            history, earlier = await dm_turns(self.client, channel, event["ts"], context)
        await self._ask(context, event, channel, thread_ts, Place("dm"), history, earlier)

    async def _ask(
        self,
        context: Any,
        event: dict[str, Any],
        channel: str,
        thread_ts: str | None,
        place: Place,
        history: History,
        earlier: tuple[str, ...] = (),
    ) -> None:
        text = strip_mentions(event.get("text") or "")
        if not text:
            await self._say(channel, thread_ts, text_message(EMPTY_QUESTION_TEXT))
            return
        principal = Principal("slack", f"{context.team_id}:{event['user']}")
        question = Question(principal, place, text, history, earlier=earlier)
        await self.answer(question, channel, thread_ts)

    async def answer(self, question: Question, channel: str, thread_ts: str | None) -> None:
        """Placeholder now, streamed edits, then the final answer; a message even on failure."""
        reply = StreamingReply(
            self.client,
            channel,
            thread_ts,
            self.services.bot.slack_update_seconds,
            assistant_thread=question.place.kind == "dm",
        )
        try:
            await reply.start()
            answer = await self.asker.ask(question, on_token=reply.feed, on_step=reply.step)
            started = time.perf_counter()
            messages = answer_messages(answer, question.id, self.services.acl.github_web_url)
            self.services.metrics.stage("render", time.perf_counter() - started)
            await reply.finish(messages)
            if answer.asker_note:
                await self._tell_asker(question, answer, reply.channel, thread_ts or reply.ts)
        except Exception:
            log.exception("question %s: could not deliver the answer", question.id)
            failure = text_message(FAILURE_TEXT.format(id=question.id))
            try:
                await reply.finish([failure])
            except Exception:
                log.exception("question %s: could not deliver the failure notice", question.id)

    async def _tell_asker(
        self, question: Question, answer: Answer, channel: str, thread_ts: str | None
    ) -> None:
        """What the asker's access left out of a channel answer, shown to them alone."""
        note = withheld_message(answer.asker_note, question.id, offer_dm=answer.withheld_private)
        try:
            await call_slack(
                self.client.chat_postEphemeral,
                channel=channel,
                user=question.principal.user_id.rpartition(":")[2],
                thread_ts=thread_ts,
                text=note.text,
                blocks=note.blocks,
            )
        except SlackApiError as exc:
            log.warning("question %s: the private note failed: %s", question.id, exc)

    async def _say(self, channel: str, thread_ts: str | None, message: SlackMessage) -> None:
        await call_slack(
            self.client.chat_postMessage,
            channel=channel,
            thread_ts=thread_ts,
            text=message.text,
            blocks=message.blocks,
        )

    # --- the slash command ------------------------------------------------------------

    async def _on_command(
        self, ack: Any, command: dict[str, Any], respond: Any, client: AsyncWebClient
    ) -> None:
        text = (command.get("text") or "").strip()
        head, _, rest = text.partition(" ")
        team, user, channel = command["team_id"], command["user_id"], command["channel_id"]
        if head.lower() == "ask":
            await self._ask_ephemeral(ack, respond, team, user, channel, rest.strip())
            return
        await ack()
        invoker = Invoker("slack", f"{team}:{user}", None if channel.startswith("D") else channel)
        try:
            commands = await self._commands(client, invoker, user)
            result = await asyncio.to_thread(commands.run, invoker, text)
        except Exception:
            log.exception("/codeask %r failed", head)
            result = CommandResult(
                ["Something went wrong running that command; the error was logged."], error=True
            )
        if head.lower() in ("", "help") and not result.error:
            message = help_message(result.rows, COMMAND)
        else:
            message = text_message(result.text)
        await respond(
            text=message.text,
            blocks=message.blocks,
            response_type="ephemeral" if result.ephemeral or result.error else "in_channel",
            unfurl_links=False,
            unfurl_media=False,
        )

    async def _ask_ephemeral(
        self, ack: Any, respond: Any, team: str, user: str, channel: str, text: str
    ) -> None:
        if not text:
            await ack(text="Usage: `/codeask ask <question>`")
            return
        await ack(response_type="ephemeral", text=f":mag: {SEARCHING_TEXT}")
        # Conservative: an ephemeral reply in a channel follows the channel's policy too.
        place = Place("dm") if channel.startswith("D") else Place("channel", channel)
        question = Question(Principal("slack", f"{team}:{user}"), place, text)
        await self._answer_ephemeral(respond, question)

    async def _answer_ephemeral(self, respond: Any, question: Question) -> None:
        """The answer as ephemeral replies, the first one replacing the message before it."""
        web = self.services.acl.github_web_url
        place, text = question.place, question.text
        try:
            answer = await self.asker.ask(question)
            shareable = answer.found and await self._channel_may_read(
                question.principal, place, frozenset(s.chunk.repo for s in answer.sources)
            )
            messages = private_answer_messages(answer, text, question.id, web, shareable=shareable)
            if answer.asker_note:  # a reply only the asker sees: the note may sit with it
                note = answer.asker_note
                messages.append(
                    withheld_message(note, question.id, offer_dm=answer.withheld_private)
                )
        except Exception:
            log.exception("question %s failed", question.id)
            messages = [text_message(FAILURE_TEXT.format(id=question.id))]
        for n, message in enumerate(messages):
            await respond(
                text=message.text,
                blocks=message.blocks,
                response_type="ephemeral",
                unfurl_links=False,
                unfurl_media=False,
                **({"replace_original": True} if n == 0 else {}),  # the "searching…" ack
            )

    async def _commands(self, client: AsyncWebClient, invoker: Invoker, user: str) -> Commands:
        ctx = command_context(self.services)
        if await self._is_slack_admin(client, invoker, user):
            ctx = dataclasses.replace(ctx, admins=ctx.admins | {invoker.qualified_id})
        return Commands(ctx)

    async def _is_slack_admin(self, client: AsyncWebClient, invoker: Invoker, user: str) -> bool:
        settings = self.services.bot
        ids = {u.strip() for u in settings.slack_admins.split(",") if u.strip()}
        if user in ids:
            return True
        if not settings.slack_workspace_admins:
            return False
        try:
            info = await client.users_info(user=user)
        except SlackApiError as exc:
            log.warning("users.info failed: %s; not treating as admin", exc.response.get("error"))
            return False
        profile = info.get("user") or {}
        return bool(profile.get("is_admin") or profile.get("is_owner"))

    # --- interactions -----------------------------------------------------------------

    async def _on_feedback(self, ack: Any, body: dict[str, Any], action: dict[str, Any]) -> None:
        await ack()
        if await self._authorized(body, action) is None:
            await self._ephemeral(body, NOT_HERE_TEXT)
            return
        verdict = "helpful" if action["action_id"] == ACTION_HELPFUL else "wrong"
        user = _action_user(body)
        await asyncio.to_thread(
            record_feedback, self.services.engine, action["value"], "slack", user, verdict
        )
        state = vote_message(verdict, action["value"])
        await self._ephemeral(body, state.text, state.blocks)

    async def _on_undo(
        self, ack: Any, body: dict[str, Any], action: dict[str, Any], respond: Any
    ) -> None:
        """Take back the clicker's vote; the confirmation they clicked says so instead."""
        await ack()
        if await self._authorized(body, action) is None:
            await self._ephemeral(body, NOT_HERE_TEXT)
            return
        await asyncio.to_thread(
            remove_feedback, self.services.engine, action["value"], "slack", _action_user(body)
        )
        done = unvoted_message()
        await self._private_reply(body, respond, done, replace=True)

    async def _on_share(
        self, ack: Any, body: dict[str, Any], action: dict[str, Any], respond: Any
    ) -> None:
        """Post a private answer in the channel, if its asker clicks and the channel may
        read every source of it now (access is decided again at the click)."""
        await ack()
        answered = await self._authorized(body, action)
        place = _click_place(body)
        if (
            answered is None
            or answered.asker != _clicker(body)
            or place.kind != "channel"
            or not answered.text
            or not await self._channel_may_read(_clicker(body), place, answered.repos)
        ):
            await self._private_reply(body, respond, text_message(NOT_HERE_TEXT))
            return
        # Shared once: a second click (or a replayed one) must not post the answer again.
        key = f"slack-share:{answered.question_id}"
        engine = self.services.engine
        if not await asyncio.to_thread(claim_delivery, engine, key, "slack-share", SHARE_RETENTION):
            await self._private_reply(body, respond, text_message(ALREADY_SHARED_TEXT))
            return
        web = self.services.acl.github_web_url
        thread: str | None = None
        try:
            for message in shared_messages(answered, body["user"]["id"], web):
                posted = await call_slack(
                    self.client.chat_postMessage,
                    channel=place.id,
                    thread_ts=thread,
                    text=message.text,
                    blocks=message.blocks,
                )
                thread = thread or str(posted["ts"])
        except SlackApiError as exc:
            log.warning("sharing %s failed: %s", answered.question_id, exc.response.get("error"))
            if thread is None:  # nothing was posted: the asker may try again
                await asyncio.to_thread(forget_delivery, engine, key)
            await self._private_reply(body, respond, text_message(NOT_SHARED_TEXT))
            return
        await self._private_reply(body, respond, text_message(SHARED_TEXT))

    async def _on_sources(self, ack: Any, body: dict[str, Any], action: dict[str, Any]) -> None:
        """The answer's sources, only if the clicker may read every one of them here."""
        await ack()
        answered = await self._authorized(body, action)
        if answered is None or not await self._may_read(body, answered.repos):
            await self._ephemeral(body, NOT_HERE_TEXT)
            return
        details = source_details(answered.sources, self.services.acl.github_web_url)
        await self._ephemeral(body, details.text, details.blocks)

    async def _on_private(self, ack: Any, body: dict[str, Any], action: dict[str, Any]) -> None:
        """Answer the same question again in the clicker's DM, with their own access."""
        await ack()
        answered = await self._authorized(body, action)
        if answered is None:
            await self._ephemeral(body, NOT_HERE_TEXT)
            return
        # chat.postMessage to a user id opens (or reuses) the app's DM with them.
        question = Question(_clicker(body), Place("dm"), answered.question)
        await self.answer(question, body["user"]["id"], None)

    async def _on_retry(
        self, ack: Any, body: dict[str, Any], action: dict[str, Any], respond: Any, context: Any
    ) -> None:
        """Ask the same question again for the clicker, where they clicked, with the access
        they have there now: a click on someone else's DM answer asks nothing. In a thread,
        the turns before the answer are its history again (the Asker re-checks the places
        of earlier answers against the clicker)."""
        await ack()
        answered = await self._authorized(body, action)
        if answered is None:
            await self._ephemeral(body, NOT_HERE_TEXT)
            return
        place = _click_place(body)
        if (body.get("container") or {}).get("is_ephemeral"):  # a `/codeask ask` answer
            await self._answer_ephemeral(
                respond, Question(_clicker(body), place, answered.question)
            )
            return
        channel, thread = body["channel"]["id"], _click_thread(body)
        history: History = ()
        earlier: tuple[str, ...] = ()
        answer_ts = (body.get("message") or {}).get("ts")
        if thread and answer_ts:
            history, earlier = await thread_turns(self.client, channel, thread, answer_ts, context)
        question = Question(_clicker(body), place, answered.question, history, earlier=earlier)
        await self.answer(question, channel, thread)

    async def _on_link_button(self, ack: Any) -> None:
        """A button that opens a URL ("View on GitHub", "Link GitHub"): Slack opened it;
        the click needs only an acknowledgement."""
        await ack()

    async def _authorized(
        self, body: dict[str, Any], action: dict[str, Any]
    ) -> AnsweredQuestion | None:
        """The answer the button names, if the clicker may act on it where they clicked."""
        value = action.get("value")
        if not isinstance(value, str) or not value:
            return None
        try:
            answered = await asyncio.to_thread(self.asker.answered, value)
        except Exception:
            log.exception("could not read the answer a button named")
            return None
        if answered is None or not seen_here(answered, _clicker(body), _click_place(body)):
            return None
        return answered

    async def _channel_may_read(
        self, principal: Principal, place: Place, repos: frozenset[str]
    ) -> bool:
        """Whether everyone in the channel ``place`` may read ``repos``: the place policy
        of channel answers (public repositories and the channel's grants); fails closed."""
        if place.kind != "channel" or not place.id:
            return False
        try:
            access = await asyncio.to_thread(self.asker.access, principal, place)
        except Exception as exc:
            log.warning("access resolution for the channel %s failed: %s", place.id, exc)
            return False
        return repos <= access.repos

    async def _may_read(self, body: dict[str, Any], repos: frozenset[str]) -> bool:
        """Access resolved again for the clicker in the place of the click; fails closed."""
        try:
            access = await asyncio.to_thread(self.asker.access, _clicker(body), _click_place(body))
        except Exception as exc:
            log.warning("access resolution for a click failed: %s", exc)
            return False
        return repos <= access.repos

    async def _ephemeral(
        self, body: dict[str, Any], text: str, blocks: list[Any] | None = None
    ) -> None:
        channel = (body.get("channel") or {}).get("id")
        message = body.get("message") or body.get("container") or {}
        thread_ts = message.get("thread_ts")
        if not channel:
            return
        try:
            await call_slack(
                self.client.chat_postEphemeral,
                channel=channel,
                user=body["user"]["id"],
                text=text,
                blocks=blocks,
                thread_ts=thread_ts,
            )
        except SlackApiError as exc:
            log.warning("ephemeral reply failed: %s", exc.response.get("error"))

    async def _private_reply(
        self, body: dict[str, Any], respond: Any, message: SlackMessage, *, replace: bool = False
    ) -> None:
        """Answer a click on a message only the clicker sees, through its response URL."""
        if not body.get("response_url"):
            await self._ephemeral(body, message.text, message.blocks)
            return
        try:
            await respond(
                text=message.text,
                blocks=message.blocks,
                response_type="ephemeral",
                replace_original=replace,
                unfurl_links=False,
                unfurl_media=False,
            )
        except Exception as exc:
            log.warning("reply through the response URL failed: %r", exc)

    # --- App Home ---------------------------------------------------------------------

    async def _on_home(
        self, event: dict[str, Any], context: Any, client: AsyncWebClient, body: dict[str, Any]
    ) -> None:
        if event.get("tab", "home") != "home":
            return
        user = event["user"]
        invoker = Invoker("slack", f"{context.team_id}:{user}")
        admin = is_admin(
            invoker, command_context(self.services).admins
        ) or await self._is_slack_admin(client, invoker, user)
        principal = Principal("slack", invoker.user_id)
        try:
            data = await asyncio.to_thread(gather_home, self.services, self.asker, principal, admin)
            data.dm_url = dm_url(context.team_id or "", str(body.get("api_app_id") or ""))
            view = home_view(data)
        except Exception:
            log.exception("App Home for %s failed", invoker.qualified_id)
            view = {
                "type": "home",
                "blocks": [
                    text_message(
                        "codeask could not load your details right now; try again later."
                    ).blocks[0]
                ],
            }
        await call_slack(client.views_publish, user_id=user, view=view)


def _action_user(body: dict[str, Any]) -> str:
    return f"{_action_team(body)}:{body['user']['id']}"


def _clicker(body: dict[str, Any]) -> Principal:
    return Principal("slack", _action_user(body))


def _click_place(body: dict[str, Any]) -> Place:
    """Where the click happened: the channel of the payload (a DM's id starts with D)."""
    channel = str((body.get("channel") or {}).get("id") or "")
    return Place("dm") if channel.startswith("D") else Place("channel", channel)


def _click_thread(body: dict[str, Any]) -> str | None:
    """The thread of the clicked message; a channel answer always sits in one."""
    message = body.get("message") or {}
    thread = message.get("thread_ts")
    if thread or _click_place(body).kind == "dm":
        return str(thread) if thread else None
    return str(message.get("ts") or (body.get("container") or {}).get("message_ts") or "") or None


def _action_team(body: dict[str, Any]) -> str:
    return str((body.get("team") or {}).get("id") or body["user"].get("team_id") or "")
