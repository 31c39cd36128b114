"""The sentence-transformers (PyTorch) backend, float32 or native bfloat16."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence

import numpy as np

from indexer.embedding.model_files import cpu_flags, resolve_model_path
from indexer.errors import ConfigError
from indexer.settings import DEFAULT_EMBED_MODEL


def cpu_has_bf16() -> bool:
    """Whether the CPU multiplies bfloat16 natively (AVX512-BF16 or AMX), not emulated."""
    flags = cpu_flags()
    return "avx512_bf16" in flags or "amx_bf16" in flags


def require_torch(setting: str) -> None:
    """Refuse ``setting``'s torch backend where codeask[train] (torch) is not installed."""
    import importlib.util

    try:
        found = importlib.util.find_spec("sentence_transformers") is not None
    except ImportError:
        found = False
    if not found:
        raise ConfigError(
            f"{setting}=torch needs codeask[train] (torch and sentence-transformers), which "
            "this install does not have; use onnx-int8 or onnx (the default path)."
        )


def require_bf16(setting: str) -> None:
    """Refuse ``setting``'s bf16 backend on a CPU that would emulate bfloat16."""
    if not cpu_has_bf16():
        raise ConfigError(
            f"{setting}=torch-bf16 needs a CPU with native bfloat16 (AMX or AVX512-BF16) "
            "and this one has neither; use onnx-int8 or torch."
        )


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
        require_torch("CODEASK_EMBED_BACKEND")
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
