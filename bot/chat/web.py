"""What every HTTP endpoint of ``codeask serve`` shares: the services key, the mount type,
bounded body reads and the JSON error answer."""

from __future__ import annotations

from collections.abc import Callable

from aiohttp import web

from bot.chat.request_checks import BadRequest
from bot.services import Services

Mount = Callable[[web.Application], None]  # an adapter adds its routes to the app
SERVICES: web.AppKey[Services] = web.AppKey("codeask.services", Services)


async def read_body(request: web.Request, limit: int) -> bytes:
    """The request body; 413 when it is over ``limit`` bytes (before reading, if declared)."""
    declared = request.content_length
    if declared is not None and declared > limit:
        raise web.HTTPRequestEntityTooLarge(max_size=limit, actual_size=declared)
    body = await request.read()
    if len(body) > limit:
        raise web.HTTPRequestEntityTooLarge(max_size=limit, actual_size=len(body))
    return body


def error_response(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


def bad_request(exc: BadRequest) -> web.Response:
    """The JSON error answer to a request that ``bot.chat.request_checks`` refused."""
    return error_response(exc.status, str(exc))
