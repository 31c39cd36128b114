"""Calling a model provider through LiteLLM: the arguments for a model at a base URL, and
what a failed call was (no answer in time, no connection, or an HTTP status).

Shared by generation (``bot.answer.llm``) and remote embeddings (``indexer.embedding.api``).
"""

from __future__ import annotations

import os
from types import ModuleType
from typing import Any

import httpx

DUMMY_API_KEY = "not-needed"  # OpenAI-compatible local servers ignore it, the client needs one
RETRY_STATUS = frozenset({429, 500, 502, 503, 504})


def import_litellm() -> ModuleType:
    """LiteLLM, imported on first use (it takes seconds) and kept quiet and offline."""
    # LiteLLM fetches a model price list from the internet at import unless told otherwise.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True  # its help banners would land in the user's terminal
    return litellm


def provider_arguments(model: str, api_base: str, api_key: str) -> dict[str, Any]:
    """Model, base URL and key as LiteLLM wants them.

    A bare model name with an API base means an OpenAI-compatible server: LiteLLM calls it
    ``openai/<name>``, its base URL must end in ``/v1``, and its client insists on a key.
    """
    model = model.strip()
    base = api_base.strip().rstrip("/")
    if base and "/" not in model:
        model = f"openai/{model}"
    args: dict[str, Any] = {"model": model}
    if base:
        if model.startswith("openai/") and not base.endswith("/v1"):
            base += "/v1"
        args["api_base"] = base
    if not api_key and model.startswith("openai/") and base:
        api_key = DUMMY_API_KEY
    if api_key:
        args["api_key"] = api_key
    return args


def causes(exc: BaseException) -> list[BaseException]:
    """``exc`` and every exception it was raised from or while handling."""
    seen: set[int] = set()
    found: list[BaseException] = []
    pending: list[BaseException | None] = [exc]
    while pending:
        current = pending.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        found.append(current)
        pending += [current.__cause__, current.__context__]
    return found


def timed_out(exc: BaseException) -> bool:
    """A read that timed out, also mid-stream (LiteLLM then reports an HTTP 500)."""
    litellm = import_litellm()
    return any(
        isinstance(c, litellm.Timeout | httpx.TimeoutException | TimeoutError) for c in causes(exc)
    )


def unreachable(exc: BaseException) -> bool:
    """No connection at all (refused, DNS, reset): LiteLLM reports it as an HTTP 500."""
    litellm = import_litellm()
    return any(
        isinstance(c, litellm.APIConnectionError | httpx.ConnectError | ConnectionError)
        for c in causes(exc)
    )


def http_status(exc: BaseException) -> int | None:
    """The provider's HTTP status; None when no response came."""
    if timed_out(exc) or unreachable(exc):
        return None
    code = getattr(exc, "status_code", None)
    return code if isinstance(code, int) else None


def short(exc: BaseException, limit: int = 200) -> str:
    """The error's text on one line, cut at ``limit`` characters."""
    text = str(exc).replace("\n", " ")
    return text if len(text) <= limit else text[:limit] + "…"
