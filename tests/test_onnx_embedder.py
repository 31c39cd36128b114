"""The fast embedders (ONNX Runtime, bf16 torch) give the vectors of the float32 torch model."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from indexer.embedding import (
    Embedder,
    OnnxEmbedder,
    SentenceTransformerEmbedder,
    cpu_has_bf16,
    open_embedder,
)
from indexer.errors import ConfigError
from indexer.settings import IndexerSettings

TEXTS = [
    "def send_receipt(smtp, customer, order):\n    smtp.sendmail(customer.email, body)",
    "class TokenBucket:\n    def allow(self): ...",
    "how do we throttle requests?",
    "# Install\n\nRun make demo to index this repository.",
    "x",
]


@pytest.fixture(scope="module")
def onnx_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("onnx")


@pytest.mark.parametrize("quantized", [False, True])
def test_onnx_matches_torch(quantized: bool, onnx_dir: Path, embedder: Embedder) -> None:
    fast = OnnxEmbedder("all-MiniLM-L6-v2", onnx_dir, quantized=quantized, batch_size=2)
    assert fast.dimension == embedder.dimension
    assert fast.name != embedder.name  # different vectors never share cache entries
    reference = embedder.embed(TEXTS)
    vectors = fast.embed(TEXTS)
    cosine = (vectors * reference).sum(axis=1)
    assert cosine.min() > (0.97 if quantized else 0.9999)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    # Same neighbours: the question is closest to the same code in both.
    assert int(np.argmax(reference[:2] @ reference[2])) == int(np.argmax(vectors[:2] @ vectors[2]))


def test_onnx_needs_a_local_model(onnx_dir: Path) -> None:
    with pytest.raises(ConfigError, match="local model folder"):
        OnnxEmbedder("some-org/not-here", onnx_dir)


@pytest.mark.skipif(not cpu_has_bf16(), reason="this CPU has no native bfloat16")
def test_bf16_matches_torch(embedder: Embedder, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODEASK_EMBED_BACKEND", "torch-bf16")
    fast = open_embedder(IndexerSettings())  # the setting picks the backend
    assert fast.name == "all-MiniLM-L6-v2@bf16" != embedder.name
    assert fast.dimension == embedder.dimension
    reference = embedder.embed(TEXTS)
    vectors = fast.embed(TEXTS)
    assert vectors.dtype == np.float32
    assert (vectors * reference).sum(axis=1).min() > 0.999
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)  # normalised in fp32
    # Batches are length-sorted and put back: the order of the input is kept.
    assert np.allclose(fast.embed(TEXTS[::-1]), vectors[::-1], atol=1e-2)


def test_bf16_refused_where_the_cpu_would_emulate_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("indexer.embedding.torch_backend.cpu_has_bf16", lambda: False)
    with pytest.raises(ConfigError, match=r"native bfloat16.*onnx-int8"):
        SentenceTransformerEmbedder(bfloat16=True)
