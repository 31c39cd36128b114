"""Question + allowed repositories → a cited answer: the one pipeline behind every front end.

search (filtered to the allowed repos) → re-check every hit's repo → rerank → top sources
→ weak-evidence check (no model call when weak) → generation or extractive answer →
citation validation (one regeneration, then strip and mark).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from threading import Lock

import numpy as np

from bot.answer.agent import AgentLoop, StepCallback
from bot.answer.citations import (
    UNCITED_NOTE,
    UNVERIFIED_NOTE,
    check_citations,
    says_not_found,
    strip_invalid,
)
from bot.answer.context import build_context, merge_spans
from bot.answer.evidence import COSINE_SOURCES, EvidenceSignal, evidence_signal, is_weak
from bot.answer.llm import LanguageModel, LiteLLMClient, ToolModel, ToolsRefused
from bot.answer.prompt import build_messages, correction_message
from bot.answer.rerank import Reranker
from bot.answer.result import (
    Answer,
    Candidate,
    Source,
    extractive_answer,
    not_found_answer,
)
from bot.answer.retrieval_cache import Retrieval, RetrievalCache, cache_key, index_generation
from bot.answer.usage import counting_tokens
from bot.settings import BotSettings
from indexer.errors import InvalidInput, UpstreamUnavailable
from indexer.models import Chunk, Hit
from indexer.search import Searcher
from indexer.stores import assert_allowed

CLOSEST_PLACES = 3


def check_question(question: str) -> None:
    """Refuse a question with nothing to search for (blank, punctuation or emoji only):
    it would otherwise come back with unrelated code as its "closest places"."""
    if not any(ch.isalnum() for ch in question):
        raise InvalidInput("Ask a question in words: this one has no letters or digits.")


class AnswerPipeline:
    """Shared by the CLI, Slack and Teams; safe to call from several threads."""

    def __init__(
        self,
        searcher: Searcher,
        settings: BotSettings,
        reranker: Reranker | None = None,
        llm: LanguageModel | None = None,
        cache: RetrievalCache | None = None,
    ) -> None:
        self.searcher = searcher
        self.settings = settings
        self.reranker = reranker
        self.llm = llm if llm is not None or not settings.llm_model else LiteLLMClient(settings)
        self.cache = cache if cache is not None else RetrievalCache()
        self._chunk_vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._vectors_lock = Lock()
        self._tools_refused = False  # the model refused tools once: single-shot from then on

    # --- retrieval ----------------------------------------------------------------------

    def retrieve(
        self, question: str, repos: frozenset[str], timings: dict[str, float] | None = None
    ) -> Retrieval:
        """Candidates for ``question`` from ``repos`` only, reranked, with the evidence signal.

        Raises ``AccessDenied`` if any candidate (fresh or cached) lies outside ``repos``.
        """
        timings = timings if timings is not None else {}
        if not repos:  # fail closed: no readable repository, nothing to search
            return Retrieval((), (), EvidenceSignal(0.0, False))
        start = time.perf_counter()
        reranker_name = self.reranker.name if self.reranker else ""
        key = cache_key(
            question, repos, index_generation(self.searcher.backend, repos), reranker_name
        )
        cached = self.cache.get(key)
        if cached is not None:
            assert_allowed(cached.hits, repos)
            timings["cache"] = time.perf_counter() - start
            return cached
        n = self.settings.rerank_candidates
        hits = self.searcher.search(question, repos, k=n, candidates=n)
        assert_allowed(hits, repos)  # defence in depth: the store filtered already
        timings["search"] = time.perf_counter() - start

        scores: list[float | None] = [None] * len(hits)
        order = list(range(len(hits)))
        if self.reranker is not None and hits:
            start = time.perf_counter()
            raw = self.reranker.score(question, hits)
            scores = list(raw)
            order.sort(key=lambda i: (-raw[i], i))  # ties keep the fused order
            timings["rerank"] = time.perf_counter() - start
        final_rank = {i: rank for rank, i in enumerate(order, start=1)}
        candidates = tuple(
            Candidate(
                chunk=h.chunk,
                fused_rank=i + 1,
                fused_score=h.score,
                ranks=dict(h.ranks),
                rerank_score=scores[i],
                final_rank=final_rank[i],
            )
            for i, h in enumerate(hits)
        )
        ranked = tuple(hits[i] for i in order)

        start = time.perf_counter()
        top = ranked[:COSINE_SOURCES]
        signal = evidence_signal(
            np.asarray(self.searcher.embed_query(question), dtype=np.float32),
            self._vectors([h.chunk for h in top]),
            top,
            rerank_score=scores[order[0]] if hits else None,
        )
        timings["evidence"] = time.perf_counter() - start
        result = Retrieval(ranked, candidates, signal, reranker_name if hits else "")
        self.cache.put(key, result)
        return result

    def _vectors(self, chunks: Sequence[Chunk]) -> np.ndarray:
        """Embedding-text vectors of ``chunks``, computed once per chunk id."""
        with self._vectors_lock:
            missing = [c for c in chunks if c.id not in self._chunk_vectors]
        if missing:
            fresh = self.searcher.chunk_vectors(missing)
            with self._vectors_lock:
                for c, v in zip(missing, fresh, strict=True):
                    self._chunk_vectors[c.id] = v
                while len(self._chunk_vectors) > 4096:
                    self._chunk_vectors.popitem(last=False)
        with self._vectors_lock:
            found = [self._chunk_vectors.get(c.id) for c in chunks]
        if any(v is None for v in found):  # evicted by another thread meanwhile: recompute
            return self.searcher.chunk_vectors(chunks)
        return np.stack([v for v in found if v is not None]) if found else np.zeros((0, 1))

    # --- answering ----------------------------------------------------------------------

    def answer(
        self,
        question: str,
        repos: frozenset[str],
        on_token: Callable[[str], None] | None = None,
        history: list[tuple[str, str]] | None = None,
        on_step: StepCallback | None = None,
        carried: Sequence[Source] = (),
    ) -> Answer:
        """A cited answer drawn only from ``repos``.

        ``history`` holds earlier (question, answer) turns; the last question also joins
        the search text so a follow-up ("and where is it called?") finds its subject.
        ``on_token`` receives the first generation as it streams; the returned text is
        the validated one, which differs when citations had to be repaired. ``on_step``
        receives each tool step of an agentic answer ("Searching for `x`"); streamed text
        before a step was the model thinking aloud, not the answer. ``carried`` are places
        earlier answers of the conversation showed (already checked for this asker): an
        agentic follow-up starts from them as well as from its own search.
        ``tokens_in`` / ``tokens_out`` are what every model call for it (rerank included)
        used, as LiteLLM reports them.
        """
        with counting_tokens() as usage:
            result = self._answer(question, repos, on_token, history, on_step, carried)
        result.tokens_in, result.tokens_out = usage.prompt, usage.completion
        return result

    def _answer(
        self,
        question: str,
        repos: frozenset[str],
        on_token: Callable[[str], None] | None,
        history: list[tuple[str, str]] | None,
        on_step: StepCallback | None,
        carried: Sequence[Source],
    ) -> Answer:
        check_question(question)
        started = time.perf_counter()
        timings: dict[str, float] = {}
        history = history or []
        search_text = f"{history[-1][0]}\n{question}" if history else question
        retrieval = self.retrieve(search_text, repos, timings)
        top = list(retrieval.hits[: self.settings.answer_sources])

        if not top or is_weak(
            retrieval.signal,
            self.settings.not_found_threshold,
            self.settings.not_found_rerank_threshold,
        ):
            closest = [
                Source(i, h.chunk, h.score)
                for i, h in enumerate(merge_spans(top)[:CLOSEST_PLACES], start=1)
            ]
            result = not_found_answer(question, closest)
        else:
            start = time.perf_counter()
            entries = build_context(top, self.settings.context_chars)
            timings["context"] = time.perf_counter() - start
            sources = [e.source for e in entries]
            start = time.perf_counter()
            if self.llm is None:
                result = extractive_answer(question, sources)
            elif (agent := self._agent()) is not None:
                try:
                    first, kept = _with_carried(carried, top, repos)
                    result = agent.answer(question, repos, first, history, on_token, on_step, kept)
                    result.mode = "agent"
                except ToolsRefused:
                    if self.settings.answer_mode == "agent":
                        raise
                    self._tools_refused = True
                    agent = None
            if self.llm is not None and agent is None:
                messages = build_messages(question, entries, history)
                result = self._generate(question, messages, sources, on_token)
                result.mode = "single"
            if self.llm is not None:
                timings["generate"] = time.perf_counter() - start

        result.used_rerank = bool(retrieval.reranker)
        result.reranker = retrieval.reranker
        result.allowed_repo_count = len(repos)
        result.explain = list(retrieval.candidates)
        result.evidence = retrieval.signal.as_dict()
        timings["total"] = time.perf_counter() - started
        result.timings = timings
        return result

    def _agent(self) -> AgentLoop | None:
        """The tool loop when this model should get tools (``CODEASK_ANSWER_MODE``)."""
        mode = self.settings.answer_mode
        llm = self.llm
        if mode == "single" or llm is None or not hasattr(llm, "chat"):
            return None
        model: ToolModel = llm  # type: ignore[assignment]
        if mode == "auto" and (self._tools_refused or model.tool_support() == "no"):
            return None
        return AgentLoop(model, self.searcher, self.settings)

    def _generate(
        self,
        question: str,
        messages: list[dict[str, str]],
        sources: list[Source],
        on_token: Callable[[str], None] | None,
    ) -> Answer:
        assert self.llm is not None
        notes: list[str] = []
        text = self.llm.complete(messages, on_token)
        check = check_citations(text, len(sources))
        if not check.ok:
            problem = check.problem(len(sources))
            notes.append(f"Regenerated once because {problem}.")
            retry = [*messages, {"role": "assistant", "content": text}]
            retry.append(correction_message(problem, len(sources)))
            text = self.llm.complete(retry, None)
            check = check_citations(text, len(sources))
            if check.invalid:
                text = strip_invalid(text, len(sources))
                notes.append(UNVERIFIED_NOTE)
            if check_citations(text, len(sources)).missing:
                notes.append(UNCITED_NOTE)
        if not text.strip():  # e.g. a reasoning model that spent max_tokens thinking
            raise UpstreamUnavailable(
                "The language model returned an empty answer twice; check its max tokens."
            )
        return Answer(
            question,
            text,
            sources,
            found=not says_not_found(text),
            used_llm=True,
            notes=notes,
        )


CARRIED_PLACES = 6  # places of earlier answers a follow-up starts from, latest first


def _with_carried(
    carried: Sequence[Source], top: Sequence[Hit], repos: frozenset[str]
) -> tuple[list[Hit], int]:
    """The earlier answers' places (latest first, allowed ones only) and then this search's
    hits, each place once; and how many of them came from earlier answers."""
    seen: set[str] = set()
    first: list[Hit] = []
    for s in list(reversed(carried))[:CARRIED_PLACES]:
        if s.chunk.repo in repos and s.chunk.id not in seen:
            seen.add(s.chunk.id)
            first.append(Hit(chunk=s.chunk, score=s.score))
    kept = len(first)
    first += [h for h in top if h.chunk.id not in seen]
    assert_allowed(first, repos)
    return first, kept
