"""Cross-encoder reranking of fused search candidates."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from bot.answer.model_card import enabled_by_default
from bot.settings import BotSettings
from indexer.embedding import BatchWorkers, cpu_session, ensure_onnx_model, length_batches
from indexer.errors import ConfigError
from indexer.models import Chunk, Hit

TINY_TOKENS = 80  # below this a chunk says too little on its own (a one-line assignment)
NEIGHBOUR_GAP = 3  # lines between two chunks that still count as neighbours
TRAINED_SUBDIR = Path("models") / "reranker"
RERANK_OFF = "none"
RERANK_LLM = "llm"  # listwise rerank by the configured language model (bot.answer.llm_rerank)


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
    place = (chunk.repo, chunk.path, chunk.commit)
    for other in pool:
        if (other.repo, other.path, other.commit) != place or (
            other.start_line == chunk.start_line and other.end_line == chunk.end_line
        ):
            continue
        above = 0 <= chunk.start_line - other.end_line <= NEIGHBOUR_GAP
        below = 0 <= other.start_line - chunk.end_line <= NEIGHBOUR_GAP
        if above or below:
            found.append(other)
    return found


def pair_texts(
    chunks: Sequence[Chunk], token_counts: Callable[[Sequence[str]], list[int]]
) -> list[str]:
    """The text scored for each candidate; tiny ones borrow their neighbours' lines."""
    counts = token_counts([c.text for c in chunks])
    return [
        pair_text(chunk, neighbours_of(chunk, chunks) if n < TINY_TOKENS else ())
        for chunk, n in zip(chunks, counts, strict=True)
    ]


class CrossEncoderReranker:
    """A sentence-transformers ``CrossEncoder`` loaded from a folder or a hub name.

    ``bfloat16``: the encoder's weights are cast to bfloat16 (for CPUs with native bf16,
    like ``CODEASK_EMBED_BACKEND=torch-bf16``); the classification head stays float32,
    so scores keep their full precision and close candidates do not tie.
    """

    def __init__(
        self, model: str, max_length: int = 512, batch_size: int = 16, bfloat16: bool = False
    ) -> None:
        from indexer.embedding import require_bf16, require_torch

        require_torch("CODEASK_RERANK_BACKEND")
        from sentence_transformers import CrossEncoder

        if bfloat16:
            require_bf16("CODEASK_RERANK_BACKEND")
        self._name = f"{model}@bf16" if bfloat16 else model
        self._batch_size = batch_size
        self._lock = threading.Lock()  # the model is not safe to call from two threads
        try:
            self._model: Any = CrossEncoder(model, device="cpu", max_length=max_length)
        except Exception as exc:  # the library raises many types for a missing model
            raise ConfigError(
                f"Cannot load reranker {model!r}: {exc}. Set CODEASK_RERANK_MODEL to a local "
                "cross-encoder folder, or to 'none' to answer without rerank."
            ) from exc
        if bfloat16:
            _to_bfloat16(self._model)

    @property
    def name(self) -> str:
        return self._name

    def token_count(self, text: str) -> int:
        return len(self._model.tokenizer.tokenize(text))

    def token_counts(self, texts: Sequence[str]) -> list[int]:
        return [self.token_count(t) for t in texts]

    def score(self, question: str, hits: Sequence[Hit]) -> list[float]:
        if not hits:
            return []
        texts = pair_texts([h.chunk for h in hits], self.token_counts)
        pairs = [(question, text) for text in texts]
        with self._lock:
            scores = self._model.predict(
                pairs, batch_size=self._batch_size, show_progress_bar=False
            )
        return [float(s) for s in scores]


def _activation(model_dir: Path) -> Callable[[np.ndarray], np.ndarray]:
    """The activation sentence-transformers applies to this cross-encoder's logit.

    Saved in ``config_sentence_transformers.json`` (or, by older versions, under
    ``sentence_transformers`` in ``config.json``); absent, a one-label model gets Sigmoid,
    as in ``CrossEncoder``.
    """
    config = json.loads((model_dir / "config.json").read_text())
    if len(config.get("id2label") or {"0": ""}) != 1:
        raise ConfigError(f"{model_dir} is not a one-score cross-encoder (num_labels != 1)")
    name = str(config.get("sentence_transformers", {}).get("activation_fn", ""))
    st_config = model_dir / "config_sentence_transformers.json"
    if st_config.is_file():
        name = str(json.loads(st_config.read_text()).get("activation_fn") or name)
    short = name.rsplit(".", 1)[-1] or "Sigmoid"
    if short == "Sigmoid":
        return lambda x: 1.0 / (1.0 + np.exp(-x))
    if short == "Identity":
        return lambda x: x
    raise ConfigError(f"Unsupported cross-encoder activation {name!r} for the ONNX backend")


