"""A local, deterministic OpenAI-compatible embeddings server (``POST /v1/embeddings``).

Each text's vector is a hashed bag of its word and identifier tokens (those the local chat
model matches on), so texts that share words are close and a search over them finds the
chunk that names what was asked. Tests script failures per request (``Fault``: an HTTP
status, a delay, a vector of another size); the bench measures throughput against it.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
from aiohttp import web

from eval.local_llm import tokens
from eval.local_server import BackgroundServer

MODEL_NAME = "codeask-local-embed"
DIMENSION = 256


def bag_of_words(text: str, dimension: int = DIMENSION) -> np.ndarray:
    """The text's tokens hashed into ``dimension`` counts (one fixed axis for no tokens)."""
    vector = np.zeros(dimension, dtype=np.float32)
    for token in tokens(text) or {""}:
        digest = hashlib.blake2b(token.encode(), digest_size=8).digest()
        vector[int.from_bytes(digest, "little") % dimension] += 1.0
    return vector


@dataclass
class Fault:
    """What one request gets instead of a plain answer."""

    status: int = 200
    delay: float = 0.0  # seconds before the answer starts
    dimension: int = 0  # vectors of this size instead (0: the server's own)


class LocalEmbeddings(BackgroundServer):
    """The deterministic embedding model behind real HTTP, from a background thread."""

    label = "local embeddings server"

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        dimension: int = DIMENSION,
        delay: float = 0.0,
    ) -> None:
        super().__init__(host, port)
        self.dimension = dimension
        self.delay = delay  # seconds each request takes (a model's compute, in the bench)
        self.faults: list[Fault] = []  # popped one per request; none left: plain answers
        self.requests: list[list[str]] = []  # the inputs of every request, in arrival order

    def app(self) -> web.Application:
        app = web.Application(client_max_size=64 * 1024**2)
        app.router.add_post("/v1/embeddings", self._embeddings)
        return app

    async def _embeddings(self, request: web.Request) -> web.Response:
        try:
            body = await request.json()
            texts = body["input"]
            if isinstance(texts, str):
                texts = [texts]
            if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
                raise TypeError("input must be a string or a list of strings")
        except (ValueError, KeyError, TypeError) as exc:
            error = {"message": f"bad request: {exc}", "type": "invalid_request_error"}
            return web.json_response({"error": error}, status=400)
        self.requests.append(texts)
        fault = self.faults.pop(0) if self.faults else Fault()
        if self.delay or fault.delay:
            await asyncio.sleep(self.delay + fault.delay)
        if fault.status != 200:
            error = {"message": f"scripted status {fault.status}", "type": "server_error"}
            return web.json_response({"error": error}, status=fault.status)
        size = fault.dimension or self.dimension
        as_base64 = body.get("encoding_format") == "base64"
        data = [
            {"object": "embedding", "index": i, "embedding": _encode(text, size, as_base64)}
            for i, text in enumerate(texts)
        ]
        words = sum(len(t.split()) for t in texts)
        return web.json_response(
            {
                "object": "list",
                "data": data,
                "model": str(body.get("model") or MODEL_NAME),
                "usage": {"prompt_tokens": words, "total_tokens": words},
            }
        )


def _encode(text: str, dimension: int, as_base64: bool) -> str | list[float]:
    vector = bag_of_words(text, dimension)
    if as_base64:  # what the OpenAI client asks for unless told otherwise
        return base64.b64encode(vector.astype("<f4").tobytes()).decode()
    return [float(x) for x in vector]


@contextmanager
def running_local_embeddings(
    dimension: int = DIMENSION, delay: float = 0.0
) -> Iterator[LocalEmbeddings]:
    server = LocalEmbeddings(dimension=dimension, delay=delay)
    server.start()
    try:
        yield server
    finally:
        server.stop()
