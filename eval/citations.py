"""Citation metrics of the answer pipeline on golden questions (``codeask eval --citations``).

Every golden question goes through the real ``AnswerPipeline`` (search restricted to the
question's repository, rerank as configured, weak-evidence check, generation through
LiteLLM, citation validation with one regeneration and then strip-and-mark). The model is
``eval.local_llm``, a deterministic OpenAI-compatible server on 127.0.0.1, unless the
caller passes another pipeline.

Per question, each metric is 1 or 0 (a "not found" answer scores 0 on all of them):

* ``answered``: the pipeline gave an answer (not "not found", weak evidence or the model).
* ``citations_valid``: answered, cites at least one source, every ``[n]`` in the final text
  names a source that was given, and nothing was stripped or marked (no "could not be
  verified" or "cites no source" note). An answer that was regenerated once and then came
  back valid counts as valid; ``regenerated`` reports how often that happened.
* ``cites_gold``: answered and at least one cited source's line range contains a gold
  place (same path, overlapping lines: the retrieval hit rule).
* ``valid_and_gold``: both of the above, the headline figure.
* ``cites_all_gold``: the cited sources cover every gold place (multi-hop completeness).
* ``regenerated``: the first reply had a citation problem and was regenerated.
* ``gold_in_sources``: the model was called and some source it was given contains a gold
  place: the ceiling that retrieval sets for ``cites_gold`` (an agentic answer keeps only
  the places it cites, so there it equals ``cites_gold`` or the places read when none is).
* ``rounds``: tool rounds of an agentic answer (0 for single-shot), a count, not a share.
* ``seconds``: the question's wall-clock time through the whole answer path.
* ``tokens_in`` / ``tokens_out``: the model's prompt and completion tokens for the answer,
  as LiteLLM reports them (the provider's counts), counts like ``rounds``.

Means are taken over all questions, overall, per kind and per repository (one golden set
per repository).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from bot.answer import (
    UNCITED_NOTE,
    UNVERIFIED_NOTE,
    Answer,
    AnswerPipeline,
    Reranker,
    Source,
    check_citations,
)
from bot.settings import BotSettings
from eval.harness import latency_summary
from eval.local_llm import MODEL_NAME, LocalLLM
from eval.metrics import Question, Scored, Span, aggregate, gold_hit_by
from indexer.search import Searcher

CITATIONS_SCHEMA_VERSION = 1
CITATION_METRICS = (
    "answered",
    "citations_valid",
    "cites_gold",
    "valid_and_gold",
    "cites_all_gold",
    "regenerated",
    "gold_in_sources",
    "rounds",
    "tokens_in",
    "tokens_out",
    "seconds",
)
COUNTS = (
    "rounds",
    "tokens_in",
    "tokens_out",
    "seconds",
)  # means of a count, not shares of questions
REGENERATED_PREFIX = "Regenerated once"


@dataclass(frozen=True)
class CitedAnswer:
    """What one question's answer cited, and its 0/1 metrics."""

    id: str
    repo: str
    kind: str
    metrics: dict[str, float]
    cited: tuple[Span, ...]
    invalid: tuple[int, ...]
    notes: tuple[str, ...]
    text: str


@dataclass
class CitationRun:
    model: str
    answers: list[CitedAnswer]
    mode: str = "single"  # CODEASK_ANSWER_MODE the answers were written with
    latency: dict[str, list[float]] = field(default_factory=dict)  # stage -> seconds

    @property
    def scored(self) -> list[Scored]:
        return [Scored(a.id, a.repo, a.kind, a.metrics) for a in self.answers]

    @property
    def summary(self) -> dict[str, object]:
        return aggregate(self.scored)

    def overall(self, metric: str) -> float:
        overall = self.summary["overall"]
        assert isinstance(overall, dict)
        return float(overall.get(metric, 0.0))


def span_of(source: Source) -> Span:
    return Span(source.chunk.path, source.chunk.start_line, source.chunk.end_line)


def source_span(answer: Answer, number: int) -> Span | None:
    for s in answer.sources:
        if s.number == number:
            return span_of(s)
    return None


