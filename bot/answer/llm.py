"""Generation through LiteLLM: any provider, streaming to a callback, clear failures."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import httpx

from bot.settings import BotSettings
from indexer.errors import ConfigError, UpstreamUnavailable

# LiteLLM fetches a model price list from the internet at import unless told otherwise.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import litellm

litellm.suppress_debug_info = True  # its help banners would land in the user's terminal

Message = dict[str, str]
TokenCallback = Callable[[str], None]
DUMMY_API_KEY = "not-needed"  # OpenAI-compatible local servers ignore it, the client needs one
_RETRY_STATUS = {429, 500, 502, 503, 504}


class LanguageModel(Protocol):
    """Completes a chat; streams text pieces to ``on_token`` when given."""

    @property
    def name(self) -> str: ...

    def complete(
        self, messages: Sequence[Message], on_token: TokenCallback | None = None
    ) -> str: ...


def provider_arguments(settings: BotSettings) -> dict[str, Any]:
    """Model, base URL and key as LiteLLM wants them.

    A bare model name with an API base means an OpenAI-compatible server: LiteLLM calls it
    ``openai/<name>``, its base URL must end in ``/v1``, and its client insists on a key.
    """
    model = settings.llm_model.strip()
    if not model:
        raise ConfigError("No language model configured (set CODEASK_LLM_MODEL).")
    base = settings.llm_api_base.strip().rstrip("/")
    if base and "/" not in model:
        model = f"openai/{model}"
    args: dict[str, Any] = {"model": model}
    if base:
        if model.startswith("openai/") and not base.endswith("/v1"):
            base += "/v1"
        args["api_base"] = base
    key = settings.llm_api_key
    if not key and model.startswith("openai/") and base:
        key = DUMMY_API_KEY
    if key:
        args["api_key"] = key
    return args


class LiteLLMClient:
    """Chat completion with retries on 429/5xx (before any token was streamed)."""

    def __init__(self, settings: BotSettings, backoff: float = 1.0) -> None:
        self._args = provider_arguments(settings)
        self._settings = settings
        self._backoff = backoff

    @property
    def name(self) -> str:
        return str(self._args["model"])

    def complete(self, messages: Sequence[Message], on_token: TokenCallback | None = None) -> str:
        attempt = 0
        while True:
            streamed = [False]
            try:
                return self._once(messages, on_token, streamed)
            except Exception as exc:  # LiteLLM wraps every provider error; mapped below
                status = _status(exc)
                # a provider restarting refuses connections for a moment: worth a retry too
                transient = status in _RETRY_STATUS or _unreachable(exc)
                retry = transient and not streamed[0]
                if not retry or attempt >= self._settings.llm_retries:
                    raise self._explain(exc, status) from exc
                time.sleep(self._backoff * 2**attempt)
                attempt += 1

    def _once(
        self, messages: Sequence[Message], on_token: TokenCallback | None, streamed: list[bool]
    ) -> str:
        s = self._settings
        common: dict[str, Any] = {
            **self._args,
            "messages": list(messages),
            "timeout": s.llm_timeout,
            "temperature": s.llm_temperature,
            "max_tokens": s.llm_max_tokens,
            "max_retries": 0,  # retries are ours, so they are counted and backed off once
        }
        if on_token is None:
            response: Any = litellm.completion(**common)
            return str(response.choices[0].message.content or "")
        pieces = []
        # The provider's timeout bounds each read; this bounds the whole streamed answer, so
        # a model trickling tokens cannot hold a question (and its thread) forever.
        deadline = time.monotonic() + s.llm_timeout
        for part in litellm.completion(**common, stream=True):
            choices = getattr(part, "choices", None) or []
            text = choices[0].delta.content if choices else None
            if text:
                streamed[0] = True
                pieces.append(text)
                on_token(text)
            if time.monotonic() > deadline:
                raise _AnswerTooSlow()
        return "".join(pieces)

    def _explain(self, exc: Exception, status: int | None) -> Exception:
        where = self._args.get("api_base") or "the provider"
        model = self._args["model"]
        if isinstance(exc, litellm.Timeout) or _timed_out(exc):
            return UpstreamUnavailable(
                f"The language model ({model}) did not answer within "
                f"{self._settings.llm_timeout:g} s. Try again, or raise CODEASK_LLM_TIMEOUT."
            )
        if isinstance(exc, _AnswerTooSlow):
            return UpstreamUnavailable(
                f"The language model ({model}) did not finish its answer within "
                f"{self._settings.llm_timeout:g} s. Try again, or raise CODEASK_LLM_TIMEOUT."
            )
        if status in (401, 403) or isinstance(exc, litellm.AuthenticationError):
            return UpstreamUnavailable(
                f"The language model provider at {where} rejected the API key (HTTP "
                f"{status or 401}). Check CODEASK_LLM_API_KEY."
            )
        if status == 404 or isinstance(exc, litellm.NotFoundError):
            return ConfigError(
                f"The provider at {where} does not know the model {model!r}. "
                "Check CODEASK_LLM_MODEL and CODEASK_LLM_API_BASE."
            )
        if status == 429:
            return UpstreamUnavailable(
                f"The language model provider at {where} is rate limiting us (HTTP 429) "
                f"after {self._settings.llm_retries + 1} attempts. Try again in a minute."
            )
        if status is not None and status >= 500:
            return UpstreamUnavailable(
                f"The language model provider at {where} is failing (HTTP {status}) after "
                f"{self._settings.llm_retries + 1} attempts. Try again later."
            )
        if _unreachable(exc):
            return UpstreamUnavailable(
                f"Cannot reach the language model provider at {where} (tried "
                f"{self._settings.llm_retries + 1} times). Is it running, and is "
                "CODEASK_LLM_API_BASE right?"
            )
        return UpstreamUnavailable(
            f"The language model provider at {where} refused the request"
            f"{f' (HTTP {status})' if status else ''}: {_short(exc)}"
        )


class _AnswerTooSlow(Exception):
    """The stream was still going when the answer's time ran out."""


def _causes(exc: BaseException) -> list[BaseException]:
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


def _timed_out(exc: BaseException) -> bool:
    """A read that timed out, also mid-stream (LiteLLM then reports an HTTP 500)."""
    return any(
        isinstance(c, litellm.Timeout | httpx.TimeoutException | TimeoutError) for c in _causes(exc)
    )


def _unreachable(exc: BaseException) -> bool:
    """No connection at all (refused, DNS, reset): LiteLLM reports it as an HTTP 500."""
    return any(
        isinstance(c, litellm.APIConnectionError | httpx.ConnectError | ConnectionError)
        for c in _causes(exc)
    )


def _status(exc: Exception) -> int | None:
    """The provider's HTTP status; None when no response came."""
    if isinstance(exc, litellm.Timeout | _AnswerTooSlow) or _timed_out(exc) or _unreachable(exc):
        return None
    code = getattr(exc, "status_code", None)
    return code if isinstance(code, int) else None


def _short(exc: Exception, limit: int = 200) -> str:
    text = str(exc).replace("\n", " ")
    return text if len(text) <= limit else text[:limit] + "…"
