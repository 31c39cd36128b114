"""The ``codeask eval`` command: load golden sets, optionally index the corpora, score, print."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console

from eval.ablation import run_ablations
from eval.goldens import REPO_ROOT, load_many, source_roots
from eval.harness import (
    JSON_SCHEMA_VERSION,
    RunResult,
    evaluate,
    golden_paths,
    require_indexed,
    run_to_json,
    searcher_ranker,
)
from eval.indexes import index_corpora
from eval.metrics import Question
from eval.report import latency_line, table_caption, terminal_table, write_report
from indexer.backend import SearchBackend
from indexer.embedding import Embedder, load_embedder
from indexer.search import Searcher
from indexer.settings import IndexerSettings
from indexer.stores import open_embedding_cache, open_store

DEFAULT_REPORT_DIR = REPO_ROOT / "eval" / "results"


def index_golden_repos(
    questions: Sequence[Question],
    store: SearchBackend,
    embedder: Embedder,
    settings: IndexerSettings,
    err: Console,
) -> None:
    """Index the pinned source of every repository the questions ask about."""
    roots = source_roots({q.repo for q in questions})
    for report in index_corpora(roots, store, embedder, open_embedding_cache(settings)):
        err.print(
            f"indexed {report.repo}: {report.files} files, {report.chunks} chunks written "
            f"({report.embedded} embedded), {report.seconds:.1f} s"
        )


def run_eval(
    paths: Sequence[Path],
    *,
    k: int,
    as_json: bool,
    ablate: bool,
    index: bool,
    report_dir: Path,
    out: Console,
    err: Console,
) -> list[RunResult]:
    settings = IndexerSettings()
    files = golden_paths(paths)
    questions = load_many(files)
    store = open_store(settings)
    embedder = load_embedder(
        settings.embed_model, settings.embed_threads, settings.embed_batch_size
    )
    if index:
        index_golden_repos(questions, store, embedder, settings, err)
    require_indexed(store, sorted({q.repo for q in questions}))
    if ablate:
        results, notes = run_ablations(questions, settings, store, embedder, k, say=err.print)
        md = write_report(results, notes, [_shown(p) for p in files], report_dir)
        if as_json:
            doc = {
                "schema_version": JSON_SCHEMA_VERSION,
                "k": k,
                "runs": [run_to_json(r, questions) for r in results],
                "notes": notes,
            }
            sys.stdout.write(json.dumps(doc, indent=2) + "\n")
        else:
            for r in results:
                out.print(terminal_table(r))
                out.print(latency_line(r))
            out.print(table_caption(k))
            for note in notes:
                out.print(f"note: {note}")
        err.print(f"report written to {md}")
        return results
    result = evaluate(questions, searcher_ranker(Searcher(store, embedder)), k)
    if as_json:
        sys.stdout.write(json.dumps(run_to_json(result, questions), indent=2) + "\n")
    else:
        out.print(terminal_table(result))
        out.print(latency_line(result))
        out.print(table_caption(k))
    return [result]


def _shown(path: Path) -> str:
    try:
        return path.resolve().relative_to(REPO_ROOT).as_posix()
    except ValueError:
        return path.as_posix()
