"""A local Slack Web API for tests: records every call and answers like Slack.

Serves ``/api/<method>`` (form, query or JSON arguments, as ``slack_sdk`` sends them) and
``/response/<id>`` (slash-command ``response_url``). ``rate_limit(method, seconds)``
makes the next call of ``method`` answer ``429 {"ok": false, "error": "ratelimited"}``
with ``Retry-After``, as Slack does.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from aiohttp.test_utils import TestServer

BOT_USER = "UBOT"
BOT_ID = "BBOT"
TEAM = "T1"


@dataclass
class Call:
    method: str
    args: dict[str, Any]
    raw: str  # the request body as sent, for leak checks
    at: float  # time.monotonic() when received
    status: int = 200


@dataclass
class FakeSlack:
    calls: list[Call] = field(default_factory=list)
    threads: dict[tuple[str, str], list[dict[str, Any]]] = field(default_factory=dict)
    users: dict[str, dict[str, Any]] = field(default_factory=dict)
    rate_limits: dict[str, list[int]] = field(default_factory=dict)
    # method -> queued failures: an error code Slack answers with, or "disconnect" (the
    # connection drops without an answer, as on a network failure).
    failures: dict[str, list[str]] = field(default_factory=dict)
    ai_app: bool = True  # whether assistant.threads.setStatus is allowed (a Slack AI app)
    _ts: int = 0
    server: TestServer | None = None

    @property
    def api_url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.port}/api/"

    def response_url(self, name: str = "cmd") -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.port}/response/{name}"

    def rate_limit(self, method: str, seconds: int = 1, times: int = 1) -> None:
        self.rate_limits.setdefault(method, []).extend([seconds] * times)

    def fail(self, method: str, error: str, times: int = 1) -> None:
        self.failures.setdefault(method, []).extend([error] * times)

    def of(self, method: str) -> list[Call]:
        return [c for c in self.calls if c.method == method]

    def bodies(self) -> str:
        return "\n".join(c.raw for c in self.calls)

    async def wait_for(self, predicate: Any, timeout: float = 60.0) -> Call:
        """The first recorded call matching ``predicate``, waiting for it to arrive."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for call in list(self.calls):
                if predicate(call):
                    return call
            await asyncio.sleep(0.05)
        raise AssertionError(f"no matching Slack call; got {[c.method for c in self.calls]}")

    def _next_ts(self) -> str:
        self._ts += 1
        return f"{1700000000 + self._ts}.{self._ts:06d}"

    async def _api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        raw = await request.text()
        args: dict[str, Any] = dict(request.query)
        if request.content_type == "application/json" and raw:
            args.update(json.loads(raw))
        elif raw:
            args.update((await request.post()).items())
        for key in ("blocks", "view"):
            if isinstance(args.get(key), str):
                args[key] = json.loads(args[key])
        call = Call(method, args, raw + json.dumps(dict(request.query)), time.monotonic())
        self.calls.append(call)
        if self.failures.get(method):
            error = self.failures[method].pop(0)
            if error == "disconnect":
                call.status = 0
                assert request.transport is not None
                request.transport.close()
                return web.Response(status=200)
            call.status = 400
            return web.json_response({"ok": False, "error": error})
        if self.rate_limits.get(method):
            wait = self.rate_limits[method].pop(0)
            call.status = 429
            return web.json_response(
                {"ok": False, "error": "ratelimited"},
                status=429,
                headers={"Retry-After": str(wait)},
            )
        return web.json_response(self._answer(method, args))

    def _answer(self, method: str, args: dict[str, Any]) -> dict[str, Any]:
        if method == "auth.test":
            return {
                "ok": True,
                "url": "https://acme.slack.com/",
                "team": "Acme",
                "user": "codeask",
                "team_id": TEAM,
                "user_id": BOT_USER,
                "bot_id": BOT_ID,
                "is_enterprise_install": False,
            }
        if method == "chat.postMessage":
            channel = str(args.get("channel", ""))
            if channel.startswith("U"):  # a user id: the app's DM with that user
                channel = "D" + channel[1:]
            ts = self._next_ts()
            return {
                "ok": True,
                "channel": channel,
                "ts": ts,
                "message": {
                    "type": "message",
                    "text": args.get("text", ""),
                    "ts": ts,
                    "bot_id": BOT_ID,
                },
            }
        if method == "chat.update":
            return {
                "ok": True,
                "channel": args.get("channel"),
                "ts": args.get("ts"),
                "text": args.get("text", ""),
            }
        if method == "chat.delete":
            return {"ok": True, "channel": args.get("channel"), "ts": args.get("ts")}
        if method == "chat.postEphemeral":
            return {"ok": True, "message_ts": self._next_ts()}
        if method == "views.publish":
            return {"ok": True, "view": {"id": "V1", "type": "home", **(args.get("view") or {})}}
        if method == "conversations.replies":  # oldest first, paged like Slack's
            key = (str(args.get("channel")), str(args.get("ts")))
            thread = self.threads.get(key, [])
            start = int(args.get("cursor") or 0)
            limit = int(args.get("limit") or 1000)
            end = start + limit
            more = end < len(thread)
            return {
                "ok": True,
                "messages": thread[start:end],
                "has_more": more,
                "response_metadata": {"next_cursor": str(end) if more else ""},
            }
        if method == "assistant.threads.setStatus":  # only for an app set up as an AI app
            if not self.ai_app:
                return {"ok": False, "error": "not_allowed_token_type"}
            return {"ok": True}
        if method == "conversations.history":
            return {"ok": True, "messages": [], "has_more": False}
        if method == "users.info":
            user = self.users.get(str(args.get("user")))
            return {"ok": True, "user": user} if user else {"ok": False, "error": "user_not_found"}
        return {"ok": False, "error": "unknown_method"}

    async def _response_url(self, request: web.Request) -> web.Response:
        raw = await request.text()
        self.calls.append(Call("response_url", json.loads(raw), raw, time.monotonic()))
        return web.Response(text="ok")

    async def start(self) -> None:
        app = web.Application()
        app.router.add_route("*", "/api/{method}", self._api)
        app.router.add_post("/response/{name}", self._response_url)
        self.server = TestServer(app, host="127.0.0.1")
        await self.server.start_server()

    async def close(self) -> None:
        if self.server is not None:
            await self.server.close()
