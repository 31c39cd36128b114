"""The fast embedding path: the same sentence-transformers model run by ONNX Runtime.

The model is exported once per machine (``torch.onnx.export`` with eager attention, so
ONNX Runtime's transformer optimizer recognises and fuses each layer's attention, layer
norms and GELU) into ``<data_dir>/models/onnx/``, optionally quantized to int8 per
channel (per-tensor quantization loses too much: cosine 0.88 against torch), and then
served with only onnxruntime and the Rust tokenizer loaded, so a command starts in a
second instead of the many that importing torch and transformers takes.

The export, fusion, quantization, session and batch-scheduling helpers here are shared
with the ONNX cross-encoder reranker (``bot.answer.rerank.OnnxCrossEncoderReranker``), which
exports a sequence-classification head (``task="cross-encoder"``) the same way.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
import shutil
import threading
import warnings
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

import numpy as np

from indexer.embedding.model_files import cpu_flags, resolve_model_path
from indexer.errors import ConfigError

INPUTS = ("input_ids", "attention_mask", "token_type_ids")
# Part of the cache folder name: bump it when the export recipe changes.
EXPORT_RECIPE = "fused-1"
# "embedding": the encoder's last hidden state (pooled here); "cross-encoder": the
# sequence-classification logits of a (question, text) pair.
Task = Literal["embedding", "cross-encoder"]
log = logging.getLogger(__name__)


def cpu_has_vnni() -> bool:
    """Whether the CPU has int8 dot-product instructions (VNNI)."""
    flags = cpu_flags()
    return "avx512_vnni" in flags or "avx_vnni" in flags


def _export(model_dir: Path, target: Path, task: Task = "embedding") -> None:
    import torch
    from transformers import AutoModel, AutoModelForSequenceClassification, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    # The SDPA graph is opaque to the fusion passes; the eager one is the pattern they know.
    loader = AutoModelForSequenceClassification if task == "cross-encoder" else AutoModel
    model = loader.from_pretrained(str(model_dir), attn_implementation="eager").eval()
    output = "logits" if task == "cross-encoder" else "last_hidden_state"

    class _Encoder(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            out = self.inner(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            )
            return getattr(out, output)

    if task == "cross-encoder":
        sample = tokenizer(
            ["a question", "another question"],
            ["def f(): pass", "a longer sample sentence"],
            padding=True,
            return_tensors="pt",
        )
    else:
        sample = tokenizer(
            ["def f(): pass", "a longer sample sentence"], padding=True, return_tensors="pt"
        )
    if "token_type_ids" not in sample:
        sample["token_type_ids"] = torch.zeros_like(sample["input_ids"])
    tmp = target.with_suffix(".tmp")
    axes = {name: {0: "batch", 1: "sequence"} for name in INPUTS}
    axes[output] = {0: "batch"} if task == "cross-encoder" else {0: "batch", 1: "sequence"}
    torch.onnx.export(
        _Encoder(model),
        tuple(sample[name] for name in INPUTS),
        str(tmp),
        input_names=list(INPUTS),
        output_names=[output],
        dynamic_axes=axes,
        opset_version=17,
        dynamo=False,
    )
    _fuse(tmp, model.config)
    tmp.replace(target)


def _fuse(path: Path, config: Any) -> None:
    """Rewrite ``path`` with fused Attention/SkipLayerNorm/BiasGelu nodes where possible."""
    if getattr(config, "model_type", "") not in ("bert", "roberta", "distilbert", "xlm-roberta"):
        return  # other architectures run unfused: still correct, only slower
    from onnxruntime.transformers.optimizer import optimize_model

    fused = optimize_model(
        str(path),
        model_type="bert",
        num_heads=int(config.num_attention_heads),
        hidden_size=int(config.hidden_size),
        opt_level=1,
    )
    fused.save_model_to_file(str(path))


def _quantize(source: Path, target: Path) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    tmp = target.with_suffix(".tmp")
    # Without VNNI, int8 products accumulate in 16 bits and can saturate: use 7-bit weights.
    quantize_dynamic(
        str(source),
        str(tmp),
        per_channel=True,
        reduce_range=not cpu_has_vnni(),
        weight_type=QuantType.QInt8,
        # Fused nodes live in ORT's own domain, where shape inference gives no types.
        extra_options={"DefaultTensorType": 1},  # onnx.TensorProto.FLOAT
    )
    tmp.replace(target)


@contextmanager
def _quiet() -> Iterator[None]:
    """The exporter and quantizer warn about graph details that do not apply here."""
    logger = logging.getLogger()
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        logger.setLevel(level)


def _weights_stamp(model_dir: Path) -> bytes:
    """Size and modification time of the weight files: a model retrained in place re-exports."""
    stamp = b""
    for name in ("model.safetensors", "pytorch_model.bin"):
        path = model_dir / name
        if path.is_file():
            info = path.stat()
            stamp += f"{name}:{info.st_size}:{info.st_mtime_ns};".encode()
    return stamp


# The model folder's small files a session needs beside the graph (tokenizer, pooling, the
# cross-encoder's head): copied into the export, so it runs where the model itself is not.
MODEL_FILES = (
    "config.json",
    "config_sentence_transformers.json",
    "sentence_bert_config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "vocab.txt",
    "1_Pooling/config.json",
)
MANIFEST = "export.json"
EXPORT_HINT = (
    "Run `codeask models export` where codeask[train] is installed (`make setup` and the "
    "image build do), or set CODEASK_ONNX_DIR to the folder that holds the export."
)


def _source_folder(model: str) -> Path | None:
    """The model's own folder on this machine, or None (not installed here, or a hub name)."""
    try:
        path = Path(resolve_model_path(model))
    except ImportError:  # the packaged default model comes with codeask[train]
        return None
    return path if (path / "config.json").is_file() else None


