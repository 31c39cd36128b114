"""A local OpenAI-compatible chat server for tests (real HTTP, real SSE streaming).

Responses are scripted: each request pops the next ``Reply`` (the last one repeats).
Every request body is recorded so tests can assert what the model was sent.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from aiohttp import web


@dataclass
class Reply:
    content: str = "ok"
    status: int = 200
    delay: float = 0.0  # seconds before the response starts
    piece: int = 8  # characters per streamed delta


class FakeLLM:
    def __init__(self) -> None:
        self.replies: list[Reply] = [Reply()]
        self.requests: list[dict[str, Any]] = []
        self.port = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def script(self, *replies: Reply) -> None:
        self.replies = list(replies)
        self.requests.clear()

    def _next(self) -> Reply:
        return self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append(body)
        reply = self._next()
        if reply.delay:
            await asyncio.sleep(reply.delay)
        if reply.status != 200:
            return web.json_response(
                {
                    "error": {
                        "message": f"scripted status {reply.status}",
                        "type": "test",
                        "code": reply.status,
                    }
                },
                status=reply.status,
            )
        model = body.get("model", "fake")
        created = int(time.time())
        if not body.get("stream"):
            return web.json_response(
                {
                    "id": "chatcmpl-fake",
                    "object": "chat.completion",
                    "created": created,
                    "model": model,
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": reply.content},
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
                }
            )
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        try:
            return await self._stream(request, response, reply, model, created)
        except ConnectionResetError:  # the client gave up (a timeout test): nothing to send
            return response

    async def _stream(
        self,
        request: web.Request,
        response: web.StreamResponse,
        reply: Reply,
        model: str,
        created: int,
    ) -> web.StreamResponse:
        await response.prepare(request)
        pieces = [
            reply.content[i : i + reply.piece] for i in range(0, len(reply.content), reply.piece)
        ]
        for i, piece in enumerate(pieces):
            delta: dict[str, str] = {"content": piece}
            if i == 0:
                delta["role"] = "assistant"
            await response.write(_sse(model, created, delta, None))
        await response.write(_sse(model, created, {}, "stop"))
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
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


def _sse(model: str, created: int, delta: dict[str, str], finish: str | None) -> bytes:
    chunk = {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return f"data: {json.dumps(chunk)}\n\n".encode()


@contextmanager
def running_fake_llm() -> Iterator[FakeLLM]:
    server = FakeLLM()
    server.start()
    try:
        yield server
    finally:
        server.stop()
