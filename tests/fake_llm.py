"""A scripted OpenAI-compatible chat server for tests (real HTTP, real SSE streaming).

Responses are scripted: each request pops the next ``Reply`` (the last one repeats).
Every request body is recorded so tests can assert what the model was sent. The wire
format is ``eval.local_llm``'s, whose deterministic server answers from the prompt instead.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from eval.local_llm import ToolCallSpec, completion_json, usage_json, wants_usage, write_stream


@dataclass
class Reply:
    content: str = "ok"
    # (function name, arguments text) per call; arguments are sent as written, valid or not
    tool_calls: tuple[ToolCallSpec, ...] = ()
    status: int = 200
    delay: float = 0.0  # seconds before the response starts
    piece: int = 8  # characters per streamed delta
    gap: float = 0.0  # seconds between streamed deltas
    error: str = ""  # the provider's error message when ``status`` is not 200


class FakeLLM:
    def __init__(self) -> None:
        self.replies: list[Reply] = [Reply()]
        # When set, each request's reply is computed from its body instead of the script.
        self.respond: Callable[[dict[str, Any]], Reply] | None = None
        self.requests: list[dict[str, Any]] = []
        self.port = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def script(self, *replies: Reply) -> None:
        self.replies = list(replies)
        self.respond = None
        self.requests.clear()

    def _next(self) -> Reply:
        return self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append(body)
        reply = self.respond(body) if self.respond is not None else self._next()
        if reply.delay:
            await asyncio.sleep(reply.delay)
        if reply.status != 200:
            return web.json_response(
                {
                    "error": {
                        "message": reply.error or f"scripted status {reply.status}",
                        "type": "test",
                        "code": reply.status,
                    }
                },
                status=reply.status,
            )
        model = body.get("model", "fake")
        usage = usage_json(body, reply.content)
        if not body.get("stream"):
            return web.json_response(
                completion_json(model, reply.content, tool_calls=reply.tool_calls, usage=usage)
            )
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        try:
            return await write_stream(
                request,
                response,
                reply.content,
                model,
                reply.piece,
                reply.gap,
                reply.tool_calls,
                usage=usage if wants_usage(body) else None,
            )
        except (ConnectionResetError, ConnectionError):  # the client gave up (a timeout test)
            return response

    def start(self) -> None:
        ready = threading.Event()

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            app = web.Application()
            app.router.add_post("/v1/chat/completions", self._chat)
            self._runner = web.AppRunner(app)
            loop.run_until_complete(self._runner.setup())
            site = web.TCPSite(self._runner, "127.0.0.1", 0)
            loop.run_until_complete(site.start())
            server = site._server
            assert server is not None and server.sockets  # type: ignore[union-attr]
            self.port = server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
            ready.set()
            loop.run_forever()
            loop.run_until_complete(self._runner.cleanup())
            loop.close()

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()
        ready.wait(10)

    def stop(self) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)


@contextmanager
def running_fake_llm() -> Iterator[FakeLLM]:
    server = FakeLLM()
    server.start()
    try:
        yield server
    finally:
        server.stop()
