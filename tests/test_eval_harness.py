"""The evaluation harness end to end on a tiny real repository: CLI, JSON, ablation report."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bot.cli.app import app
from bot.services import Services
from eval.ablation import run_ablations
from eval.harness import evaluate, require_indexed, run_to_json, searcher_ranker
from eval.indexes import index_corpora
from eval.metrics import GoldPlace, Question, Span
from eval.naive_chunks import naive_chunks, window_ranges
from eval.regold import relocate
from eval.report import write_report
from eval.svgchart import recall_chart
from indexer.embedding import SqliteEmbeddingCache
from indexer.errors import InvalidInput
from indexer.search import Searcher
from indexer.settings import IndexerSettings
from indexer.stores import SqliteStore

FILES = {
    "billing/invoice.py": (
        "import math\n\n\n"
        "def round_invoice_total(amount: float) -> int:\n"
        '    """Totals are rounded up to whole cents."""\n'
        "    return math.ceil(amount * 100)\n\n\n"
        "class RetryPolicy:\n"
        "    def backoff_seconds(self, attempt: int) -> float:\n"
        "        return min(30.0, 0.5 * 2**attempt)\n"
    ),
    "README.md": "# Tiny\n\nA billing service.\n\n## Deploy\n\nRun `make deploy` on main.\n",
}
REPO = "acme/tiny"
GOLDEN = [
    {
        "id": "tiny-001",
        "repo": REPO,
        "question": "how is the invoice total rounded?",
        "kind": "concept",
        "gold": [{"path": "billing/invoice.py", "start_line": 4, "end_line": 6, "symbol": "x"}],
    },
    {
        "id": "tiny-002",
        "repo": REPO,
        "question": "what is the exponential backoff between retries?",
        "kind": "multihop",
        "gold": [
            {"path": "billing/invoice.py", "start_line": 10, "end_line": 11, "symbol": "y"},
            {"path": "README.md", "start_line": 5, "end_line": 7, "symbol": "Deploy"},
        ],
    },
]


@pytest.fixture
def tiny(
    make_repo: Callable[[dict[str, str]], Path], data_dir: Path, tmp_path: Path, embedder
) -> tuple[Path, Path]:  # type: ignore[no-untyped-def]
    """A real repository indexed into CODEASK_DATA_DIR, and a golden file about it."""
    root = make_repo(FILES)
    settings = IndexerSettings()
    store = SqliteStore(settings.sqlite_path)
    index_corpora({REPO: root}, store, embedder, SqliteEmbeddingCache(data_dir / "embeddings.db"))
    golden = tmp_path / "tiny.jsonl"
    golden.write_text("".join(json.dumps(g) + "\n" for g in GOLDEN))
    return root, golden


def test_codeask_eval_json_reports_metrics_per_kind_and_repo(tiny: tuple[Path, Path]) -> None:
    _, golden = tiny
    result = CliRunner().invoke(app, ["eval", str(golden), "--json", "--k", "5"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["schema_version"] == 1 and doc["config"] == "hybrid" and doc["k"] == 5
    assert set(doc["overall"]) == {
        "questions",
        "recall@1",
        "recall@5",
        "mrr@5",
        "ndcg@5",
        "file_recall@5",
        "all_gold@5",
    }
    assert doc["overall"]["questions"] == 2
    assert set(doc["by_kind"]) == {"concept", "multihop"}
    assert set(doc["by_repo"]) == {REPO}
    assert set(doc["latency_ms"]) == {"embed", "search"}
    first = doc["questions"][0]
    assert first["id"] == "tiny-001"
    assert first["first_hit_rank"] == 1  # the rounding function is the obvious answer
    assert first["retrieved"][0].startswith("billing/invoice.py:")
    assert len(doc["recall_curve"]) == 5


def test_codeask_eval_prints_a_table(tiny: tuple[Path, Path]) -> None:
    _, golden = tiny
    result = CliRunner().invoke(app, ["eval", str(golden)])
    assert result.exit_code == 0, result.output
    assert "MRR" in result.stdout and "k=10" in result.stdout
    assert "multihop" in result.stdout and "R@10" in result.stdout
    assert REPO in result.stdout and "latency per question" in result.stdout


def test_eval_of_a_repository_that_is_not_indexed_says_how_to_fix_it(
    data_dir: Path, tmp_path: Path
) -> None:
    golden = tmp_path / "other.jsonl"
    golden.write_text(json.dumps({**GOLDEN[0], "repo": "acme/missing"}) + "\n")
    store = SqliteStore(IndexerSettings().sqlite_path)
    with pytest.raises(InvalidInput, match=r"acme/missing.*--index"):
        require_indexed(store, ["acme/missing"])


def test_each_question_searches_only_its_own_repository(
    tiny: tuple[Path, Path], make_repo: Callable[[dict[str, str]], Path], embedder
) -> None:  # type: ignore[no-untyped-def]
    other = make_repo({"billing/invoice.py": FILES["billing/invoice.py"]})
    settings = IndexerSettings()
    store = SqliteStore(settings.sqlite_path)
    cache = SqliteEmbeddingCache(settings.data_path / "embeddings.db")
    index_corpora({"acme/other": other}, store, embedder, cache)
    q = Question("q", "acme/other", "rounding invoice totals", "concept", (GoldPlace("x", 1, 1),))
    seen: list[str] = []
    searcher = Searcher(store, embedder)
    ranker = searcher_ranker(searcher)
    original = searcher.search

    def spy(text, repos, **kw):  # type: ignore[no-untyped-def]
        hits = original(text, repos, **kw)
        seen.extend(h.chunk.repo for h in hits)
        return hits

    searcher.search = spy  # type: ignore[method-assign]
    evaluate([q], ranker, k=10)
    assert seen and set(seen) == {"acme/other"}


def test_ablation_runs_each_configuration_and_writes_the_report(
    tiny: tuple[Path, Path], embedder, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    root, golden = tiny
    from eval.goldens import load_questions

    questions = load_questions(golden)
    services = Services()
    results, notes = run_ablations(questions, services, 10, roots={REPO: root})
    names = [r.config for r in results]
    assert names[:3] == ["hybrid", "bm25", "dense"]
    assert {"hybrid, no header", "naive hybrid", "naive bm25", "naive dense"} <= set(names)
    assert {
        "hybrid, no symbol list",
        "hybrid, tests/docs/examples not down-weighted",
        "hybrid, every import in the header",
    } <= set(names)
    assert any("opensearch" in n for n in notes) or "hybrid (opensearch)" in names
    naive_db = SqliteStore(services.indexer.data_path / "eval" / "naive.db")
    assert all(s.chunk_count > 0 for s in naive_db.repo_states())
    md = write_report(results, notes, [golden.name], tmp_path / "results")
    text = md.read_text()
    assert "| naive hybrid |" in text and "## By repository" in text
    assert "recall_at_k.svg" in text
    svg = ET.fromstring((tmp_path / "results" / "recall_at_k.svg").read_text())
    assert len(svg.findall("{http://www.w3.org/2000/svg}polyline")) == len(results)
    as_json = run_to_json(results[0], questions)
    assert as_json["config"] == "hybrid"


def test_naive_windows_cover_every_line_once_within_the_budget() -> None:
    text = "\n".join(f"line {i} " + "x" * (i % 70) for i in range(300))
    lines = text.split("\n")
    ranges = window_ranges(lines)
    covered = [row for a, b in ranges for row in range(a, b + 1)]
    assert covered == list(range(300))
    for a, b in ranges:
        assert sum(len(ln) + 1 for ln in lines[a : b + 1]) <= 1000 or a == b
    chunks = naive_chunks("a.py", "python", text.encode(), repo="o/r")
    assert [c.text for c in chunks] == ["\n".join(lines[a : b + 1]) for a, b in ranges]
    assert all(c.symbol == "" and c.header == "# a.py" for c in chunks)


def test_a_line_longer_than_the_budget_is_its_own_window() -> None:
    lines = ["short", "y" * 2500, "tail"]
    assert window_ranges(lines) == [(0, 0), (1, 1), (2, 2)]
    assert window_ranges(["", "  ", ""]) == []


def test_recall_chart_is_valid_svg_with_one_line_per_configuration() -> None:
    svg = recall_chart([("hybrid", [0.5, 0.7, 0.9]), ("bm25 <&>", [0.2, 0.4, 0.6])])
    root = ET.fromstring(svg)
    lines = root.findall("{http://www.w3.org/2000/svg}polyline")
    assert len(lines) == 2
    assert all(len(p.get("points", "").split()) == 3 for p in lines)
    assert "bm25 &lt;&amp;&gt;" in svg


def test_regold_follows_a_definition_that_moved(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("X = 1\n\n\n@dec\ndef f():\n    return 1\n")
    (tmp_path / "d.md").write_text("# T\n\n## Use\n\nrun it\n\n## Other\n")
    golden = tmp_path / "g.jsonl"
    gold = [
        {"path": "m.py", "start_line": 1, "end_line": 2, "symbol": "f"},
        {"path": "d.md", "start_line": 1, "end_line": 1, "symbol": "Use"},
    ]
    golden.write_text(json.dumps({"id": "g-001", "gold": gold}) + "\n")
    messages = relocate(golden, tmp_path)
    assert len(messages) == 2
    moved = json.loads(golden.read_text())["gold"]
    assert (moved[0]["start_line"], moved[0]["end_line"]) == (4, 6)
    assert (moved[1]["start_line"], moved[1]["end_line"]) == (3, 5)
    assert relocate(golden, tmp_path) == []  # nothing left to move


def test_span_is_what_search_hits_become() -> None:
    from eval.harness import span_of
    from indexer.models import Chunk, Hit

    chunk = Chunk("o/r", "a.py", 3, 9, "x", "f", "python", "source")
    assert span_of(Hit(chunk, 1.0)) == Span("a.py", 3, 9)
