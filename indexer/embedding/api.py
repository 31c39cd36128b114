"""Embeddings from a remote endpoint through LiteLLM (OpenAI, Voyage, Cohere, Ollama, or an
OpenAI-compatible server such as Text Embeddings Inference or vLLM).

Texts go out in batches, several requests at once, each retried with backoff on 429, 5xx
or a refused connection. Every reply is checked: one vector per text, all of the size the
first reply (or ``CODEASK_EMBED_DIMENSION``) set, so vectors of another model or size never
reach an index.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import urlsplit

import numpy as np

from indexer.embedding.spaces import REINDEX
from indexer.errors import ConfigError, UpstreamUnavailable
from indexer.providers import (
    RETRY_STATUS,
    http_status,
    import_litellm,
    provider_arguments,
    short,
    timed_out,
    unreachable,
)
from indexer.settings import IndexerSettings

DEFAULT_BATCH_SIZE = 64


class ApiEmbedder:
    """An ``Embedder`` whose vectors come from an embeddings endpoint.

    ``name`` holds the model, the endpoint's host and the document prefix, so the
    embedding cache and each repository's config version never take its vectors for
    another model's. Questions (``embed_queries``) get ``query_prefix``, chunks
    (``embed``) ``document_prefix``.
    """

    def __init__(
        self,
        model: str,
        api_base: str = "",
        api_key: str = "",
        *,
        batch_size: int = DEFAULT_BATCH_SIZE,
        concurrency: int = 4,
        retries: int = 3,
        timeout: float = 60.0,
        dimension: int = 0,
        query_prefix: str = "",
        document_prefix: str = "",
        backoff: float = 1.0,
    ) -> None:
        if not model.strip():
            raise ConfigError("CODEASK_EMBED_BACKEND=api needs CODEASK_EMBED_MODEL.")
        self._args = provider_arguments(model, api_base, api_key)
        self._where = self._args.get("api_base") or "the provider"
        host = urlsplit(self._args.get("api_base", "")).netloc or "provider"
        name = f"api:{self._args['model']}@{host}"
        if document_prefix:
            name += f"+doc-{hashlib.sha256(document_prefix.encode()).hexdigest()[:8]}"
        self._name = name
        self._batch_size = max(1, batch_size)
        self._retries, self._timeout, self._backoff = retries, timeout, backoff
        self._query_prefix, self._document_prefix = query_prefix, document_prefix
        self._dimension = dimension
        self._dimension_from = "CODEASK_EMBED_DIMENSION" if dimension else ""
        self._lock = threading.Lock()
        self._client: Any = None  # see _openai_client
        self._pool = ThreadPoolExecutor(max(1, concurrency), thread_name_prefix="api-embed")

    @classmethod
    def from_settings(cls, settings: IndexerSettings) -> ApiEmbedder:
        return cls(
            settings.embed_model,
            settings.embed_api_base,
            settings.embed_api_key,
            batch_size=settings.embed_batch_size or DEFAULT_BATCH_SIZE,
            concurrency=settings.embed_concurrency,
            retries=settings.embed_retries,
            timeout=settings.embed_timeout,
            dimension=settings.embed_dimension,
            query_prefix=settings.embed_query_prefix,
            document_prefix=settings.embed_document_prefix,
        )

    @property
    def name(self) -> str:
        return self._name

    @property
    def dimension(self) -> int:
        """The vector size; asks the endpoint once when neither a reply nor a setting told."""
        if not self._dimension:
            self.embed(["dimension probe"])
        return self._dimension

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of chunks (``document_prefix`` first)."""
        return self._embed_all([self._document_prefix + t for t in texts])

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of questions (``query_prefix`` first)."""
        return self._embed_all([self._query_prefix + t for t in texts])

    def _embed_all(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        size = self._batch_size
        batches = [texts[i : i + size] for i in range(0, len(texts), size)]
        if len(batches) == 1:
            return self._embed_batch(batches[0])
        return np.concatenate(list(self._pool.map(self._embed_batch, batches)))

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        response = self._with_retries(texts)
        rows = sorted(_items(response), key=lambda item: int(item.get("index", 0)))
        if len(rows) != len(texts):
            raise UpstreamUnavailable(
                f"The embeddings endpoint at {self._where} returned {len(rows)} vectors for "
                f"{len(texts)} texts ({self._args['model']})."
            )
        vectors = np.asarray([row["embedding"] for row in rows], dtype=np.float32)
        self._check_dimension(int(vectors.shape[1]) if vectors.ndim == 2 else 0)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return (vectors / np.clip(norms, 1e-12, None)).astype(np.float32)

    def _check_dimension(self, got: int) -> None:
        with self._lock:
            if not self._dimension:
                self._dimension, self._dimension_from = got, "its first reply"
                return
            expected, source = self._dimension, self._dimension_from
        if got != expected:
            raise ConfigError(
                f"The embeddings endpoint at {self._where} returned {got}-dimensional vectors "
                f"for {self._args['model']} where {expected} were expected (from {source}). "
                "Nothing of this batch was stored: vectors of another model or size are never "
                f"mixed into an index. If the model changed on purpose, {REINDEX}."
            )

    def _openai_client(self) -> Any:
        """For OpenAI-protocol endpoints, a client that never retries by itself; None for
        other providers. LiteLLM turns ``max_retries=0`` into 2 for OpenAI embeddings and
        sets that on any client it is given, which would multiply our retries by three."""
        with self._lock:
            if self._client is None:
                litellm = import_litellm()
                _, provider, _, _ = litellm.get_llm_provider(
                    model=self._args["model"], api_base=self._args.get("api_base")
                )
                self._client = False
                if provider == "openai":
                    import openai

                    try:
                        self._client = _client_without_retries()(
                            api_key=self._args.get("api_key"),
                            base_url=self._args.get("api_base"),
                            max_retries=0,
                            timeout=self._timeout,
                        )
                    except openai.OpenAIError as exc:
                        raise ConfigError(
                            f"The embeddings endpoint needs a key ({exc}). Set "
                            "CODEASK_EMBED_API_KEY."
                        ) from exc
            return self._client or None

    def _with_retries(self, texts: list[str]) -> Any:
        litellm = import_litellm()
        client = self._openai_client()
        extra = {"client": client} if client is not None else {}
        attempt = 0
        while True:
            try:
                return litellm.embedding(
                    **self._args, **extra, input=texts, timeout=self._timeout, max_retries=0
                )
            except Exception as exc:  # LiteLLM wraps every provider error; mapped below
                status = http_status(exc)
                transient = status in RETRY_STATUS or unreachable(exc)
                if not transient or attempt >= self._retries:
                    raise self._explain(exc, status) from exc
                time.sleep(self._backoff * 2**attempt)
                attempt += 1

    def _explain(self, exc: Exception, status: int | None) -> Exception:
        model, where, tries = self._args["model"], self._where, self._retries + 1
        if timed_out(exc):
            return UpstreamUnavailable(
                f"The embeddings endpoint at {where} did not answer within {self._timeout:.3g} s "
                f"({model}). Try again, or raise CODEASK_EMBED_TIMEOUT."
            )
        if status in (401, 403):
            return UpstreamUnavailable(
                f"The embeddings endpoint at {where} rejected the API key (HTTP {status}). "
                "Check CODEASK_EMBED_API_KEY."
            )
        if status == 404:
            return ConfigError(
                f"The embeddings endpoint at {where} does not know the model {model!r}. "
                "Check CODEASK_EMBED_MODEL and CODEASK_EMBED_API_BASE."
            )
        if status == 429 or (status is not None and status >= 500):
            state, advice = (
                ("is rate limiting us", "Try again later, or lower CODEASK_EMBED_CONCURRENCY.")
                if status == 429
                else ("is failing", "Try again later.")
            )
            return UpstreamUnavailable(
                f"The embeddings endpoint at {where} {state} (HTTP {status}) after {tries} "
                f"attempts. {advice}"
            )
        if unreachable(exc):
            return UpstreamUnavailable(
                f"Cannot reach the embeddings endpoint at {where} (tried {tries} times). Is it "
                "running, and is CODEASK_EMBED_API_BASE right?"
            )
        return UpstreamUnavailable(
            f"The embeddings endpoint at {where} refused the request"
            f"{f' (HTTP {status})' if status else ''}: {short(exc)}"
        )


def _client_without_retries() -> Any:
    """An OpenAI client class whose retry count stays 0 whatever is set on it."""
    import openai

    class NoRetries(openai.OpenAI):
        @property
        def max_retries(self) -> int:
            return 0

        @max_retries.setter
        def max_retries(self, _value: int) -> None:
            pass

    return NoRetries


def _items(response: Any) -> list[dict[str, Any]]:
    """The reply's ``data`` as plain dicts (LiteLLM gives objects or dicts by provider)."""
    data = response["data"] if isinstance(response, dict) else response.data
    return [item if isinstance(item, dict) else dict(item) for item in data]


_API_EMBEDDERS: dict[tuple[Any, ...], ApiEmbedder] = {}
_API_LOCK = threading.Lock()


def load_api_embedder(settings: IndexerSettings) -> ApiEmbedder:
    """One api embedder per process and configuration (its pool and learned dimension)."""
    key = tuple(
        getattr(settings, f)
        for f in (
            "embed_model",
            "embed_api_base",
            "embed_api_key",
            "embed_batch_size",
            "embed_concurrency",
            "embed_retries",
            "embed_timeout",
            "embed_dimension",
            "embed_query_prefix",
            "embed_document_prefix",
        )
    )
    with _API_LOCK:
        if key not in _API_EMBEDDERS:
            _API_EMBEDDERS[key] = ApiEmbedder.from_settings(settings)
        return _API_EMBEDDERS[key]
