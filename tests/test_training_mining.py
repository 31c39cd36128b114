"""Mining reranker training pairs: history stops at the indexed commit, golden material never leaks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.training.leakage import load_golden
from bot.training.mining import add_hard_negatives, mine_repo, quotes
from bot.training.pairs import VALIDATION, Target, TrainingPair, read_pairs, write_pairs
from indexer.embedding import SqliteEmbeddingCache
from indexer.jobs import index_repository
from indexer.search import Searcher
from indexer.stores import SqliteStore
from tests.conftest import git

REPO = "acme/jobs"
V1 = '''"""Job scheduling helpers."""


def parse_duration(text):
    """Turn a duration such as 5m or 2h into a number of seconds for the scheduler."""
    units = {"s": 1, "m": 60}
    return int(text[:-1]) * units[text[-1]]


def schedule_timeout(job, timeout):
    """Attach a timeout to a job so the worker can cancel it when it runs too long."""
    job["timeout"] = timeout
    return job


def timeout_banner(timeout):
    """How is the timeout banner rendered in the job list of the dashboard?"""
    label = "times out after"
    return f"{label} {timeout}"
'''
README = """# jobs

Durations like `5m` are read by `parse_duration`, which the scheduler calls for every job.
"""
V2 = V1.replace('units = {"s": 1, "m": 60}', 'units = {"s": 1, "m": 60, "h": 3600}')
V3 = V2.replace('job["timeout"] = timeout', 'job["timeout"] = parse_duration(timeout)')
V3B = V3.replace('label = "times out after"', 'label = "cancelled after"')
V4 = (
    V3B
    + '''

def retry_delay(attempt):
    """Exponential backoff between two attempts of a failed job."""
    return min(300, 2**attempt)
'''
)
AFTER_INDEX_MESSAGE = "Add exponential retry delay for failed jobs after the index"


def _commit(root: Path, text: str, message: str) -> str:
    (root / "jobs.py").write_text(text)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)
    return git(root, "rev-parse", "HEAD")


def _golden(path: Path, gold_start: int, gold_end: int) -> Path:
    rows = [
        {
            "id": "jobs-1",
            "repo": REPO,
            "question": "Where does a job get its timeout attached before the worker runs it?",
            "kind": "identifier",
            "gold": [
                {
                    "path": "jobs.py",
                    "start_line": gold_start,
                    "end_line": gold_end,
                    "symbol": "schedule_timeout",
                }
            ],
        },
        {
            "id": "jobs-2",
            "repo": REPO,
            "question": "How is the timeout banner rendered in the job list?",
            "kind": "concept",
            "gold": [{"path": "README.md", "start_line": 1, "end_line": 1, "symbol": "jobs"}],
        },
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture(scope="module")
def mined(tmp_path_factory: pytest.TempPathFactory, embedder):  # type: ignore[no-untyped-def]
    tmp_path = tmp_path_factory.mktemp("mining")
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "README.md").write_text(README)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "Start the jobs project with a readme")
    shas = [
        _commit(root, V1, "Add the job scheduling helpers for durations and timeouts"),
        _commit(root, V2, "Accept hours in duration strings like 2h"),
        _commit(root, V3, "Store job timeouts as seconds instead of the raw string"),
        _commit(root, V3B, "Say cancelled instead of times out in the banner"),
    ]
    store = SqliteStore(tmp_path / "codeask.db")
    index_repository(root, REPO, store, embedder, SqliteEmbeddingCache(tmp_path / "e.db"))
    after = _commit(root, V4, AFTER_INDEX_MESSAGE)  # history the index has not seen
    lines = V3.splitlines()
    start = next(i for i, ln in enumerate(lines, 1) if ln.startswith("def schedule_timeout"))
    golden = load_golden([_golden(tmp_path / "golden.jsonl", start, start + 3)])
    pairs, report = mine_repo(
        REPO, root, store, Searcher(store, embedder), golden, max_functions=8, negatives=3
    )
    return pairs, report, shas, after, golden, Searcher(store, embedder)


def test_history_is_cut_at_the_indexed_commit(mined) -> None:  # type: ignore[no-untyped-def]
    pairs, report, shas, after, _, _ = mined
    commit_pairs = [p for p in pairs if p.source == "commit"]
    assert commit_pairs, "commit messages should produce pairs"
    assert {p.positive.commit for p in commit_pairs} <= set(shas)
    assert all(p.positive.commit != after for p in pairs)
    assert all(AFTER_INDEX_MESSAGE not in p.query for p in pairs)
    assert all(p.positive.symbol != "retry_delay" for p in pairs)
    assert all("retry_delay" not in text for p in pairs for text in p.negatives)
    assert report.history.commits == 5  # the README commit and the four above, not `after`
    assert report.commit_range.endswith(shas[-1][:12])
    # The hours commit maps to parse_duration as it was at that commit.
    hours = [p for p in commit_pairs if p.query.startswith("Accept hours")]
    assert [(p.positive.symbol, p.positive.commit) for p in hours] == [("parse_duration", shas[1])]
    assert '"h": 3600' in hours[0].positive_text


def test_golden_gold_places_and_questions_never_reach_training(mined) -> None:  # type: ignore[no-untyped-def]
    pairs, report, _, _, golden, _ = mined
    gold = golden.places[0]
    for p in pairs:
        for t in [p.positive, *p.negative_targets]:
            overlaps = (
                t.path == gold.path
                and t.start_line <= gold.end_line
                and (gold.start_line <= t.end_line)
            )
            assert not overlaps and t.symbol != "schedule_timeout"
        assert "schedule_timeout(job, timeout)" not in p.positive_text
        assert all("def schedule_timeout" not in n for n in p.negatives)
    # timeout_banner's docstring is (almost) a golden question: dropped by text similarity.
    assert all(p.positive.symbol != "timeout_banner" for p in pairs if p.source == "docstring")
    assert report.dropped_golden >= 2
    # The rest is still mined: a docstring pair (docstring removed) and a README pair.
    doc = [p for p in pairs if p.source == "docstring"]
    assert [p.positive.symbol for p in doc] == ["parse_duration"]
    assert "Turn a duration" in doc[0].query and "Turn a duration" not in doc[0].positive_text
    readme = [p for p in pairs if p.source == "docs"]
    assert [p.positive.symbol for p in readme] == ["parse_duration"]


def test_negatives_differ_from_the_positive_only_in_what_the_code_does(mined) -> None:  # type: ignore[no-untyped-def]
    pairs, searcher = mined[0], mined[5]
    for p in pairs:
        assert not any(quotes(n, p.query) for n in p.negatives), p.query
    # A docstring pair's positive lost its docstring; a negative keeping its own would teach
    # the model that a candidate repeating descriptive words is the wrong one.
    pair = TrainingPair(
        query="the text shown in the dashboard's job list for a job that can run out of time",
        positive=Target(REPO, "jobs.py", 4, 7, "parse_duration"),
        positive_text="def parse_duration(text): ...",
        source="docstring",
        time=0.0,
    )
    add_hard_negatives([pair], searcher, 7)
    banner = [n for n in pair.negatives if "def timeout_banner" in n]
    assert banner, pair.negatives
    assert "How is the timeout banner rendered" not in banner[0]
    assert 'label = "cancelled after"' in banner[0]
    pair.source = "commit"  # other sources keep the candidates as indexed
    add_hard_negatives([pair], searcher, 7)
    assert any("How is the timeout banner rendered" in n for n in pair.negatives)


def test_a_candidate_quotes_a_query_only_with_a_run_of_its_words() -> None:
    query = "Durations like 5m are read by parse_duration, which the scheduler calls for every job."
    readme = (
        "# jobs\n\nDurations like `5m` are read by `parse_duration`, which the\nscheduler calls"
    )
    assert quotes(readme, query)  # markup and line breaks do not hide the copy
    code = "def parse_duration(text):\n    # every job the scheduler calls is read like durations"
    assert not quotes(code, query)  # the same words, not in a run
    assert quotes("retry the job", "Retry the job")  # a short query must appear whole
    assert not quotes("retry", "Retry the job")
    assert not quotes("anything", "")


def test_newest_commits_are_held_out_and_pairs_round_trip(mined, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    pairs, _, shas, _, _, _ = mined
    held = {p.positive.commit for p in pairs if p.source == "commit" and p.split == VALIDATION}
    assert held == {shas[-1]}  # the banner commit is the newest one with usable pairs
    assert all(p.split != VALIDATION for p in pairs if p.positive.commit in shas[:2])
    path = tmp_path / "pairs.jsonl"
    write_pairs(path, pairs)
    again = read_pairs(path)
    assert [p.to_json() for p in again] == [p.to_json() for p in pairs]
    assert all(isinstance(p, TrainingPair) and p.negatives for p in again)
