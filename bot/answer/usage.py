"""Tokens a question cost, as the provider reports them (``usage`` of each completion).

The Asker opens a count for each question; every language-model call made while answering
it (generation, agent turns, the listwise rerank) adds what the provider reported. A call
whose provider reports nothing adds nothing: the figures are never estimated.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any


@dataclass
class TokenUsage:
    prompt: int = 0
    completion: int = 0


_CURRENT: ContextVar[TokenUsage | None] = ContextVar("codeask_token_usage", default=None)


@contextmanager
def counting_tokens() -> Iterator[TokenUsage]:
    """A fresh count for the calls made inside the block (in this thread or context)."""
    usage = TokenUsage()
    token = _CURRENT.set(usage)
    try:
        yield usage
    finally:
        _CURRENT.reset(token)


def add_usage(reported: Any) -> None:
    """Add a completion's ``usage`` (an object or a mapping) to the open count, if any."""
    usage = _CURRENT.get()
    if usage is None or reported is None:
        return
    get = reported.get if isinstance(reported, dict) else lambda k: getattr(reported, k, None)
    usage.prompt += _count(get("prompt_tokens"))
    usage.completion += _count(get("completion_tokens"))


def _count(value: Any) -> int:
    return value if isinstance(value, int) and value > 0 else 0
