"""Cross-encoder reranking of fused search candidates."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from bot.settings import BotSettings
from bot.training.card import enabled_by_default
from indexer.errors import ConfigError
from indexer.models import Chunk, Hit

TINY_TOKENS = 80  # below this a chunk says too little on its own (a one-line assignment)
NEIGHBOUR_GAP = 3  # lines between two chunks that still count as neighbours
TRAINED_SUBDIR = Path("models") / "reranker"
RERANK_OFF = "none"


class Reranker(Protocol):
    """Scores (question, candidate) pairs; a higher score is more relevant."""

    @property
    def name(self) -> str: ...

    def score(self, question: str, hits: Sequence[Hit]) -> list[float]: ...


def pair_text(chunk: Chunk, neighbours: Sequence[Chunk] = ()) -> str:
    """What the cross-encoder reads for a chunk: its header, then the code in line order."""
    parts = sorted([chunk, *neighbours], key=lambda c: c.start_line)
    body = "\n".join(c.text for c in parts)
    return f"{chunk.header}\n{body}" if chunk.header else body


def neighbours_of(chunk: Chunk, pool: Sequence[Chunk]) -> list[Chunk]:
    """Chunks of the same file version directly above or below ``chunk``."""
    found = []
    for other in pool:
        if other.id == chunk.id or (other.repo, other.path, other.commit) != (
            chunk.repo,
            chunk.path,
            chunk.commit,
        ):
            continue
        above = 0 <= chunk.start_line - other.end_line <= NEIGHBOUR_GAP
        below = 0 <= other.start_line - chunk.end_line <= NEIGHBOUR_GAP
        if above or below:
            found.append(other)
    return found


def pair_texts(chunks: Sequence[Chunk], token_count: Callable[[str], int]) -> list[str]:
    """The text scored for each candidate; tiny ones borrow their neighbours' lines."""
    texts = []
    for chunk in chunks:
        tiny = token_count(chunk.text) < TINY_TOKENS
        texts.append(pair_text(chunk, neighbours_of(chunk, chunks) if tiny else ()))
    return texts


class CrossEncoderReranker:
    """A sentence-transformers ``CrossEncoder`` loaded from a folder or a hub name."""

    def __init__(self, model: str, max_length: int = 512, batch_size: int = 16) -> None:
        from sentence_transformers import CrossEncoder

        self._name = model
        self._batch_size = batch_size
        self._lock = threading.Lock()  # the model is not safe to call from two threads
        try:
            self._model: Any = CrossEncoder(model, device="cpu", max_length=max_length)
        except Exception as exc:  # the library raises many types for a missing model
            raise ConfigError(
                f"Cannot load reranker {model!r}: {exc}. Set CODEASK_RERANK_MODEL to a local "
                "cross-encoder folder, or to 'none' to answer without rerank."
            ) from exc

    @property
    def name(self) -> str:
        return self._name

    def token_count(self, text: str) -> int:
        return len(self._model.tokenizer.tokenize(text))

    def score(self, question: str, hits: Sequence[Hit]) -> list[float]:
        if not hits:
            return []
        texts = pair_texts([h.chunk for h in hits], self.token_count)
        pairs = [(question, text) for text in texts]
        with self._lock:
            scores = self._model.predict(
                pairs, batch_size=self._batch_size, show_progress_bar=False
            )
        return [float(s) for s in scores]


def trained_reranker_path(data_dir: Path) -> Path | None:
    """The reranker trained for this deployment, when one was saved under the data dir."""
    path = data_dir / TRAINED_SUBDIR
    return path if (path / "config.json").is_file() else None


_LOADED: dict[str, CrossEncoderReranker] = {}


def load_reranker(settings: BotSettings, data_dir: Path | None = None) -> Reranker | None:
    """The configured reranker, else the trained one under ``data_dir``, else None.

    A trained model whose card says ``enabled_by_default: false`` (it did not beat hybrid
    search on the golden sets) is only used when ``rerank_model`` names it explicitly.
    One model is loaded per process and name.
    """
    name = settings.rerank_model.strip()
    if name.lower() == RERANK_OFF:
        return None
    if not name and data_dir is not None:
        trained = trained_reranker_path(data_dir)
        name = str(trained) if trained and enabled_by_default(trained) else ""
    if not name:
        return None
    if name not in _LOADED:
        _LOADED[name] = CrossEncoderReranker(name)
    return _LOADED[name]
