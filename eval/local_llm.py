"""A local, deterministic OpenAI-compatible chat server: the test model of the citation eval.

It speaks the OpenAI wire format over real HTTP on 127.0.0.1 (``POST /v1/chat/completions``
answered as one JSON completion, or as server-sent events when the request sets
``stream``; ``GET /v1/models``), so LiteLLM calls it like any provider and the product
only sees a base URL ending in ``/v1`` and some API key.

It stands in for a model that follows the prompt of ``bot/answer/prompt.py``:

* it reads the numbered sources (``[n] heading`` then ``BEGIN SOURCE n`` … ``END SOURCE n``)
  and the ``Question:`` line from the last user message that holds sources;
* it splits the question and every source (heading and text) into identifier and word
  tokens (camelCase and snake_case split, lower case, a crude suffix strip, English
  stop words dropped) and scores each source by the summed weight of the question tokens
  it shares, a token found in fewer sources weighing more;
* it cites the best source, and up to two more that score at least 60% of the best, with
  one sentence per cited source ending in its ``[n]``;
* when no source shares a token with the question, it replies "Not found in the indexed
  code." and names the first source as the closest place.

Nothing is random and nothing depends on the golden sets. Run it on its own with
``python -m eval.local_llm --port 8765`` and point ``CODEASK_LLM_API_BASE`` at
``http://127.0.0.1:8765/v1`` (any ``CODEASK_LLM_MODEL`` name).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import re
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from bot.answer import NOT_FOUND_TEXT
from eval.local_server import BackgroundServer
from indexer.source import identifiers_in

MODEL_NAME = "codeask-local"
MAX_CITED = 3
KEEP_RATIO = 0.6  # a source is cited too when it scores this share of the best one
STREAM_PIECE = 16  # characters per streamed delta

_HEADING = re.compile(r"^\[(\d+)\] (.+)$", re.MULTILINE)
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
_SUFFIXES = ("ing", "ed", "es", "s", "e")
STOP_WORDS = frozenset(
    """a about above after again all also am an and any are as at be because been before
    being below between both but by can could did do does doing done down during each else
    every few for from get gets got had has have having he her here how i if in into is it
    its itself just let like make makes may me might more most must my no nor not of off on
    once only or other our out over own same she should so some such than that the their
    them then there these they this those through to too under until up use used uses using
    very via was we were what when where whether which while who whom why will with would
    you your""".split()
)


# --- the model ---------------------------------------------------------------------------


@dataclass(frozen=True)
class PromptSource:
    number: int
    heading: str  # "repo/path:start-end (symbol)"
    text: str


def _stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def words_by_token(text: str) -> dict[str, str]:
    """Identifier and word tokens (whole identifiers and their camel/snake parts, stemmed),
    each mapped to the first word of ``text`` it came from."""
    out: dict[str, str] = {}
    for word in _WORD.findall(text):
        for part in (word, *_CAMEL.findall(word)):
            low = part.lower()
            if len(low) >= 2 and low not in STOP_WORDS:
                out.setdefault(_stem(low), word)
    return out


def tokens(text: str) -> set[str]:
    return set(words_by_token(text))


def parse_prompt(messages: Sequence[dict[str, Any]]) -> tuple[str, list[PromptSource]]:
    """The question and the numbered sources of the last user message that has sources,
    with those of the tool results that came after it."""
    for at in range(len(messages) - 1, -1, -1):
        content = messages[at].get("content")
        if messages[at].get("role") != "user" or not isinstance(content, str):
            continue
        if "BEGIN SOURCE" not in content:
            continue
        found = _sources(content)
        for later in messages[at + 1 :]:
            text = later.get("content")
            if later.get("role") == "tool" and isinstance(text, str):
                found += _sources(text)
        return _question(content), found
    last = next((m.get("content") for m in reversed(messages) if m.get("role") == "user"), "")
    return (last if isinstance(last, str) else ""), []


def _question(content: str) -> str:
    at = content.rfind("\nQuestion: ")
    if at < 0:
        return content
    rest = content[at + len("\nQuestion: ") :]
    return rest.split("\n\n", 1)[0].strip()


def _sources(content: str) -> list[PromptSource]:
    """``[n] heading`` lines directly followed by a fenced body, scanned in order."""
    found: list[PromptSource] = []
    pos = 0
    while (m := _HEADING.search(content, pos)) is not None:
        pos = m.end()
        number = int(m.group(1))
        begin = re.compile(rf"BEGIN SOURCE {number} (\S+)\n")
        b = begin.match(content, m.end() + 1)
        if b is None:
            continue
        end = content.find(f"\nEND SOURCE {number} {b.group(1)}", b.end() - 1)
        if end < 0:
            continue
        found.append(PromptSource(number, m.group(2).strip(), content[b.end() : end]))
        pos = end + 1
    return found


def _label(heading: str) -> str:
    """``symbol`` when the heading names one, else the location."""
    m = re.match(r"^(\S+?)(?: \((.+)\))?$", heading)
    if m and m.group(2):
        return f"`{m.group(2)}` in `{m.group(1)}`"
    return f"`{heading}`"


def answer_for(messages: Sequence[dict[str, Any]]) -> str:
    """The deterministic reply to a chat request (see the module docstring)."""
    question, sources = parse_prompt(messages)
    said = words_by_token(question)
    asked = set(said)
    if not sources:
        return NOT_FOUND_TEXT
    shared = [asked & tokens(f"{s.heading}\n{s.text}") for s in sources]
    df: dict[str, int] = {}
    for words in shared:
        for w in words:
            df[w] = df.get(w, 0) + 1
    n = len(sources)
    scores = [sum(math.log(1 + n / df[w]) for w in words) for words in shared]
    best = max(scores)
    if best <= 0:
        closest = sources[0]
        where = f"{_label(closest.heading)} [{closest.number}]"
        return f"{NOT_FOUND_TEXT} The closest place to look is {where}."
    order = sorted(range(n), key=lambda i: (-scores[i], i))
    cited = [i for i in order[:MAX_CITED] if scores[i] >= KEEP_RATIO * best]
    sentences = []
    for rank, i in enumerate(cited):
        s = sources[i]
        topics = ", ".join(sorted({said[t] for t in shared[i]})[:6])
        lead = "The answer is in" if rank == 0 else "Related code is in"
        sentences.append(f"{lead} {_label(s.heading)}, which deals with {topics} [{s.number}].")
    return " ".join(sentences)


def reply_for(body: dict[str, Any]) -> tuple[str, list[ToolCallSpec]]:
    """The reply to a request that may offer tools: when it offers ``find_definitions``
    and no tool has run yet, look up the code names of the question (at most two, in one
    round); otherwise answer from the sources (see ``answer_for``)."""
    messages = body["messages"]
    offered = {
        t.get("function", {}).get("name") for t in body.get("tools") or [] if isinstance(t, dict)
    }
    ran = any(isinstance(m, dict) and m.get("role") == "tool" for m in messages)
    if "find_definitions" in offered and body.get("tool_choice") != "none" and not ran:
        question, _ = parse_prompt(messages)
        names = [n for n in dict.fromkeys(identifiers_in(question)) if _looks_like_code(n)]
        if names:
            return "", [("find_definitions", json.dumps({"name": n})) for n in names[:2]]
    return answer_for(messages), []


def _looks_like_code(name: str) -> bool:
    """snake_case, camelCase, dotted or CONSTANT names: not an English word."""
    return "_" in name or "." in name or (name != name.lower() and name[1:] != name[1:].lower())


# --- the wire format (shared with tests/fake_llm.py) -------------------------------------

ToolCallSpec = tuple[str, str]  # (function name, arguments as the model writes them)


def usage_json(body: dict[str, Any], content: str) -> dict[str, int]:
    """Token counts as a provider reports them; here a deterministic four characters per
    token of the request's messages and of the reply."""
    sent = sum(len(str(m.get("content") or "")) for m in body.get("messages") or [])
    prompt, completion = max(1, sent // 4), max(1, len(content) // 4)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def wants_usage(body: dict[str, Any]) -> bool:
    """Whether a streamed request asked for the token counts (stream_options.include_usage)."""
    options = body.get("stream_options")
    return isinstance(options, dict) and options.get("include_usage") is True


def completion_json(
    model: str,
    content: str,
    created: int | None = None,
    tool_calls: Sequence[ToolCallSpec] = (),
    usage: dict[str, int] | None = None,
) -> dict[str, Any]:
    """A non-streaming ``chat.completion`` body."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = [
            {"id": f"call_{i}", "type": "function", "function": {"name": n, "arguments": a}}
            for i, (n, a) in enumerate(tool_calls)
        ]
    return {
        "id": "chatcmpl-local",
        "object": "chat.completion",
        "created": int(time.time()) if created is None else created,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if tool_calls else "stop",
            }
        ],
        "usage": usage or {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
    }


def sse_event(model: str, created: int, delta: dict[str, Any], finish: str | None) -> bytes:
    """One ``chat.completion.chunk`` server-sent event."""
    chunk = {
        "id": "chatcmpl-local",
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return f"data: {json.dumps(chunk)}\n\n".encode()


async def write_stream(
    request: web.Request,
    response: web.StreamResponse,
    content: str,
    model: str,
    piece: int,
    gap: float = 0.0,
    tool_calls: Sequence[ToolCallSpec] = (),
    usage: dict[str, int] | None = None,
) -> web.StreamResponse:
    """Send ``content`` as SSE deltas of ``piece`` characters, ``gap`` seconds apart, then
    each tool call (its id and name, then its arguments in pieces), then stop and
    ``[DONE]``."""
    created = int(time.time())
    await response.prepare(request)
    pieces = [content[i : i + piece] for i in range(0, len(content), piece)]
    for i, text in enumerate(pieces):
        if i and gap:
            await asyncio.sleep(gap)
        delta = {"content": text, **({"role": "assistant"} if i == 0 else {})}
        await response.write(sse_event(model, created, delta, None))
    for i, (name, arguments) in enumerate(tool_calls):
        head = {"index": i, "id": f"call_{i}", "type": "function"}
        head["function"] = {"name": name, "arguments": ""}
        await response.write(sse_event(model, created, {"tool_calls": [head]}, None))
        for at in range(0, len(arguments), piece):
            part = {"index": i, "function": {"arguments": arguments[at : at + piece]}}
            await response.write(sse_event(model, created, {"tool_calls": [part]}, None))
    finish = "tool_calls" if tool_calls else "stop"
    await response.write(sse_event(model, created, {}, finish))
    if usage is not None:  # asked with stream_options.include_usage: a last, choiceless chunk
        last = {"id": "chatcmpl-local", "object": "chat.completion.chunk", "created": created}
        last |= {"model": model, "choices": [], "usage": usage}
        await response.write(f"data: {json.dumps(last)}\n\n".encode())
    await response.write(b"data: [DONE]\n\n")
    await response.write_eof()
    return response


# --- the server ----------------------------------------------------------------------------


class LocalLLM(BackgroundServer):
    """The deterministic model behind real HTTP, served from a background thread."""

    label = "local LLM server"

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        super().__init__(host, port)
        self.requests = 0

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_get("/v1/models", self._models)
        return app

    async def _models(self, _request: web.Request) -> web.Response:
        return web.json_response(
            {"object": "list", "data": [{"id": MODEL_NAME, "object": "model"}]}
        )

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        try:
            body = await request.json()
            messages = body["messages"]
            if not isinstance(messages, list):
                raise TypeError("messages must be a list")
        except (ValueError, KeyError, TypeError) as exc:
            error = {"message": f"bad request: {exc}", "type": "invalid_request_error"}
            return web.json_response({"error": error}, status=400)
        self.requests += 1
        content, calls = reply_for(body)
        model = str(body.get("model") or MODEL_NAME)
        usage = usage_json(body, content)
        if not body.get("stream"):
            return web.json_response(completion_json(model, content, tool_calls=calls, usage=usage))
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        try:
            return await write_stream(
                request,
                response,
                content,
                model,
                STREAM_PIECE,
                tool_calls=calls,
                usage=usage if wants_usage(body) else None,
            )
        except ConnectionResetError:  # the client went away: nothing left to send
            return response


@contextmanager
def running_local_llm(host: str = "127.0.0.1", port: int = 0) -> Iterator[LocalLLM]:
    server = LocalLLM(host, port)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    args = parser.parse_args(argv)
    server = LocalLLM(args.host, args.port)
    print(f"serving {MODEL_NAME} at http://{args.host}:{args.port}/v1", flush=True)
    web.run_app(server.app(), host=args.host, port=args.port, print=None, access_log=None)


if __name__ == "__main__":
    main()