def _export_folder(cache_dir: Path, model: str, source: Path | None, kind: str) -> Path | None:
    """Where ``model``'s export lives: by its source's digest, else the one its manifest names."""
    if source is not None:
        digest = hashlib.sha256(
            (source / "config.json").read_bytes() + str(source).encode() + _weights_stamp(source)
        ).hexdigest()[:16]
        return cache_dir / f"{source.name}{kind}-{digest}-{EXPORT_RECIPE}"
    newest: tuple[float, Path] | None = None
    for manifest in cache_dir.glob(f"*{kind}-*-{EXPORT_RECIPE}/{MANIFEST}"):
        try:
            meta = json.loads(manifest.read_text())
        except (OSError, ValueError):
            continue
        if meta.get("model") == model and meta.get("kind") == kind:
            when = manifest.stat().st_mtime
            if newest is None or when > newest[0]:
                newest = (when, manifest.parent)
    return newest[1] if newest else None


def _copy_model_files(source: Path, folder: Path, model: str, kind: str) -> None:
    for name in MODEL_FILES:
        if (source / name).is_file():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source / name, folder / name)
    meta = {"model": model, "kind": kind, "source": str(source), "recipe": EXPORT_RECIPE}
    tmp = folder / f"{MANIFEST}.tmp"
    tmp.write_text(json.dumps(meta, indent=2) + "\n")
    tmp.replace(folder / MANIFEST)


def _torch_installed() -> bool:
    try:
        return importlib.util.find_spec("torch") is not None
    except ImportError:  # an import hook that refuses it
        return False


def ensure_onnx_model(
    model: str, cache_dir: Path, quantized: bool, task: Task = "embedding"
) -> tuple[Path, Path]:
    """(onnx file, folder of its tokenizer and configs) for ``model``.

    The export is made once, by ``codeask models export`` at set-up (it needs torch, from
    codeask[train]); where torch is installed a missing export is made on first use, with a
    notice. Without torch an export made elsewhere is used as it is (the runtime image
    copies them from its build stage), and none is a ConfigError that says how to make one.
    """
    setting = "RERANK" if task == "cross-encoder" else "EMBED"
    kind = "" if task == "embedding" else f"-{task}"
    source = _source_folder(model)
    folder = _export_folder(cache_dir, model, source, kind)
    if folder is None:  # no local model and no export of it
        if _torch_installed():
            raise ConfigError(
                f"The ONNX {task} model needs a local model folder; {model!r} is not one. Set "
                f"CODEASK_{setting}_MODEL to a local model folder or use "
                f"CODEASK_{setting}_BACKEND=torch."
            )
        raise ConfigError(f"No ONNX export of {model!r} in {cache_dir}. {EXPORT_HINT}")
    full = folder / "model.onnx"
    if not full.exists():
        if source is None or not _torch_installed():
            raise ConfigError(
                f"No ONNX export of {model!r} (as it is now) in {cache_dir}. {EXPORT_HINT}"
            )
        folder.mkdir(parents=True, exist_ok=True)
        log.warning("exporting %s to ONNX once into %s (about a minute)", model, folder)
        with _quiet():
            _export(source, full, task)
    if source is not None and not (folder / MANIFEST).exists():
        _copy_model_files(source, folder, model, kind)  # also adopts exports made before them
    if not quantized:
        return full, folder
    # The int8 graph depends on the CPU (VNNI or not); quantizing needs only onnxruntime.
    int8 = folder / ("model.int8.vnni.onnx" if cpu_has_vnni() else "model.int8.onnx")
    if not int8.exists():
        with _quiet():
            _quantize(full, int8)
    return int8, folder


