"""Training pairs: a query, the chunk that answers it, and hard negatives; JSONL in and out."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from indexer.errors import InvalidInput

SOURCES = ("commit", "docstring", "docs")
TRAIN, VALIDATION = "train", "validation"
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class Target:
    """Where a positive or negative chunk lives (1-based inclusive lines at ``commit``)."""

    repo: str
    path: str
    start_line: int
    end_line: int
    symbol: str = ""
    commit: str = ""


@dataclass
class TrainingPair:
    """``query`` answered by ``positive_text`` (what the cross-encoder reads for the chunk).

    ``time`` orders pairs for the validation split: the commit time for commit pairs, the
    indexed commit's time for pairs mined from the indexed snapshot.
    """

    query: str
    positive: Target
    positive_text: str
    source: str
    time: float
    negatives: list[str] = field(default_factory=list)
    negative_targets: list[Target] = field(default_factory=list)
    split: str = TRAIN

    def to_json(self) -> dict[str, object]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, row: dict[str, object]) -> TrainingPair:
        data = dict(row)
        data["positive"] = Target(**data["positive"])  # type: ignore[arg-type]
        data["negative_targets"] = [Target(**t) for t in data.get("negative_targets", [])]  # type: ignore[attr-defined]
        return cls(**data)  # type: ignore[arg-type]


def normalized(text: str) -> str:
    return _SPACE.sub(" ", text).strip().lower()


def deduplicate(pairs: Iterable[TrainingPair]) -> list[TrainingPair]:
    """One pair per (query, positive place); the first seen wins."""
    seen: set[tuple[str, str, str, int, int]] = set()
    out = []
    for p in pairs:
        key = (
            normalized(p.query),
            p.positive.repo,
            p.positive.path,
            p.positive.start_line,
            p.positive.end_line,
        )
        if key not in seen:
            seen.add(key)
            out.append(p)
    return out


def cap(pairs: Sequence[TrainingPair], limit: int) -> list[TrainingPair]:
    """At most ``limit`` pairs, taken round-robin over sources so no source crowds out others."""
    if len(pairs) <= limit:
        return list(pairs)
    by_source: dict[str, list[TrainingPair]] = {}
    for p in pairs:
        by_source.setdefault(p.source, []).append(p)
    # A stable, content-derived order inside each source: the cap does not favour one file.
    queues = [sorted(v, key=_digest) for _, v in sorted(by_source.items())]
    out: list[TrainingPair] = []
    while len(out) < limit and any(queues):
        for q in queues:
            if q and len(out) < limit:
                out.append(q.pop(0))
    return out


def _digest(p: TrainingPair) -> str:
    return hashlib.sha1(f"{p.query}\0{p.positive.path}".encode()).hexdigest()


def split_by_time(pairs: Sequence[TrainingPair], share: float = 0.15) -> list[TrainingPair]:
    """Mark the newest ``share`` of commit pairs (whole commits) and of files as validation.

    Commit pairs are held out by commit time, so validation asks about changes the model
    never saw; snapshot pairs (one time) are held out by whole files.
    """
    commits = sorted({(p.time, p.positive.commit) for p in pairs if p.source == "commit"})
    held = {c for _, c in commits[len(commits) - _held_count(len(commits), share) :]}
    files = sorted(
        {(p.positive.repo, p.positive.path) for p in pairs if p.source != "commit"},
        key=lambda f: hashlib.sha1("\0".join(f).encode()).hexdigest(),
    )
    held_files = set(files[: _held_count(len(files), share)])
    out = []
    for p in pairs:
        if p.source == "commit":
            is_val = p.positive.commit in held
        else:
            is_val = (p.positive.repo, p.positive.path) in held_files
        out.append(dataclasses.replace(p, split=VALIDATION if is_val else TRAIN))
    return out


def _held_count(n: int, share: float) -> int:
    return 0 if n < 3 else max(1, round(n * share))


def write_pairs(path: Path, pairs: Iterable[TrainingPair]) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with path.open("w", encoding="utf-8") as f:
        for p in pairs:
            f.write(json.dumps(p.to_json(), ensure_ascii=False) + "\n")
            n += 1
    return n


def read_pairs(path: Path) -> list[TrainingPair]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise InvalidInput(f"Cannot read training pairs {path}: {exc.strerror or exc}") from exc
    out = []
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            out.append(TrainingPair.from_json(json.loads(line)))
        except (ValueError, TypeError, KeyError) as exc:
            raise InvalidInput(f"{path}:{n}: not a training pair ({exc})") from exc
    return out
