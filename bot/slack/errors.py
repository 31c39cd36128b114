"""Slack API errors counted where they happen, for every client the app uses.

Bolt builds a fresh ``AsyncWebClient`` for each request but copies the app client's retry
handlers into it, and slack_sdk shows every response and every failed request to those
handlers. So one handler that never asks for a retry sees all of them: an answer with
``"ok": false`` (Slack's error code, a fixed vocabulary: ``channel_not_found``,
``ratelimited``), an HTTP 5xx, or a request that failed (the exception's class).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from slack_sdk.http_retry.async_handler import AsyncRetryHandler

log = logging.getLogger(__name__)


class CountingErrors(AsyncRetryHandler):
    """Tells ``on_error`` the kind of each failed Slack call; never retries anything."""

    def __init__(self, on_error: Callable[[str], None]) -> None:
        super().__init__(max_retry_count=0)
        self._on_error = on_error

    async def can_retry_async(
        self, *, state: Any, request: Any, response: Any = None, error: Any = None
    ) -> bool:
        kind = error_kind(response, error)
        if kind:
            try:
                self._on_error(kind)
            except Exception:  # counting never changes what the caller sees
                log.exception("a Slack API error could not be counted")
        return False


def error_kind(response: Any, error: Exception | None) -> str:
    """The kind of a failed call ("" for a call that went well)."""
    if error is not None:
        return type(error).__name__
    if response is None:
        return ""
    body = getattr(response, "body", None)
    if isinstance(body, dict) and body.get("ok") is False:
        return str(body.get("error") or "error")[:60]
    status = int(getattr(response, "status_code", 200) or 200)
    return f"http_{status}" if status >= 500 else ""
