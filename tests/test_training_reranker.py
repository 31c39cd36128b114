"""Training the reranker: a card with the figures, off by default until the gate, resumable."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.answer import CrossEncoderReranker, load_reranker, read_card, write_card
from bot.settings import BotSettings
from bot.training.pairs import TRAIN, VALIDATION, Target, TrainingPair
from bot.training.train import CHECKPOINT_SUBDIR, TrainConfig, train_reranker
from indexer.errors import ConfigError
from indexer.models import Chunk, Hit

PARSE = "def parse_duration(text):\n    return int(text[:-1]) * UNITS[text[-1]]"
BANNER = "def timeout_banner(timeout):\n    return f'times out after {timeout}'"
RETRY = "def retry_delay(attempt):\n    return min(300, 2 ** attempt)"


def _pair(query: str, positive: str, negatives: list[str], split: str) -> TrainingPair:
    return TrainingPair(
        query=query,
        positive=Target("acme/jobs", "jobs.py", 1, 2, positive.split("(")[0][4:], "c1"),
        positive_text=positive,
        source="docstring",
        time=1.0,
        negatives=negatives,
        split=split,
    )


PAIRS = [
    _pair("turn 5m into seconds", PARSE, [BANNER, RETRY], TRAIN),
    _pair("backoff between attempts", RETRY, [PARSE, BANNER], TRAIN),
    _pair("label shown for a timeout", BANNER, [RETRY, PARSE], TRAIN),
    _pair("convert a duration string", PARSE, [RETRY, BANNER], VALIDATION),
]
TINY = dict(groups_per_step=1, negatives=2, max_length=48, warmup_steps=1, validation_queries=5)


def test_trained_reranker_stays_off_until_the_gate_enables_it(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    mining = {"repos": [{"repo": "acme/jobs", "commit_range": "aaa..bbb"}]}
    result = train_reranker(
        PAIRS, data_dir, TrainConfig(budget_minutes=10, epochs=1, **TINY), mining=mining
    )
    card = read_card(result.model_dir)
    assert card is not None and card == json.loads(
        (result.model_dir / "codeask-card.json").read_text()
    )
    assert card["pairs"] == {"train": 3, "validation": 1, "by_source": {"docstring": 4}}
    assert card["repos"] == {"acme/jobs": {"commit_range": "aaa..bbb", "pairs": 4}}
    assert card["steps"] == 3 and card["finished"] is True
    assert 0 < card["validation_mrr_before"] <= 1 and 0 < card["validation_mrr_after"] <= 1
    assert card["enabled_by_default"] is False
    assert "enabled by default: **no**" in (result.model_dir / "README.md").read_text()

    # Off by default: not picked up from the data dir, but an explicit setting loads it.
    # (On torch here, as the training runs; tests/test_answer_rerank.py covers the default
    # ONNX backend loading a trained model.)
    torch = {"rerank_backend": "torch"}
    assert load_reranker(BotSettings(rerank_model="", **torch), data_dir) is None
    explicit = load_reranker(BotSettings(rerank_model=str(result.model_dir), **torch), data_dir)
    assert isinstance(explicit, CrossEncoderReranker)
    write_card(result.model_dir, {**card, "enabled_by_default": True})
    enabled = load_reranker(BotSettings(rerank_model="", **torch), data_dir)
    assert isinstance(enabled, CrossEncoderReranker)

    # A second run with --resume continues from the checkpoint instead of starting over.
    assert (data_dir / CHECKPOINT_SUBDIR / "state.pt").is_file()
    again = train_reranker(
        PAIRS, data_dir, TrainConfig(budget_minutes=10, epochs=2, **TINY), resume=True
    )
    assert again.card["steps"] == 6 and again.card["examples_seen"] == 6
    assert again.card["validation_mrr_before"] == card["validation_mrr_before"]


def test_a_reranker_cut_to_two_layers_saves_and_loads_with_two(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    result = train_reranker(
        PAIRS, data_dir, TrainConfig(budget_minutes=10, epochs=1, layers=2, **TINY)
    )
    config = json.loads((result.model_dir / "config.json").read_text())
    assert config["num_hidden_layers"] == 2
    assert result.card["layers"] == 2 and "first 2 layers" in result.card["base_model"]
    reranker = CrossEncoderReranker(str(result.model_dir))
    assert len(reranker._model.model.base_model.encoder.layer) == 2
    hits = [_hit(PARSE), _hit(BANNER)]
    assert len(reranker.score("turn 5m into seconds", hits)) == 2
    with pytest.raises(ConfigError, match="between 1 and 6"):
        train_reranker(PAIRS, tmp_path / "d2", TrainConfig(budget_minutes=10, layers=7, **TINY))


def _hit(text: str) -> Hit:
    chunk = Chunk(
        repo="acme/jobs",
        path="jobs.py",
        start_line=1,
        end_line=2,
        text=text,
        symbol=text.split("(")[0][4:],
        language="python",
        kind="source",
    )
    return Hit(chunk=chunk, score=1.0)