class OnnxCrossEncoderReranker:
    """The same cross-encoder exported to ONNX Runtime (fused attention, optionally int8).

    The (question, candidate) pairs are tokenized once by the Rust tokenizer, cut to
    ``max_length`` tokens (the longer side first, as ``CrossEncoder`` does), sorted by
    length into batches, and the batches run on single-threaded workers in parallel.
    Scores go through the model's own activation, so thresholds carry over from torch.
    """

    def __init__(
        self,
        model: str,
        cache_dir: Path,
        quantized: bool = True,
        max_length: int = 512,
        threads: int = 0,
        batch_size: int = 8,
    ) -> None:
        from tokenizers import Tokenizer

        onnx_path, model_dir = ensure_onnx_model(model, cache_dir, quantized, "cross-encoder")
        self._activation = _activation(model_dir)
        config = json.loads((model_dir / "config.json").read_text())
        self._max_length = min(max_length, int(config.get("max_position_embeddings", max_length)))
        self._pad_id = int(config.get("pad_token_id") or 0)
        self._name = f"{model}@onnx{'-int8' if quantized else ''}"
        self._batch_size = max(1, batch_size)
        self._session = cpu_session(onnx_path)
        self._inputs = {i.name for i in self._session.get_inputs()}
        self._tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(max_length=self._max_length, strategy="longest_first")
        # Counting tokens for the tiny-chunk rule must not stop at ``max_length``.
        self._counter = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self._counter.no_padding()
        self._counter.no_truncation()
        self._workers = BatchWorkers(threads, "onnx-rerank")

    @property
    def name(self) -> str:
        return self._name

    @property
    def max_length(self) -> int:
        return self._max_length

    def token_count(self, text: str) -> int:
        return len(self._counter.encode(text, add_special_tokens=False).ids)

    def token_counts(self, texts: Sequence[str]) -> list[int]:
        """``token_count`` of each text, tokenized in one parallel batch."""
        batch = self._counter.encode_batch(list(texts), add_special_tokens=False)
        return [len(e.ids) for e in batch]

    def encode(self, question: str, texts: Sequence[str]) -> list[list[int]]:
        """Token ids of each (question, text) pair, truncated to ``max_length``."""
        return [e.ids for e in self._tokenizer.encode_batch([(question, t) for t in texts])]

    def _logits(self, encodings: Sequence[Any]) -> np.ndarray:
        width = max(len(e.ids) for e in encodings)
        ids = np.full((len(encodings), width), self._pad_id, dtype=np.int64)
        types = np.zeros_like(ids)
        mask = np.zeros_like(ids)
        for row, e in enumerate(encodings):
            ids[row, : len(e.ids)] = e.ids
            types[row, : len(e.ids)] = e.type_ids
            mask[row, : len(e.ids)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        out = self._session.run(None, {k: v for k, v in feeds.items() if k in self._inputs})
        return np.asarray(out[0], dtype=np.float32).reshape(len(encodings), -1)[:, 0]

    def score(self, question: str, hits: Sequence[Hit]) -> list[float]:
        if not hits:
            return []
        texts = pair_texts([h.chunk for h in hits], self.token_counts)
        encodings = self._tokenizer.encode_batch([(question, t) for t in texts])
        logits = np.empty(len(encodings), dtype=np.float32)

        def work(part: list[int]) -> None:
            logits[part] = self._logits([encodings[i] for i in part])

        self._workers.run(length_batches([len(e.ids) for e in encodings], self._batch_size), work)
        return [float(s) for s in self._activation(logits)]


def _to_bfloat16(model: Any) -> None:
    """Cast ``model`` to bfloat16 except its classification head, which reads float32."""
    import torch

    model.to(torch.bfloat16)
    for module in model.modules():
        head = getattr(module, "classifier", None)
        if isinstance(head, torch.nn.Module):
            head.float()
            head.register_forward_pre_hook(
                lambda _m, args: tuple(
                    a.float() if isinstance(a, torch.Tensor) and a.is_floating_point() else a
                    for a in args
                )
            )
            return


def trained_reranker_path(data_dir: Path) -> Path | None:
    """The reranker trained for this deployment, when one was saved under the data dir."""
    path = data_dir / TRAINED_SUBDIR
    return path if (path / "config.json").is_file() else None


_LOADED: dict[tuple[str, str, int, int], Reranker] = {}


def _llm_reranker(settings: BotSettings) -> Reranker:
    from bot.answer.llm import LiteLLMClient
    from bot.answer.llm_rerank import LLMListwiseReranker

    if not settings.llm_model.strip():
        raise ConfigError(
            "CODEASK_RERANK_MODEL=llm ranks with the language model: set CODEASK_LLM_MODEL too."
        )
    return LLMListwiseReranker(LiteLLMClient(settings))


def load_reranker(
    settings: BotSettings, data_dir: Path, onnx_dir: Path | None = None
) -> Reranker | None:
    """The configured reranker, else the trained one under ``data_dir``, else None.

    A trained model whose card says ``enabled_by_default: false`` (it did not beat hybrid
    search on the golden sets) is only used when ``rerank_model`` names it explicitly.
    ``rerank_backend`` picks torch (float32 or bf16) or ONNX Runtime (exported under
    ``onnx_dir``, by default ``<data_dir>/models/onnx``). One model is loaded per process and configuration.
    """
    name = settings.rerank_model.strip()
    if name.lower() == RERANK_OFF:
        return None
    if name.lower() == RERANK_LLM:
        return _llm_reranker(settings)
    if not name:
        trained = trained_reranker_path(data_dir)
        name = str(trained) if trained and enabled_by_default(trained) else ""
    if not name:
        return None
    backend = settings.rerank_backend
    key = (name, backend, settings.rerank_max_length, settings.rerank_threads)
    if key not in _LOADED:
        if backend.startswith("onnx"):
            _LOADED[key] = OnnxCrossEncoderReranker(
                name,
                onnx_dir or data_dir / "models" / "onnx",
                quantized=backend == "onnx-int8",
                max_length=settings.rerank_max_length,
                threads=settings.rerank_threads,
            )
        else:
            _LOADED[key] = CrossEncoderReranker(
                name, max_length=settings.rerank_max_length, bfloat16=backend == "torch-bf16"
            )
    return _LOADED[key]