def score_answer(answer: Answer, question: Question, seconds: float = 0.0) -> CitedAnswer:
    """The citation metrics of one pipeline answer against the question's gold places."""
    check = check_citations(answer.text, len(answer.sources))
    cited = tuple(
        span for span in (source_span(answer, n) for n in check.cited) if span is not None
    )
    answered = answer.found
    marked = UNVERIFIED_NOTE in answer.notes or UNCITED_NOTE in answer.notes
    valid = answered and bool(cited) and not check.invalid and not marked
    gold = [g.span for g in question.gold]
    covered = {i for span in cited for i in gold_hit_by(span, gold)}
    cites_gold = answered and bool(covered)
    metrics = {
        "answered": float(answered),
        "citations_valid": float(valid),
        "cites_gold": float(cites_gold),
        "valid_and_gold": float(valid and cites_gold),
        "cites_all_gold": float(answered and len(covered) == len(gold)),
        "regenerated": float(any(n.startswith(REGENERATED_PREFIX) for n in answer.notes)),
        "gold_in_sources": float(
            answer.used_llm and any(gold_hit_by(span_of(s), gold) for s in answer.sources)
        ),
        "rounds": float(answer.rounds),
        "tokens_in": float(answer.tokens_in),
        "tokens_out": float(answer.tokens_out),
        "seconds": seconds,
    }
    return CitedAnswer(
        id=question.id,
        repo=question.repo,
        kind=question.kind,
        metrics=metrics,
        cited=cited,
        invalid=check.invalid,
        notes=tuple(answer.notes),
        text=answer.text,
    )


def evaluate_citations(
    questions: Sequence[Question],
    pipeline: AnswerPipeline,
    progress: Callable[[int, int], None] | None = None,
    stream: bool = True,
) -> CitationRun:
    """Answer every question from its own repository only and score the citations.

    With ``stream`` the first generation streams (SSE), as in the chat front ends; a
    regeneration is one plain completion, as the pipeline does it.
    """
    model = pipeline.llm.name if pipeline.llm is not None else "extractive"
    run = CitationRun(model=model, answers=[], mode=pipeline.settings.answer_mode)
    for i, q in enumerate(questions, start=1):
        pieces: list[str] = []
        started = time.perf_counter()
        answer = pipeline.answer(q.question, frozenset({q.repo}), pieces.append if stream else None)
        seconds = time.perf_counter() - started
        run.latency.setdefault("answer", []).append(seconds)
        if "generate" in answer.timings:
            run.latency.setdefault("generate", []).append(answer.timings["generate"])
        run.answers.append(score_answer(answer, q, seconds))
        if progress:
            progress(i, len(questions))
    return run


def local_pipeline(
    searcher: Searcher, server: LocalLLM, reranker: Reranker | None, settings: BotSettings
) -> AnswerPipeline:
    """The product pipeline with its model pointed at ``server`` (through LiteLLM).

    Everything else (sources, context size, thresholds) comes from ``settings`` and the
    reranker is the one ``codeask ask`` would use (``Services.reranker``).
    """
    settings = settings.model_copy(
        update={"llm_model": MODEL_NAME, "llm_api_base": server.base_url, "llm_api_key": ""}
    )
    return AnswerPipeline(searcher, settings, reranker=reranker)


def _rounded(m: dict[str, float]) -> dict[str, float]:
    return {k: (round(v, 4) if k != "questions" else int(v)) for k, v in m.items()}


def citations_to_json(run: CitationRun) -> dict[str, object]:
    """The documented, stable ``citations`` object of ``--json`` (eval/README.md)."""
    summary = run.summary
    overall, by_kind, by_repo = summary["overall"], summary["by_kind"], summary["by_repo"]
    assert isinstance(overall, dict) and isinstance(by_kind, dict) and isinstance(by_repo, dict)
    return {
        "schema_version": CITATIONS_SCHEMA_VERSION,
        "model": run.model,
        "mode": run.mode,
        "overall": _rounded(overall),
        "by_kind": {k: _rounded(v) for k, v in by_kind.items()},
        "by_repo": {k: _rounded(v) for k, v in by_repo.items()},
        "latency_ms": latency_summary(run.latency),
        "questions": [
            {
                "id": a.id,
                "repo": a.repo,
                "kind": a.kind,
                "metrics": {
                    k: (round(v, 3) if k in COUNTS else int(v)) for k, v in a.metrics.items()
                },
                "cited": [f"{s.path}:{s.start_line}-{s.end_line}" for s in a.cited],
                "invalid": list(a.invalid),
                "notes": list(a.notes),
                "answer": a.text,
            }
            for a in run.answers
        ],
    }
