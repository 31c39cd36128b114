"""Loading golden sets and finding the source tree each golden repo name stands for."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from eval.corpora import DEFAULT_DEST, DownloadError, ensure_corpora
from eval.metrics import GoldPlace, Question
from indexer.errors import InvalidInput, UpstreamUnavailable

REPO_ROOT = Path(__file__).resolve().parents[1]
GOLDEN_DIR = REPO_ROOT / "eval" / "golden"
# This project's own golden set is answered from its working tree.
SELF_REPO = "codeask/codeask"
KINDS = ("identifier", "concept", "multihop", "config")


def load_questions(path: Path) -> list[Question]:
    """The questions of one ``.jsonl`` golden set; a malformed line is an ``InvalidInput``."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise InvalidInput(f"Cannot read golden set {path}: {exc.strerror or exc}") from exc
    out: list[Question] = []
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            gold = tuple(
                GoldPlace(
                    path=str(g["path"]),
                    start_line=int(g["start_line"]),
                    end_line=int(g["end_line"]),
                    symbol=str(g.get("symbol", "")),
                )
                for g in row["gold"]
            )
            q = Question(
                id=str(row["id"]),
                repo=str(row["repo"]),
                question=str(row["question"]),
                kind=str(row["kind"]),
                gold=gold,
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise InvalidInput(f"{path}:{n}: not a golden-set line ({exc})") from exc
        if not gold:
            raise InvalidInput(f"{path}:{n}: question {q.id} has no gold places")
        out.append(q)
    return out


def load_many(paths: Iterable[Path]) -> list[Question]:
    """Questions of several sets, in order; ids must be unique across them."""
    questions: list[Question] = []
    seen: set[str] = set()
    for path in paths:
        for q in load_questions(path):
            if q.id in seen:
                raise InvalidInput(f"question id {q.id} appears twice")
            seen.add(q.id)
            questions.append(q)
    return questions


def source_roots(repos: Iterable[str], dest: Path = DEFAULT_DEST) -> dict[str, Path]:
    """The folder to index for each golden repo name (pinned corpora are downloaded).

    A failed download is ``UpstreamUnavailable``; a bad digest stays a ``CorpusError``.
    """
    wanted = set(repos)
    roots: dict[str, Path] = {}
    if wanted - {SELF_REPO}:
        try:
            roots.update(ensure_corpora(dest))
        except DownloadError as exc:
            raise UpstreamUnavailable(f"Could not download the evaluation corpora: {exc}") from exc
    roots[SELF_REPO] = REPO_ROOT
    unknown = wanted - set(roots)
    if unknown:
        raise InvalidInput(
            f"No pinned source for {', '.join(sorted(unknown))}; index it yourself first"
        )
    return {r: roots[r] for r in sorted(wanted)}
