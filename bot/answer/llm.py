"""Generation through LiteLLM: any provider, streaming to a callback, clear failures."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from bot.answer.usage import add_usage
from bot.settings import BotSettings
from indexer.errors import ConfigError, UpstreamUnavailable
from indexer.providers import DUMMY_API_KEY as DUMMY_API_KEY
from indexer.providers import (
    RETRY_STATUS,
    http_status,
    short,
    timed_out,
    unreachable,
)
from indexer.providers import provider_arguments as openai_compatible

# LiteLLM fetches a model price list from the internet at import unless told otherwise.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import litellm

litellm.suppress_debug_info = True  # its help banners would land in the user's terminal

Message = dict[str, Any]
TokenCallback = Callable[[str], None]
MAX_ARGUMENTS = 8_000  # characters of one tool call's JSON arguments


class LanguageModel(Protocol):
    """Completes a chat; streams text pieces to ``on_token`` when given."""

    @property
    def name(self) -> str: ...

    def complete(
        self, messages: Sequence[Message], on_token: TokenCallback | None = None
    ) -> str: ...


@dataclass(frozen=True)
class ToolCall:
    """One function call the model asked for; ``arguments`` is its JSON text, unparsed."""

    id: str
    name: str
    arguments: str

    def message_part(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }


@dataclass(frozen=True)
class Turn:
    """One reply of a model that may call tools: its text and the calls it asked for."""

    content: str
    tool_calls: tuple[ToolCall, ...] = ()

    def message(self) -> Message:
        """The assistant message to send back with the tools' results."""
        message: Message = {"role": "assistant", "content": self.content or None}
        if self.tool_calls:
            message["tool_calls"] = [c.message_part() for c in self.tool_calls]
        return message


ToolSupport = Literal["yes", "no", "unknown"]


class ToolModel(LanguageModel, Protocol):
    """A language model that can also be offered tools (OpenAI function calling)."""

    def tool_support(self) -> ToolSupport: ...

    def chat(
        self,
        messages: Sequence[Message],
        tools: Sequence[dict[str, Any]],
        on_token: TokenCallback | None = None,
        timeout: float | None = None,
        tool_choice: Literal["auto", "none"] = "auto",
    ) -> Turn: ...


def provider_arguments(settings: BotSettings) -> dict[str, Any]:
    """Model, base URL and key as LiteLLM wants them (see ``indexer.providers``)."""
    if not settings.llm_model.strip():
        raise ConfigError("No language model configured (set CODEASK_LLM_MODEL).")
    return openai_compatible(settings.llm_model, settings.llm_api_base, settings.llm_api_key)


