"""One loaded embedding model per process and configuration."""

from __future__ import annotations

from pathlib import Path

from indexer.embedding.base import Embedder
from indexer.embedding.torch_backend import SentenceTransformerEmbedder
from indexer.errors import ConfigError

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
    if backend == "api":
        raise ConfigError(
            "The api embedding backend is configured from settings: use "
            "indexer.embedding.open_embedder."
        )
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
