"""A Slack reply that appears at once and grows as the answer streams.

A placeholder is posted immediately; generated text (arriving on a worker thread) is
shown by editing it at most once per ``interval`` seconds, because Slack allows about
one ``chat.update`` per second per message. A ``ratelimited`` answer pauses the edits for
its ``Retry-After``; the final message waits it out and is retried, so it is never lost.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.web.async_slack_response import AsyncSlackResponse

from bot.slack.render import SlackMessage, progress_message

log = logging.getLogger(__name__)

MAX_RATE_LIMIT_WAIT = 30.0
# The event loop may wake a timer a hair early; Retry-After means "not before".
RETRY_MARGIN = 0.05
RATE_LIMIT_ATTEMPTS = 4
# Methods that post a new message. An unfurl fetches a URL the moment a message is posted,
# with no click, and shows what the page returns: an answer that carries a URL must never
# be unfurled. chat.update takes no unfurl arguments; an edit keeps the original post's.
POSTING_METHODS = frozenset({"chat_postMessage", "chat_postEphemeral"})
NO_UNFURLS = {"unfurl_links": False, "unfurl_media": False}


def retry_after(error: SlackApiError, default: float = 1.0) -> float:
    """Seconds Slack asked us to wait, from the ``Retry-After`` header."""
    headers: Any = getattr(error.response, "headers", None) or {}
    try:
        return max(0.0, float(headers.get("Retry-After", default)))
    except (TypeError, ValueError):
        return default


def is_rate_limited(error: SlackApiError) -> bool:
    return error.response.get("error") == "ratelimited" or error.response.status_code == 429


async def call_slack(
    method: Callable[..., Awaitable[AsyncSlackResponse]],
    *,
    attempts: int = RATE_LIMIT_ATTEMPTS,
    **kwargs: Any,
) -> AsyncSlackResponse:
    """Call a Web API method, waiting out ``ratelimited`` answers (up to 30 s each).

    Every message posted through here is posted with unfurling off.
    """
    if getattr(method, "__name__", "") in POSTING_METHODS:
        kwargs = {**kwargs, **NO_UNFURLS}
    for attempt in range(attempts):
        try:
            return await method(**kwargs)
        except SlackApiError as exc:
            if not is_rate_limited(exc) or attempt == attempts - 1:
                raise
            wait = min(retry_after(exc), MAX_RATE_LIMIT_WAIT)
            log.info("Slack rate limited %s; retrying in %.1f s", method.__name__, wait)
            await asyncio.sleep(wait + RETRY_MARGIN)
    raise AssertionError("unreachable")


class StreamingReply:
    """Placeholder → throttled edits → final message(s), in one channel (and thread)."""

    def __init__(
        self,
        client: AsyncWebClient,
        channel: str,
        thread_ts: str | None = None,
        interval: float = 1.0,
        assistant_thread: bool = False,
    ) -> None:
        self.client = client
        self.channel = channel
        self.thread_ts = thread_ts
        self.interval = interval
        # A DM thread of an app set up as a Slack AI app also shows each step as the
        # assistant's status; off for good after Slack refuses it once.
        self._assistant = assistant_thread and thread_ts is not None
        self._status_shown = ""
        self.ts: str | None = None  # the placeholder, once posted
        self._pieces: list[str] = []
        self._steps: list[str] = []
        self._lock = threading.Lock()
        self._shown: tuple[str, ...] = ("",)  # (streamed text, *steps) of the last edit
        self._next_at = 0.0
        self._limited_until = 0.0  # Slack said "ratelimited": nothing before this
        self._stop = asyncio.Event()
        self._pump: asyncio.Task[None] | None = None
        # Whether the placeholder (or a message posted in its place) shows a final text: a
        # later failure notice must then be posted, not written over the answer.
        self._replaced = False

    async def start(self) -> None:
        """Post the placeholder and begin editing it as text arrives."""
        placeholder = progress_message()
        try:
            response = await call_slack(
                self.client.chat_postMessage,
                channel=self.channel,
                thread_ts=self.thread_ts,
                text=placeholder.text,
                blocks=placeholder.blocks,
            )
        except SlackApiError as exc:
            # Without a placeholder the answer is posted as a new message at the end.
            log.warning("placeholder in %s failed: %s", self.channel, exc.response.get("error"))
            return
        self.ts = str(response["ts"])
        self.channel = str(response.get("channel") or self.channel)
        self._next_at = time.monotonic() + self.interval
        self._pump = asyncio.create_task(self._edit_while_streaming())

    def feed(self, piece: str) -> None:
        """Append generated text; safe to call from any thread."""
        with self._lock:
            self._pieces.append(piece)

    def step(self, text: str) -> None:
        """Show a tool step of an agentic answer; the text streamed before it was the model
        thinking aloud, so it is dropped. Safe to call from any thread."""
        with self._lock:
            self._steps.append(text)
            self._pieces.clear()

    def _state(self) -> tuple[str, ...]:
        with self._lock:
            return ("".join(self._pieces), *self._steps)

    async def _edit_while_streaming(self) -> None:
        while not self._stop.is_set():
            delay = max(self._next_at - time.monotonic(), 0.05)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), timeout=delay)
            if self._stop.is_set():
                return
            state = self._state()
            if state == self._shown or time.monotonic() < self._next_at or self.ts is None:
                continue
            await self._show_status(state[1:])
            message = progress_message(state[0], state[1:])
            try:
                await self.client.chat_update(
                    channel=self.channel, ts=self.ts, text=message.text, blocks=message.blocks
                )
                self._shown = state
                self._next_at = time.monotonic() + self.interval
            except SlackApiError as exc:
                if is_rate_limited(exc):
                    self._limited_until = time.monotonic() + retry_after(exc) + RETRY_MARGIN
                    self._next_at = max(self._limited_until, time.monotonic() + self.interval)
                else:  # the final message will still be attempted
                    log.warning("progress edit failed: %s", exc.response.get("error"))
                    self._next_at = time.monotonic() + self.interval
            except Exception as exc:  # a timeout or a dropped connection: also only progress
                log.warning("progress edit failed: %r", exc)
                self._next_at = time.monotonic() + self.interval

    async def _show_status(self, steps: Sequence[str]) -> None:
        if not self._assistant or self.thread_ts is None or not steps:
            return
        if steps[-1] == self._status_shown:
            return
        self._status_shown = steps[-1]
        try:
            await self.client.assistant_threads_setStatus(
                channel_id=self.channel, thread_ts=self.thread_ts, status=f"{steps[-1][:120]}…"
            )
        except Exception as exc:  # not an AI app (or no assistant:write): the edits remain
            log.info("assistant status unavailable (%r); showing steps in the message", exc)
            self._assistant = False

    async def finish(self, messages: Sequence[SlackMessage]) -> None:
        """Replace the placeholder by the first message and post the rest in the thread."""
        self._stop.set()
        if self._pump is not None:
            with contextlib.suppress(Exception):  # progress only: the answer still goes out
                await self._pump
            self._pump = None
        # The final edit keeps the pace too: one edit per interval, none while rate limited.
        until = max(self._limited_until, self._next_at if self._shown != ("",) else 0.0)
        wait = until - time.monotonic()
        if self.ts is not None and wait > 0:
            await asyncio.sleep(min(wait, MAX_RATE_LIMIT_WAIT))
        first, *rest = messages
        if self.ts is not None and not self._replaced:
            try:
                await call_slack(
                    self.client.chat_update,
                    channel=self.channel,
                    ts=self.ts,
                    text=first.text,
                    blocks=first.blocks,
                )
                self._replaced = True
            except Exception as exc:
                error = exc.response.get("error") if isinstance(exc, SlackApiError) else repr(exc)
                log.warning("final edit failed (%s); posting anew", error)
        if not self._replaced:
            # Raises when this fails too: the caller's failure notice then replaces the
            # placeholder, which is still there.
            await self._post(first)
            self._replaced = True
            if self.ts is not None:  # the placeholder holds only partial text: remove it
                try:
                    await self.client.chat_delete(channel=self.channel, ts=self.ts)
                except Exception as exc:
                    log.warning("could not remove the placeholder: %r", exc)
        for message in rest:
            await self._post(message)

    async def _post(self, message: SlackMessage) -> None:
        await call_slack(
            self.client.chat_postMessage,
            channel=self.channel,
            thread_ts=self.thread_ts,
            text=message.text,
            blocks=message.blocks,
        )