class LiteLLMClient:
    """Chat completion with retries on 429/5xx (before any token was streamed)."""

    def __init__(self, settings: BotSettings, backoff: float = 1.0) -> None:
        self._args = provider_arguments(settings)
        self._settings = settings
        self._backoff = backoff

    @property
    def name(self) -> str:
        return str(self._args["model"])

    def tool_support(self) -> ToolSupport:
        """What LiteLLM knows of the model: "unknown" for a model it has no entry for (an
        OpenAI-compatible server's own name), which is then tried with tools."""
        model = str(self._args["model"])
        try:
            if litellm.supports_function_calling(model=model):
                return "yes"
            litellm.get_model_info(model=model)
        except Exception:  # not in LiteLLM's model list
            return "unknown"
        return "no"

    def complete(self, messages: Sequence[Message], on_token: TokenCallback | None = None) -> str:
        return self._with_retries(lambda streamed: self._once(messages, on_token, streamed))

    def chat(
        self,
        messages: Sequence[Message],
        tools: Sequence[dict[str, Any]],
        on_token: TokenCallback | None = None,
        timeout: float | None = None,
        tool_choice: Literal["auto", "none"] = "auto",
    ) -> Turn:
        """One turn with ``tools`` offered; text streams to ``on_token`` when given.

        ``timeout`` (seconds, default ``llm_timeout``) bounds this turn, so a caller with
        a deadline for several turns gives each what is left of it. ``tool_choice="none"``
        keeps the tools described but asks for a text answer.
        """
        limit = self._settings.llm_timeout if timeout is None else max(timeout, 0.001)
        return self._with_retries(
            lambda streamed: self._turn(messages, tools, on_token, streamed, limit, tool_choice),
            limit,
        )

    def _with_retries(self, call: Callable[[list[bool]], Any], limit: float | None = None) -> Any:
        attempt = 0
        while True:
            streamed = [False]
            try:
                return call(streamed)
            except Exception as exc:  # LiteLLM wraps every provider error; mapped below
                status = _status(exc)
                # a provider restarting refuses connections for a moment: worth a retry too
                transient = status in RETRY_STATUS or unreachable(exc)
                retry = transient and not streamed[0]
                if not retry or attempt >= self._settings.llm_retries:
                    raise self._explain(exc, status, limit) from exc
                time.sleep(self._backoff * 2**attempt)
                attempt += 1

    def _common(self, messages: Sequence[Message], timeout: float) -> dict[str, Any]:
        s = self._settings
        return {
            **self._args,
            "messages": list(messages),
            "timeout": timeout,
            "temperature": s.llm_temperature,
            "max_tokens": s.llm_max_tokens,
            "max_retries": 0,  # retries are ours, so they are counted and backed off once
        }

    def _streaming(self) -> dict[str, Any]:
        """A stream's arguments: its last chunk carries the token counts, where asked."""
        options = {"stream_options": {"include_usage": True}}
        return {"stream": True, **(options if self._settings.llm_stream_usage else {})}

    def _once(
        self, messages: Sequence[Message], on_token: TokenCallback | None, streamed: list[bool]
    ) -> str:
        s = self._settings
        common = self._common(messages, s.llm_timeout)
        if on_token is None:
            response: Any = litellm.completion(**common)
            add_usage(getattr(response, "usage", None))
            return str(response.choices[0].message.content or "")
        pieces = []
        # The provider's timeout bounds each read; this bounds the whole streamed answer, so
        # a model trickling tokens cannot hold a question (and its thread) forever.
        deadline = time.monotonic() + s.llm_timeout
        for part in litellm.completion(**common, **self._streaming()):
            add_usage(getattr(part, "usage", None))
            choices = getattr(part, "choices", None) or []
            text = choices[0].delta.content if choices else None
            if text:
                streamed[0] = True
                pieces.append(text)
                on_token(text)
            if time.monotonic() > deadline:
                raise _AnswerTooSlow()
        return "".join(pieces)

    def _turn(
        self,
        messages: Sequence[Message],
        tools: Sequence[dict[str, Any]],
        on_token: TokenCallback | None,
        streamed: list[bool],
        timeout: float,
        tool_choice: str,
    ) -> Turn:
        common = self._common(messages, timeout)
        if tools:
            common["tools"] = list(tools)
            common["tool_choice"] = tool_choice
            # With tools, LiteLLM first imports its MCP gateway, whose optional ``mcp``
            # package is not installed; ours are plain functions, so skip that branch.
            common["_skip_mcp_handler"] = True
        if on_token is None:
            response: Any = litellm.completion(**common)
            add_usage(getattr(response, "usage", None))
            message = response.choices[0].message
            calls = tuple(
                ToolCall(
                    str(c.id or f"call_{i}"),
                    str(c.function.name or ""),
                    str(c.function.arguments or ""),
                )
                for i, c in enumerate(getattr(message, "tool_calls", None) or [])
            )
            return Turn(str(message.content or ""), calls)
        return _streamed_turn(
            litellm.completion(**common, **self._streaming()), on_token, streamed, timeout
        )

    def _explain(self, exc: Exception, status: int | None, limit: float | None = None) -> Exception:
        where = self._args.get("api_base") or "the provider"
        model = self._args["model"]
        seconds = self._settings.llm_timeout if limit is None else limit
        if isinstance(exc, litellm.Timeout) or timed_out(exc):
            return UpstreamUnavailable(
                f"The language model ({model}) did not answer within "
                f"{seconds:.3g} s. Try again, or raise CODEASK_LLM_TIMEOUT."
            )
        if isinstance(exc, _AnswerTooSlow):
            return UpstreamUnavailable(
                f"The language model ({model}) did not finish its answer within "
                f"{seconds:.3g} s. Try again, or raise CODEASK_LLM_TIMEOUT."
            )
        if status in (400, 422) and any(w in str(exc).lower() for w in ("tool", "function")):
            return ToolsRefused(
                f"The model {model} at {where} refused the search tools (HTTP {status}): "
                f"{short(exc)}. Set CODEASK_ANSWER_MODE=single for a model without tool calls."
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
        if unreachable(exc):
            return UpstreamUnavailable(
                f"Cannot reach the language model provider at {where} (tried "
                f"{self._settings.llm_retries + 1} times). Is it running, and is "
                "CODEASK_LLM_API_BASE right?"
            )
        return UpstreamUnavailable(
            f"The language model provider at {where} refused the request"
            f"{f' (HTTP {status})' if status else ''}: {short(exc)}"
        )


class ToolsRefused(ConfigError):
    """The provider refused a request because it offered tools (a model without them)."""


class _AnswerTooSlow(Exception):
    """The stream was still going when the answer's time ran out."""


def _streamed_turn(
    parts: Any, on_token: TokenCallback, streamed: list[bool], timeout: float
) -> Turn:
    """A turn assembled from stream deltas: text as it comes, tool calls by their index
    (a call's name and id come in its first delta, its arguments in pieces)."""
    deadline = time.monotonic() + timeout
    pieces: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    for part in parts:
        add_usage(getattr(part, "usage", None))
        choices = getattr(part, "choices", None) or []
        delta = choices[0].delta if choices else None
        text = getattr(delta, "content", None) if delta is not None else None
        if text:
            streamed[0] = True
            pieces.append(text)
            on_token(text)
        for n, piece in enumerate(getattr(delta, "tool_calls", None) or []):
            streamed[0] = True
            index = piece.index if getattr(piece, "index", None) is not None else n
            call = calls.setdefault(index, {"id": "", "name": "", "arguments": []})
            call["id"] = call["id"] or (piece.id or "")
            function = getattr(piece, "function", None)
            if function is not None:
                call["name"] = call["name"] or (function.name or "")
                call["arguments"].append(function.arguments or "")
        if time.monotonic() > deadline:
            raise _AnswerTooSlow()
    return Turn(
        "".join(pieces),
        tuple(
            ToolCall(c["id"] or f"call_{i}", c["name"], "".join(c["arguments"]))
            for i, c in sorted(calls.items())
        ),
    )


def parse_arguments(call: ToolCall) -> dict[str, Any]:
    """The call's arguments as an object; ValueError with a reason the model can act on."""
    text = call.arguments.strip() or "{}"
    if len(text) > MAX_ARGUMENTS:
        raise ValueError(f"the arguments are longer than {MAX_ARGUMENTS} characters")
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"the arguments are not valid JSON ({exc.msg})") from None
    except (ValueError, RecursionError):
        raise ValueError("the arguments are not valid JSON (too deeply nested)") from None
    if not isinstance(value, dict):
        raise ValueError("the arguments must be a JSON object")
    return value


def _status(exc: Exception) -> int | None:
    """The provider's HTTP status; None when no response came."""
    return None if isinstance(exc, _AnswerTooSlow) else http_status(exc)
