"""The ``codeask eval`` command: load golden sets, optionally index the corpora, score, print."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console

from bot.services import Services
from bot.settings import BotSettings
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
from indexer.embedding import Embedder, open_embedding_cache
from indexer.search import Searcher
from indexer.settings import IndexerSettings
from indexer.stores import SearchBackend

if TYPE_CHECKING:
    from eval.citations import CitationRun

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
    services: Services,
    paths: Sequence[Path],
    *,
    k: int,
    as_json: bool,
    ablate: bool,
    index: bool,
    report_dir: Path,
    out: Console,
    err: Console,
    citations: bool = False,
    answers: bool = False,
    mode: str | None = None,
) -> list[RunResult]:
    """Retrieval metrics, and with ``citations`` / ``answers`` the answer path's: with the
    local test model, or (``answers``) the configured one; ``mode`` overrides
    CODEASK_ANSWER_MODE for those answers."""
    cite = _answering(citations, answers, mode)
    settings = services.indexer
    files = golden_paths(paths)
    questions = load_many(files)
    store = services.store
    embedder = services.embedder
    if index:
        index_golden_repos(questions, store, embedder, settings, err)
    require_indexed(store, sorted({q.repo for q in questions}))
    if ablate:
        results, notes = run_ablations(questions, services, k, say=err.print)
        cited = cite(questions, services, err)
        md = write_report(results, notes, [_shown(p) for p in files], report_dir, citations=cited)
        if as_json:
            doc: dict[str, object] = {
                "schema_version": JSON_SCHEMA_VERSION,
                "k": k,
                "runs": [run_to_json(r, questions) for r in results],
                "notes": notes,
            }
            _add_citations(doc, cited)
            sys.stdout.write(json.dumps(doc, indent=2) + "\n")
        else:
            for r in results:
                out.print(terminal_table(r))
                out.print(latency_line(r))
            out.print(table_caption(k))
            _print_citations(out, cited)
            for note in notes:
                out.print(f"note: {note}")
        err.print(f"report written to {md}")
        return results
    result = evaluate(questions, searcher_ranker(Searcher(store, embedder)), k)
    cited = cite(questions, services, err)
    if as_json:
        doc = run_to_json(result, questions)
        _add_citations(doc, cited)
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
    else:
        out.print(terminal_table(result))
        out.print(latency_line(result))
        out.print(table_caption(k))
        _print_citations(out, cited)
    return [result]


Answering = Callable[[Sequence[Question], Services, Console], "CitationRun | None"]


def _answering(citations: bool, answers: bool, mode: str | None) -> Answering:
    def run(questions: Sequence[Question], services: Services, err: Console) -> CitationRun | None:
        if not (citations or answers):
            return None
        settings = services.bot
        if mode is not None:
            settings = settings.model_copy(update={"answer_mode": mode})
        if answers and settings.llm_model:
            return _with_configured(questions, services, settings, err)
        return _citations(questions, services, settings, err)

    return run


def _with_configured(
    questions: Sequence[Question], services: Services, settings: BotSettings, err: Console
) -> CitationRun:
    """Every question through the answer pipeline with the configured model."""
    from bot.answer import AnswerPipeline
    from eval.citations import evaluate_citations

    searcher = Searcher(services.store, services.embedder)
    pipeline = AnswerPipeline(searcher, settings, reranker=services.reranker)
    err.print(f"answering {len(questions)} questions with {settings.llm_model}")
    return evaluate_citations(questions, pipeline)


def _citations(
    questions: Sequence[Question], services: Services, settings: BotSettings, err: Console
) -> CitationRun:
    """Every question through the answer pipeline, the model being the local test LLM."""
    from eval.citations import evaluate_citations, local_pipeline
    from eval.local_llm import running_local_llm

    with running_local_llm() as server:
        pipeline = local_pipeline(
            Searcher(services.store, services.embedder), server, services.reranker, settings
        )
        err.print(
            f"answering {len(questions)} questions with {server.base_url} (local test LLM, "
            f"{settings.answer_mode} mode; it checks the mechanics, not answer quality)"
        )
        return evaluate_citations(questions, pipeline)


def _add_citations(doc: dict[str, object], cited: CitationRun | None) -> None:
    if cited is not None:
        from eval.citations import citations_to_json

        doc["citations"] = citations_to_json(cited)


def _print_citations(out: Console, cited: CitationRun | None) -> None:
    if cited is not None:
        from eval.report import citation_caption, citation_table

        out.print(citation_table(cited))
        out.print(citation_caption())


def _shown(path: Path) -> str:
    try:
        return path.resolve().relative_to(REPO_ROOT).as_posix()
    except ValueError:
        return path.as_posix()
