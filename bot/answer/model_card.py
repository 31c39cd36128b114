"""The model card saved next to a trained reranker: what it learned from and how it scored.

``enabled_by_default`` is the switch the answer pipeline honours: a trained reranker is
used without configuration only when it raised MRR@10 on the golden sets by at least
``GATE_MRR_GAIN``; otherwise only an explicit ``CODEASK_RERANK_MODEL`` turns it on.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from indexer.errors import ConfigError

CARD_FILE = "codeask-card.json"
GATE_MRR_GAIN = 0.03


def card_path(model_dir: Path) -> Path:
    return model_dir / CARD_FILE


def read_card(model_dir: Path) -> dict[str, Any] | None:
    """The card of ``model_dir``, or None for a model saved without one."""
    path = card_path(model_dir)
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"Unreadable model card {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"Model card {path} is not a JSON object")
    return data


def enabled_by_default(model_dir: Path) -> bool:
    """False when the card says the model did not earn its place; a card-less model is used."""
    card = read_card(model_dir)
    return True if card is None else bool(card.get("enabled_by_default", False))


def write_card(model_dir: Path, card: dict[str, Any]) -> None:
    model_dir.mkdir(parents=True, exist_ok=True)
    tmp = card_path(model_dir).with_suffix(".tmp")
    tmp.write_text(json.dumps(card, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    tmp.replace(card_path(model_dir))
    (model_dir / "README.md").write_text(render_readme(card), encoding="utf-8")


def _fmt(value: object) -> str:
    return f"{value:.4f}" if isinstance(value, float) else str(value)


def render_readme(card: dict[str, Any]) -> str:
    """A human-readable card with the same figures as the JSON."""
    lines = [
        "# codeask learned reranker",
        "",
        "A cross-encoder fine-tuned on this deployment's own code: commit messages paired",
        "with the functions they changed, doc comments with their code, and docs paragraphs",
        "with the definitions they name; hard negatives from hybrid search.",
        "",
        f"- enabled by default: **{'yes' if card.get('enabled_by_default') else 'no'}**",
        f"- base model: `{card.get('base_model', '')}`",
        f"- loss: {card.get('loss', '')}",
        f"- training seconds: {_fmt(card.get('training_seconds'))} "
        f"(budget {card.get('budget_minutes')} min, finished: {card.get('finished')})",
        f"- steps: {card.get('steps')}, examples seen: {card.get('examples_seen')}",
        f"- validation MRR before: {_fmt(card.get('validation_mrr_before'))}, "
        f"after: {_fmt(card.get('validation_mrr_after'))} "
        f"({card.get('validation_queries')} held-out queries)",
        "",
        "## Training data",
        "",
    ]
    pairs = card.get("pairs", {})
    lines.append(
        f"- train pairs: {pairs.get('train')}, validation pairs: {pairs.get('validation')}"
    )
    for source, n in sorted(pairs.get("by_source", {}).items()):
        lines.append(f"- {source}: {n}")
    lines += ["", "| repository | commit range | pairs |", "| --- | --- | --- |"]
    for repo, info in sorted(card.get("repos", {}).items()):
        lines.append(f"| {repo} | {info.get('commit_range', '')} | {info.get('pairs', '')} |")
    golden = card.get("golden")
    if golden:
        lines += [
            "",
            "## Golden sets (MRR@10, recall@5)",
            "",
            "| set | without | with | gain |",
            "| --- | --- | --- | --- |",
        ]
        for name, row in sorted(golden.get("sets", {}).items()):
            lines.append(
                f"| {name} | {_fmt(row['mrr_without'])} / {_fmt(row['recall5_without'])} | "
                f"{_fmt(row['mrr_with'])} / {_fmt(row['recall5_with'])} | "
                f"{row['mrr_with'] - row['mrr_without']:+.4f} |"
            )
        lines += ["", f"Decision: {golden.get('decision', '')}"]
    return "\n".join(lines) + "\n"
