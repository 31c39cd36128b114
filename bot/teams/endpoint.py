"""Microsoft Teams on ``POST /api/messages``: authentication and dispatch, nothing more.

Mount it into ``codeask serve`` with ``create_app(services, mounts=[mount_teams])``. Each
request is authenticated by the Bot Framework SDK before anything else happens (no or a
bad token: 401). Card-action invokes are answered inline because Teams waits for their
response body; every other activity is acknowledged at once (202) and handled in the
background, since an answer can take longer than the Bot Connector waits for a reply.
What a turn does lives in ``bot.teams.turns``; the answer itself in ``bot.answer.asking``.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from aiohttp import web
from botbuilder.core import InvokeResponse, TurnContext
from botbuilder.integration.aiohttp import CloudAdapter
from botbuilder.schema import Activity, ActivityTypes

from bot.chat import SERVICES, BadRequest, bad_request, parse_json_object, read_body
from bot.services import Services
from bot.teams.auth import bot_framework_authentication
from bot.teams.render import text_card
from bot.teams.turns import CodeaskTeamsHandler, card_message
from indexer.errors import ConfigError

if TYPE_CHECKING:
    from bot.answer import Asker

log = logging.getLogger(__name__)

ROUTE = "/api/messages"
TURN_FAILED = "Something went wrong while handling that; the error was logged."
MAX_ACTIVITY_BYTES = 1024 * 1024  # far above any activity the Bot Connector sends


class TeamsEndpoint:
    """The Bot Framework adapter and the activity handler behind ``/api/messages``."""

    def __init__(self, services: Services, asker: Asker | None = None) -> None:

        self.services = services
        self.handler = CodeaskTeamsHandler(services, asker or services.asker)
        self._tasks: set[asyncio.Task[None]] = set()
        self.adapter: CloudAdapter | None = None
        self.config_error = ""
        try:
            self.adapter = CloudAdapter(bot_framework_authentication(services.bot))
            self.adapter.on_turn_error = self._on_turn_error
        except ConfigError as exc:
            # /healthz must still answer; Teams requests get 503 with this message.
            self.config_error = str(exc)
            log.warning("Teams disabled: %s", exc)

    async def messages(self, request: web.Request) -> web.Response:
        if self.adapter is None:
            return web.json_response({"error": self.config_error}, status=503)
        if "application/json" not in request.headers.get("Content-Type", ""):
            return web.json_response({"error": "expected application/json"}, status=415)
        try:
            activity = Activity().deserialize(
                parse_json_object(await read_body(request, MAX_ACTIVITY_BYTES))
            )
        except BadRequest as exc:
            return bad_request(exc)
        except ValueError:  # the SDK's DeserializationError: a field of the wrong type
            return web.json_response({"error": "body is not an Activity"}, status=400)
        if not activity.type:
            return web.json_response({"error": "the activity has no type"}, status=400)
        header = request.headers.get("Authorization", "")
        try:
            auth = await self.adapter.bot_framework_authentication.authenticate_request(
                activity, header
            )
        except Exception as exc:
            # The SDK signals bad tokens with PermissionError but also lets JWT and key
            # lookup errors escape; every one of them means: not from the Bot Connector.
            log.warning("Teams request refused: %s", type(exc).__name__)
            return web.json_response({"error": "unauthorized"}, status=401)
        if activity.type == ActivityTypes.invoke:
            response = await self.adapter.process_activity(auth, activity, self.handler.on_turn)
            return _invoke_response(response)
        task = asyncio.create_task(self._process(auth, activity))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return web.Response(status=202)

    async def _process(self, auth: Any, activity: Activity) -> None:
        assert self.adapter is not None
        try:
            await self.adapter.process_activity(auth, activity, self.handler.on_turn)
        except Exception:
            # on_turn_error already tried to tell the user; this is the reply path itself.
            log.exception("Teams activity %s could not be handled", activity.id)

    async def _on_turn_error(self, context: TurnContext, error: Exception) -> None:
        log.error("Teams turn for activity %s failed", context.activity.id, exc_info=error)
        message = card_message(
            text_card(
                "Something went wrong while handling that; the error was logged.", attention=True
            )
        )
        await context.send_activity(message)

    async def drain(self) -> None:
        """Wait for every activity still being handled (shutdown, tests)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def close(self, app: web.Application) -> None:
        await self.drain()


TEAMS: web.AppKey[TeamsEndpoint] = web.AppKey("codeask.teams", TeamsEndpoint)


def mount_teams(app: web.Application, asker: Asker | None = None) -> None:
    """Add ``POST /api/messages`` to the ``codeask serve`` application."""
    endpoint = TeamsEndpoint(app[SERVICES], asker)
    app[TEAMS] = endpoint
    app.router.add_post(ROUTE, endpoint.messages)
    app.on_shutdown.append(endpoint.close)


def _invoke_response(response: InvokeResponse | None) -> web.Response:
    if response is None:
        return web.Response(status=200)
    body = response.body
    if body is None:
        return web.Response(status=response.status)
    return web.json_response(body, status=response.status)
