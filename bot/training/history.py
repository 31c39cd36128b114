"""Commit pairs: a commit's message → the functions its diff touched, at that commit.

Only ancestors of the indexed commit are read (``git rev-list <indexed>``), so nothing
committed after the index was built can reach training. Merges, reverts, whitespace-only
changes and bulk commits (more than ``max_functions`` definitions touched) say little
about any one function and are skipped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from bot.answer import pair_text
from bot.training.pairs import Target, TrainingPair
from bot.training.snapshot import file_chunks_at
from indexer.models import Chunk
from indexer.source import run_git

MAX_FUNCTIONS = 8
MIN_WORDS = 3
MAX_QUERY_CHARS = 1000
_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")
_SKIP_SUBJECT = re.compile(
    r"^(revert\b|merge\b|bump\b|release\b|(re)?format|lint|style\b|whitespace|"
    r"apply (black|prettier|ruff)|run (black|prettier|ruff))",
    re.IGNORECASE,
)
_TRAILER = re.compile(
    r"^(signed-off-by|co-authored-by|reviewed-by|acked-by|tested-by|change-id|cc):",
    re.IGNORECASE,
)
# Tests a commit touched are not what its message describes; they do not count as bulk either.
_DEFINITION_KINDS = frozenset({"source"})


@dataclass
class Commit:
    sha: str
    time: float
    message: str
    touched: dict[str, list[tuple[int, int]]] = field(default_factory=dict)  # path -> ranges


@dataclass
class HistoryStats:
    commits: int = 0
    used: int = 0
    skipped: dict[str, int] = field(default_factory=dict)

    def skip(self, reason: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1


def commits_up_to(root: Path, indexed_commit: str) -> list[Commit]:
    """Non-merge ancestors of ``indexed_commit`` (itself included), oldest first."""
    log = run_git(
        ["log", "--no-merges", "--reverse", "--format=%x1e%H%x1f%ct%x1f%B", indexed_commit],
        cwd=root,
    )
    out: list[Commit] = []
    for record in log.split("\x1e"):
        if not record.strip():
            continue
        sha, ts, message = record.split("\x1f", 2)
        # Several commits can share a second; history order decides which is newer.
        when = max(float(ts), out[-1].time + 0.001) if out else float(ts)
        out.append(Commit(sha=sha.strip(), time=when, message=clean_message(message)))
    return out


def clean_message(message: str) -> str:
    """Subject and body without trailers (Signed-off-by, Co-authored-by…), length-capped."""
    lines = [ln.rstrip() for ln in message.strip().splitlines()]
    kept = [ln for ln in lines if not _TRAILER.match(ln.strip())]
    return "\n".join(kept).strip()[:MAX_QUERY_CHARS]


def touched_lines(root: Path, sha: str) -> dict[str, list[tuple[int, int]]]:
    """New-side line ranges changed by ``sha`` per path, whitespace-only changes ignored."""
    diff = run_git(["show", "-w", "-U0", "--no-renames", "--no-color", "--format=", sha], cwd=root)
    touched: dict[str, list[tuple[int, int]]] = {}
    path = ""
    for line in diff.splitlines():
        if line.startswith("+++ "):
            path = line[6:] if line.startswith("+++ b/") else ""
            continue
        m = _HUNK.match(line)
        if m and path:
            start, count = int(m.group(1)), int(m.group(2) or "1")
            # A pure deletion (count 0) touches the definition the lines were removed from.
            touched.setdefault(path, []).append((max(start, 1), start + max(count, 1) - 1))
    return touched


def _overlaps(chunk: Chunk, ranges: list[tuple[int, int]]) -> bool:
    return any(chunk.start_line <= end and start <= chunk.end_line for start, end in ranges)


def commit_pairs(
    root: Path,
    repo: str,
    indexed_commit: str,
    max_functions: int = MAX_FUNCTIONS,
    stats: HistoryStats | None = None,
) -> list[TrainingPair]:
    """One pair per (commit, touched definition) for every usable commit up to the index."""
    stats = stats if stats is not None else HistoryStats()
    pairs: list[TrainingPair] = []
    for commit in commits_up_to(root, indexed_commit):
        stats.commits += 1
        subject = commit.message.splitlines()[0] if commit.message else ""
        if _SKIP_SUBJECT.match(subject):
            stats.skip("revert, merge, release or formatting")
            continue
        if len(commit.message.split()) < MIN_WORDS:
            stats.skip("message too short")
            continue
        touched: list[Chunk] = []
        for path, ranges in touched_lines(root, commit.sha).items():
            for chunk in file_chunks_at(root, repo, commit.sha, path):
                if is_definition(chunk) and _overlaps(chunk, ranges):
                    touched.append(chunk)
        if not touched:
            stats.skip("no definition touched")
            continue
        if len(touched) > max_functions:
            stats.skip(f"bulk (more than {max_functions} definitions)")
            continue
        stats.used += 1
        for chunk in touched:
            pairs.append(
                TrainingPair(
                    query=commit.message,
                    positive=target_of(chunk),
                    positive_text=pair_text(chunk),
                    source="commit",
                    time=commit.time,
                )
            )
    return pairs


def is_definition(chunk: Chunk) -> bool:
    """A named function, method or class in source (not a module-level remainder)."""
    return chunk.kind in _DEFINITION_KINDS and bool(chunk.symbol) and chunk.symbol != "<module>"


def target_of(chunk: Chunk) -> Target:
    return Target(
        repo=chunk.repo,
        path=chunk.path,
        start_line=chunk.start_line,
        end_line=chunk.end_line,
        symbol=chunk.symbol,
        commit=chunk.commit,
    )
