"""``codeask train mine``: training pairs for the reranker from what is already indexed.

For each repository the history is read only up to the commit the store says is indexed;
pairs are mined from that history and from the indexed snapshot, golden-set material is
dropped, each pair gets hard negatives from the product's own hybrid search, and the
newest commits (and a share of files) are held out for validation.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bot.answer import pair_text
from bot.training.docpairs import docs_pairs, docstring_pairs, without_doc_comment
from bot.training.history import HistoryStats, commit_pairs, target_of
from bot.training.leakage import Golden, exclude_golden
from bot.training.pairs import TrainingPair, cap, deduplicate, split_by_time
from bot.training.snapshot import chunks_at
from indexer.errors import InvalidInput
from indexer.search import Searcher
from indexer.source import run_git
from indexer.stores import SearchBackend

NEGATIVES = 7
MAX_PAIRS_PER_REPO = 3000
NEGATIVE_SKIP = 0  # how many top non-positive hits to pass over (they may be unlabelled positives)
PROBE_CHARS = 1000  # of a positive's code, when that is what its negatives are searched with
# A candidate holding this many consecutive query words is where the query came from.
QUOTE_WORDS = 8
Say = Callable[[str], None]


@dataclass
class MineReport:
    repo: str
    commit_range: str
    pairs_by_source: dict[str, int] = field(default_factory=dict)
    validation: int = 0
    dropped_golden: int = 0
    history: HistoryStats = field(default_factory=HistoryStats)

    def to_json(self) -> dict[str, object]:
        return {
            "repo": self.repo,
            "commit_range": self.commit_range,
            "pairs_by_source": self.pairs_by_source,
            "validation": self.validation,
            "dropped_golden": self.dropped_golden,
            "commits_read": self.history.commits,
            "commits_used": self.history.used,
            "commits_skipped": self.history.skipped,
        }


def indexed_commit(store: SearchBackend, repo: str) -> str:
    """The commit the store holds for ``repo`` ('' for a folder indexed without git)."""
    state = store.repo_state(repo)
    if state is None:
        raise InvalidInput(f"{repo} is not indexed here; run `codeask index` for it first")
    return state.commit


def _commit_time(root: Path, commit: str) -> float:
    if not commit:
        return 0.0
    return float(run_git(["show", "-s", "--format=%ct", commit], cwd=root))


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def quotes(candidate: str, query: str, run: int = QUOTE_WORDS) -> bool:
    """Whether ``candidate`` holds ``run`` consecutive words of ``query`` (or all of a shorter one).

    A docs paragraph's own chunk, or a copy of a docstring elsewhere, is where the query
    was cut from: as a "negative" it would teach the model that repeating the question's
    words makes a candidate wrong.
    """
    words = _words(query)
    if not words:
        return False
    text = " " + " ".join(_words(candidate)) + " "
    size = min(run, len(words))
    return any(f" {' '.join(words[i : i + size])} " in text for i in range(len(words) - size + 1))


def add_hard_negatives(
    pairs: Sequence[TrainingPair], searcher: Searcher, n: int = NEGATIVES
) -> None:
    """High-ranked hybrid hits of the pair's repository that are not its positive.

    Candidates that quote the query are skipped, and for docstring pairs every negative
    loses its own doc comment as the positive did, so the only difference left between
    positive and negatives is what the code does.
    """
    for p in pairs:
        # A docstring pair's positive lost the very words its query is made of, while the
        # query's own top hits keep theirs: mined by the query, every negative would be
        # closer to it than the positive, and the model would learn to rank *against*
        # similarity (measured: golden MRR@10 0.72 -> 0.10). Its negatives are therefore
        # the code nearest the positive instead; other pairs keep the query's top hits.
        probe = p.positive_text[:PROBE_CHARS] if p.source == "docstring" else p.query
        hits = searcher.search(probe, frozenset({p.positive.repo}), k=n + 10, candidates=50)
        chosen = []
        for h in hits:
            c = h.chunk
            same_place = c.path == p.positive.path and (
                (c.start_line <= p.positive.end_line and p.positive.start_line <= c.end_line)
                or (bool(c.symbol) and c.symbol == p.positive.symbol)
            )
            if p.source == "docstring":
                c = without_doc_comment(c)
            if not same_place and not quotes(c.text, p.query):
                chosen.append(c)
        chosen = chosen[NEGATIVE_SKIP : NEGATIVE_SKIP + n]
        p.negatives = [pair_text(c) for c in chosen]
        p.negative_targets = [target_of(c) for c in chosen]


def mine_repo(
    repo: str,
    root: Path,
    store: SearchBackend,
    searcher: Searcher,
    golden: Golden,
    *,
    max_functions: int,
    max_pairs: int = MAX_PAIRS_PER_REPO,
    negatives: int = NEGATIVES,
    say: Say | None = None,
) -> tuple[list[TrainingPair], MineReport]:
    """Pairs for one indexed repository whose source (a git work tree or folder) is ``root``."""
    if not root.is_dir():
        raise InvalidInput(f"{root} is not a folder")
    commit = indexed_commit(store, repo)
    report = MineReport(repo=repo, commit_range="")
    pairs: list[TrainingPair] = []
    if commit:
        first = run_git(["rev-list", "--max-parents=0", commit], cwd=root).splitlines()[0]
        report.commit_range = f"{first[:12]}..{commit[:12]}"
        pairs += commit_pairs(root, repo, commit, max_functions, report.history)
    else:
        report.commit_range = "no git history (snapshot only)"
    snapshot = chunks_at(root, repo, commit)
    when = _commit_time(root, commit)
    pairs += docstring_pairs(snapshot, when)
    pairs += docs_pairs(snapshot, when)
    if say:
        say(
            f"{repo}: {len(pairs)} candidate pairs from {len(snapshot)} chunks at "
            f"{commit[:12] or 'the folder'}"
        )
    pairs = deduplicate(pairs)
    pairs, report.dropped_golden = exclude_golden(pairs, golden)
    pairs = cap(pairs, max_pairs)
    add_hard_negatives(pairs, searcher, negatives)
    # Negatives were just drawn from the store: drop any gold place among them too.
    pairs, _ = exclude_golden(pairs, golden)
    pairs = [p for p in pairs if p.negatives]
    pairs = split_by_time(pairs)
    for p in pairs:
        report.pairs_by_source[p.source] = report.pairs_by_source.get(p.source, 0) + 1
    report.validation = sum(p.split == "validation" for p in pairs)
    return pairs, report
