"""Keeping evaluation questions and their answers out of training, by construction.

A pair is dropped when its positive is a gold place of any golden question (same repo
and path, and overlapping lines or the same symbol: line numbers move between commits,
symbols do not), or when its query resembles a golden question. Gold places are also
never used as negatives, so they appear in training in no role at all.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from bot.training.pairs import Target, TrainingPair
from indexer.errors import InvalidInput

SIMILAR_QUESTION = 0.5  # Jaccard similarity of word sets at which a query counts as a copy
_WORD = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True)
class GoldPlace:
    repo: str
    path: str
    start_line: int
    end_line: int
    symbol: str


@dataclass
class Golden:
    questions: list[str]
    places: list[GoldPlace]


def load_golden(paths: Iterable[Path]) -> Golden:
    """Questions and gold places from golden-set ``.jsonl`` files (folders: their files)."""
    files: list[Path] = []
    for p in paths:
        files.extend(sorted(p.glob("*.jsonl")) if p.is_dir() else [p])
    golden = Golden([], [])
    for f in files:
        try:
            lines = f.read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise InvalidInput(f"Cannot read golden set {f}: {exc.strerror or exc}") from exc
        for n, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                golden.questions.append(str(row["question"]))
                golden.places.extend(
                    GoldPlace(
                        repo=str(row["repo"]),
                        path=str(g["path"]),
                        start_line=int(g["start_line"]),
                        end_line=int(g["end_line"]),
                        symbol=str(g.get("symbol", "")),
                    )
                    for g in row["gold"]
                )
            except (ValueError, KeyError, TypeError) as exc:
                raise InvalidInput(f"{f}:{n}: not a golden-set line ({exc})") from exc
    return golden


def words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def similarity(a: str, b: str) -> float:
    wa, wb = words(a), words(b)
    return len(wa & wb) / len(wa | wb) if wa and wb else 0.0


def is_gold(target: Target, places: Sequence[GoldPlace]) -> bool:
    for g in places:
        if g.repo != target.repo or g.path != target.path:
            continue
        if target.start_line <= g.end_line and g.start_line <= target.end_line:
            return True
        if g.symbol and g.symbol == target.symbol:
            return True
    return False


def resembles_golden(query: str, questions: Sequence[str]) -> bool:
    return any(similarity(query, q) >= SIMILAR_QUESTION for q in questions)


def exclude_golden(pairs: Iterable[TrainingPair], golden: Golden) -> tuple[list[TrainingPair], int]:
    """Pairs that share nothing with the golden sets, and how many were dropped."""
    kept, dropped = [], 0
    for p in pairs:
        if is_gold(p.positive, golden.places) or resembles_golden(p.query, golden.questions):
            dropped += 1
            continue
        keep = [i for i, t in enumerate(p.negative_targets) if not is_gold(t, golden.places)]
        p.negatives = [p.negatives[i] for i in keep]
        p.negative_targets = [p.negative_targets[i] for i in keep]
        kept.append(p)
    return kept, dropped
