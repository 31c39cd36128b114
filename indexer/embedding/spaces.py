"""Which vectors may share an index: those of one model, whichever local backend ran it."""

from __future__ import annotations

from collections.abc import Iterable

from indexer.embedding.base import Embedder
from indexer.errors import ConfigError
from indexer.models import RepoState

# What the torch and ONNX backends add to a model's name: their vectors search together
# (cosine >= 0.98 to torch), so switching backends re-indexes repository by repository.
LOCAL_BACKEND_MARKS = ("@onnx-int8", "@onnx", "@bf16")
REINDEX = (
    "re-index every repository with the new one: into a fresh CODEASK_DATA_DIR (or a new "
    "CODEASK_OPENSEARCH_INDEX) with `codeask index --full`"
)


def vector_space(embedder_name: str) -> str:
    """The model behind an embedder's name: vectors of one space may be searched together."""
    for mark in LOCAL_BACKEND_MARKS:
        if embedder_name.endswith(mark):
            return embedder_name[: -len(mark)]
    return embedder_name


def embedder_of(config_version: str) -> str:
    """The embedder name in a config version (``chunker-N/names-N/<name>``, see
    ``indexer.jobs.indexing.config_version``); empty for any other format."""
    parts = config_version.split("/", 2)
    if len(parts) < 3 or not parts[0].startswith("chunker-") or not parts[1].startswith("names-"):
        return ""
    return parts[2]


def refuse_other_model(states: Iterable[RepoState], embedder: Embedder, skip: str = "") -> None:
    """ConfigError when a repository in the store (other than ``skip``, which is about to be
    re-indexed) holds vectors of another model than ``embedder``'s."""
    mine = vector_space(embedder.name)
    others: dict[str, list[str]] = {}
    for state in states:
        theirs = embedder_of(state.config_version)
        if state.repo != skip and theirs and vector_space(theirs) != mine:
            others.setdefault(theirs, []).append(state.repo)
    if not others:
        return
    held = "; ".join(
        f"{name} ({', '.join(sorted(repos)[:3])}{', …' if len(repos) > 3 else ''})"
        for name, repos in sorted(others.items())
    )
    raise ConfigError(
        f"The index holds vectors of another embedding model ({held}) than the configured "
        f"{embedder.name}; vectors of two models are never mixed in one index. Set "
        "CODEASK_EMBED_MODEL and CODEASK_EMBED_BACKEND back to what built the index, or "
        f"{REINDEX}."
    )
