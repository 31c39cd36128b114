"""The ONNX Runtime embedder gives the same vectors as the torch model it was exported from."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from indexer.embedding import Embedder
from indexer.onnx_embedder import OnnxEmbedder

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
    from indexer.errors import ConfigError

    with pytest.raises(ConfigError, match="local model folder"):
        OnnxEmbedder("some-org/not-here", onnx_dir)