def export_models(model: str, cache_dir: Path, task: Task = "embedding") -> Path:
    """Export ``model`` in fp32 and int8 (set-up time; needs torch); returns its folder."""
    ensure_onnx_model(model, cache_dir, quantized=False, task=task)
    return ensure_onnx_model(model, cache_dir, quantized=True, task=task)[1]


def cpu_session(onnx_path: Path) -> Any:
    """A single-threaded CPU session; one serves every worker (``run`` is thread-safe)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(str(onnx_path), options, providers=["CPUExecutionProvider"])


def length_batches(lengths: Sequence[int], batch_size: int) -> list[list[int]]:
    """Indices sorted by length and cut into batches, so a batch pads little."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    size = max(1, batch_size)
    return [order[i : i + size] for i in range(0, len(order), size)]


class BatchWorkers:
    """Runs batches on ``workers`` threads, each driving a single-threaded ONNX session.

    MiniLM-sized matrices are small enough that splitting one product across cores costs
    more in synchronisation than it gains, while whole batches in parallel keep every
    core busy. Batches are dealt out round-robin, so with length-sorted batches each
    worker gets a similar mix of short and long ones. One call runs at a time.
    """

    def __init__(self, workers: int, name: str) -> None:
        self.workers = max(1, workers or os.cpu_count() or 1)
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix=name)

    def run(self, batches: Sequence[list[int]], work: Callable[[list[int]], None]) -> None:
        def worker(first: int) -> None:
            for part in batches[first :: self.workers]:
                work(part)

        with self._lock:
            if len(batches) <= 1 or self.workers == 1:
                for part in batches:
                    work(part)
            else:
                futures = [self._pool.submit(worker, w) for w in range(self.workers)]
                for future in futures:
                    future.result()


class OnnxEmbedder:
    """Mean-pooled, normalised sentence embeddings from an ONNX export of the model.

    Length-sorted batches run concurrently on ``threads`` single-threaded workers
    (``BatchWorkers``; measured in ``bench/bench_embedders.py``).
    """

    def __init__(
        self,
        model: str,
        cache_dir: Path,
        quantized: bool = True,
        threads: int = 0,
        batch_size: int = 0,
    ) -> None:
        from tokenizers import Tokenizer

        onnx_path, model_dir = ensure_onnx_model(model, cache_dir, quantized)
        self._name = f"{model}@onnx{'-int8' if quantized else ''}"
        # 16, as bench/bench_embedders.py measures it; batches of 32 embedded the
        # index-speed corpus about 13% slower with int8 (docs/benchmarks.md).
        self._batch_size = batch_size or 16
        self._session = cpu_session(onnx_path)
        self._inputs = {i.name for i in self._session.get_inputs()}
        self._tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        max_len = 256
        st_config = model_dir / "sentence_bert_config.json"
        if st_config.is_file():
            max_len = int(json.loads(st_config.read_text()).get("max_seq_length", max_len))
        self._tokenizer.enable_truncation(max_length=max_len)
        pad_id = self._tokenizer.token_to_id("[PAD]") or 0
        self._tokenizer.enable_padding(pad_id=pad_id, pad_token="[PAD]")
        self._cls_pooling = False
        pooling = model_dir / "1_Pooling" / "config.json"
        if pooling.is_file():
            self._cls_pooling = bool(json.loads(pooling.read_text()).get("pooling_mode_cls_token"))
        probe = self._run(["probe"])
        self._dim = int(probe.shape[1])
        self._workers = BatchWorkers(threads, "onnx-embed")

    @property
    def name(self) -> str:
        return self._name

    @property
    def dimension(self) -> int:
        return self._dim

    def _run(self, texts: Sequence[str]) -> np.ndarray:
        encodings = self._tokenizer.encode_batch(list(texts))
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden = self._session.run(None, {k: v for k, v in feeds.items() if k in self._inputs})[0]
        if self._cls_pooling:
            pooled = hidden[:, 0]
        else:
            weights = mask[..., None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self._dim), dtype=np.float32)
        out = np.empty((len(texts), self._dim), dtype=np.float32)

        def work(part: list[int]) -> None:
            out[part] = self._run([texts[i] for i in part])

        self._workers.run(length_batches([len(t) for t in texts], self._batch_size), work)
        return out
