"""Sentence embeddings for chunks and questions, offline by default."""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

import numpy as np

from indexer.embedding.model_files import cpu_flags, resolve_model_path
from indexer.errors import ConfigError
from indexer.models import Chunk
from indexer.settings import DEFAULT_EMBED_MODEL

EMBED_CHAR_BUDGET = 1200  # ~256 word pieces: what MiniLM actually reads


class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of a fixed dimension."""

    @property
    def name(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


def embedding_text(chunk: Chunk) -> str:
    """What the bi-encoder sees: header, symbol, then the start of the code."""
    head = f"{chunk.header}\n{chunk.symbol}\n"
    return head + chunk.text[: max(200, EMBED_CHAR_BUDGET - len(head))]


def cache_key(model: str, text: str) -> str:
    return hashlib.sha256(f"{model}\0{text}".encode()).hexdigest()


def cpu_has_bf16() -> bool:
    """Whether the CPU multiplies bfloat16 natively (AVX512-BF16 or AMX), not emulated."""
    flags = cpu_flags()
    return "avx512_bf16" in flags or "amx_bf16" in flags


def require_bf16(setting: str) -> None:
    """Refuse ``setting``'s bf16 backend on a CPU that would emulate bfloat16."""
    if not cpu_has_bf16():
        raise ConfigError(
            f"{setting}=torch-bf16 needs a CPU with native bfloat16 (AMX or AVX512-BF16) "
            "and this one has neither; use onnx-int8 or torch."
        )


class WrappedEmbedder:
    """An embedder that adds something around another one (a memo, a timer, a fault): it
    keeps the inner model's name and dimension, so cache keys and stores stay the same."""

    def __init__(self, inner: Embedder) -> None:
        self._inner = inner

    @property
    def name(self) -> str:
        return self._inner.name

    @property
    def dimension(self) -> int:
        return self._inner.dimension

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self._inner.embed(texts)


class SentenceTransformerEmbedder:
    """A sentence-transformers model loaded from a local path (or a hub, where reachable).

    ``bfloat16``: the weights are cast to bfloat16, so on a CPU with native bf16 (AMX or
    AVX512-BF16) every matrix product runs at bf16 speed (measured in
    ``bench/bench_embedders.py``); pooled vectors are normalised in float32. Refused on
    CPUs without it, where bf16 is emulated and slower than float32.
    """

    def __init__(
        self,
        model: str = DEFAULT_EMBED_MODEL,
        threads: int = 0,
        batch_size: int = 0,
        bfloat16: bool = False,
    ):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        import torch
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()

        if bfloat16:
            require_bf16("CODEASK_EMBED_BACKEND")
        torch.set_num_threads(threads or os.cpu_count() or 1)
        self._name = f"{model}@bf16" if bfloat16 else model
        self._bfloat16 = bfloat16
        self._batch_size = batch_size or 32
        self._lock = threading.Lock()
        try:
            self._model = SentenceTransformer(resolve_model_path(model), device="cpu")
        except Exception as exc:  # the library raises many types for a missing model
            raise ConfigError(
                f"Cannot load embedding model {model!r}: {exc}. Set CODEASK_EMBED_MODEL to a "
                "local sentence-transformers folder (no model hub is reachable offline)."
            ) from exc
        get_dim = (
            getattr(self._model, "get_embedding_dimension", None)
            or self._model.get_sentence_embedding_dimension
        )
        dim = get_dim()
        if dim is None:
            raise ConfigError(f"Embedding model {model!r} does not report its dimension")
        self._dim = int(dim)
        if bfloat16:
            self._model.to(torch.bfloat16)

    @property
    def name(self) -> str:
        return self._name

    @property
    def dimension(self) -> int:
        return self._dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self._dim), dtype=np.float32)
        # Sorting by length keeps padding (wasted work) small within each batch.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        with self._lock:
            if self._bfloat16:
                pooled = self._model.encode(
                    [texts[i] for i in order],
                    batch_size=self._batch_size,
                    convert_to_tensor=True,
                    show_progress_bar=False,
                )
                vectors = pooled.float().numpy()  # normalised below, in float32
                norms = np.linalg.norm(vectors, axis=1, keepdims=True)
                vectors = vectors / np.clip(norms, 1e-12, None)
            else:
                vectors = self._model.encode(
                    [texts[i] for i in order],
                    batch_size=self._batch_size,
                    normalize_embeddings=True,
                    convert_to_numpy=True,
                    show_progress_bar=False,
                )
        out = np.empty_like(vectors, dtype=np.float32)
        out[order] = vectors
        return out


class EmbeddingCache(Protocol):
    def get_many(self, keys: Sequence[str]) -> dict[str, np.ndarray]: ...

    def put_many(self, items: dict[str, np.ndarray]) -> None: ...


def embed_with_cache(
    embedder: Embedder,
    cache: EmbeddingCache,
    texts: Sequence[str],
    batch: int = 256,
    progress: Callable[[int], None] | None = None,
) -> tuple[np.ndarray, int]:
    """Vectors for ``texts``, computing only those not cached; returns (vectors, computed)."""
    keys = [cache_key(embedder.name, t) for t in texts]
    found = cache.get_many(list(dict.fromkeys(keys)))
    missing = list(dict.fromkeys(k for k in keys if k not in found))
    text_of = dict(zip(keys, texts, strict=True))
    for i in range(0, len(missing), batch):
        part = missing[i : i + batch]
        vectors = embedder.embed([text_of[k] for k in part])
        fresh = {k: v for k, v in zip(part, vectors, strict=True)}
        cache.put_many(fresh)  # persisted per batch: a crash keeps the work done so far
        found.update(fresh)
        if progress:
            progress(len(part))
    if not keys:
        return np.zeros((0, embedder.dimension), dtype=np.float32), 0
    return np.stack([found[k] for k in keys]).astype(np.float32), len(missing)


_EMBEDDERS: dict[tuple[str, str, int, int], Embedder] = {}


def load_embedder(
    model: str,
    threads: int = 0,
    batch_size: int = 0,
    backend: str = "torch",
    onnx_dir: Path | None = None,
) -> Embedder:
    """One loaded model per process and configuration (``batch_size`` 0: the backend's own).

    The ONNX backends export the model once into ``onnx_dir`` (the data dir's
    ``models/onnx``; see :func:`indexer.embedding.open_embedder`).
    """
    key = (model, backend, threads, batch_size)
    if key not in _EMBEDDERS:
        if backend.startswith("onnx"):
            from indexer.embedding.onnx import OnnxEmbedder

            if onnx_dir is None:
                raise ConfigError(f"the {backend} embedding backend needs a folder for its export")
            _EMBEDDERS[key] = OnnxEmbedder(
                model,
                onnx_dir,
                quantized=backend == "onnx-int8",
                threads=threads,
                batch_size=batch_size,
            )
        else:
            _EMBEDDERS[key] = SentenceTransformerEmbedder(
                model, threads, batch_size, bfloat16=backend == "torch-bf16"
            )
    return _EMBEDDERS[key]
