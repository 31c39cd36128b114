"""One question from any chat platform → an access-checked, audited ``Answer``.

Slack and Teams turn their events into a :class:`Question` and render the ``Answer``;
everything between lives here once: the place policy (``acl.permissions``), the answer
pipeline restricted to the allowed repositories, the withheld note, the audit entry, and
the translation of every failure into an answer a chat user can read. Nothing here knows
about a chat platform.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from sqlalchemy.engine import Engine

from acl import Access, AccessResolver, Place, Principal
from bot.answer.records import AnsweredQuestion, load_answer, record_answer, seen_here
from bot.answer.result import Answer, Source, source_list
from indexer.errors import AccessDenied, CodeaskError, InvalidInput, StoreUnavailable
from indexer.stores import SearchBackend

if TYPE_CHECKING:
    from acl import AclStore
    from bot.answer.pipeline import AnswerPipeline

log = logging.getLogger(__name__)

TokenCallback = Callable[[str], None]
StepCallback = Callable[[str], None]
History = tuple[tuple[str, str], ...]

NO_REPOS_TEXT = "There is no indexed repository I may search for you here yet."
ACCESS_DOWN_TEXT = (
    "I could not check which repositories you may read (the access-control database is "
    "unavailable), so I did not search. Please try again in a few minutes."
)
STORE_DOWN_TEXT = (
    "The code search index is unavailable right now, so I could not look this up. "
    "Please try again in a few minutes."
)
LLM_DOWN_TEXT = (
    "The language model is unavailable right now, so I could not write an answer. "
    "The most relevant code I found:"
)
LLM_DOWN_BARE_TEXT = (
    "The language model is unavailable right now, so I could not write an answer. "
    "Please try again in a few minutes."
)
UNEXPECTED_TEXT = "Something went wrong while answering; the error was logged (reference {id})."
FALLBACK_SOURCES = 3

# How a question ended, for the operator's metrics (never shown to the asker).
ANSWERED, NOT_FOUND, REFUSED, FAILED = "answered", "not_found", "refused", "failed"


def new_question_id() -> str:
    return uuid.uuid4().hex[:16]


def registered_repos(backend: SearchBackend) -> list[tuple[str, str]]:
    """(repo, visibility) of everything the search store holds."""
    return [(s.repo, s.visibility) for s in backend.repo_states()]


class QuestionObserver(Protocol):
    """Where the Asker reports each question and upstream failure (``bot.metrics``)."""

    def question(
        self,
        platform: str,
        place: str,
        mode: str,
        outcome: str,
        seconds: float,
        stages: Mapping[str, float],
        tokens: tuple[int, int] = (0, 0),
    ) -> None: ...

    def upstream_error(self, service: str, kind: str) -> None: ...


class AnsweringParts(Protocol):
    """What the Asker needs of the process's long-lived parts (``bot.services.Services``)."""

    @property
    def observer(self) -> QuestionObserver: ...

    @property
    def store(self) -> SearchBackend: ...

    @property
    def engine(self) -> Engine: ...

    @property
    def acl_store(self) -> AclStore: ...

    @property
    def resolver(self) -> AccessResolver: ...

    def pipeline(self) -> AnswerPipeline:
        """The answer pipeline (loads the embedding model and the reranker on first use)."""
        ...


@dataclass(frozen=True)
class Question:
    """Who asks, where the answer will be shown, and the earlier turns of the conversation.

    ``thread_history`` holds (question, answer) pairs, oldest first. ``id`` names the
    question in the audit log, in feedback and in logs. ``only`` (the CLI's ``--repo``)
    narrows the repositories the asker may read and never widens them. ``earlier`` names
    the stored answers of the conversation (latest last) whose places a follow-up reads
    again, each re-checked against this asker, place and allowed set.
    """

    principal: Principal
    place: Place
    text: str
    thread_history: History = ()
    id: str = field(default_factory=new_question_id)
    only: frozenset[str] | None = None
    earlier: tuple[str, ...] = ()


ANSWER_THREADS = 8  # questions answered at once per server process; more wait


class Asker:
    """Answers questions for every chat adapter; safe to share across requests.

    ``pipeline`` and ``resolver`` come from ``services`` on first use (that loads the
    embedding model) unless given.
    """

    def __init__(
        self,
        services: AnsweringParts,
        pipeline: AnswerPipeline | None = None,
        resolver: AccessResolver | None = None,
    ) -> None:
        self.services = services
        self._pipeline = pipeline
        self._resolver = resolver
        self._lock = threading.Lock()
        # Answers hold a thread for seconds (search, generation, retry backoff). On the
        # default pool they would starve the short calls every webhook makes before it is
        # acknowledged (Slack retries an event it has not seen acknowledged in 3 s).
        self._answering = ThreadPoolExecutor(ANSWER_THREADS, thread_name_prefix="answer")

    # --- the one entry point of the adapters -------------------------------------------

    async def ask(
        self,
        question: Question,
        on_token: TokenCallback | None = None,
        on_step: StepCallback | None = None,
    ) -> Answer:
        """The answer to ``question``; never raises for a failure a user should hear about.

        ``on_token`` receives generated text as it streams and ``on_step`` each tool step of
        an agentic answer ("Reading `src/app.py` 10–40"), both called from a worker thread.
        A step means the text streamed before it was the model thinking, not the answer.
        """
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._answering, self.answer, question, on_token, on_step)

    def answer(
        self,
        question: Question,
        on_token: TokenCallback | None = None,
        on_step: StepCallback | None = None,
    ) -> Answer:
        """Blocking form of :meth:`ask`."""
        started = time.perf_counter()
        answer, outcome = self._checked(question, on_token, on_step)
        try:
            self.services.observer.question(
                question.principal.platform,
                question.place.kind,
                answer.mode,
                outcome,
                time.perf_counter() - started,
                answer.timings,
                (answer.tokens_in, answer.tokens_out),
            )
        except Exception:  # metrics never cost an asker the answer
            log.exception("question %s: metrics could not be recorded", question.id)
        return answer

    def _checked(
        self,
        question: Question,
        on_token: TokenCallback | None,
        on_step: StepCallback | None,
    ) -> tuple[Answer, str]:
        started = time.perf_counter()
        try:
            registered = registered_repos(self.services.store)
        except Exception as exc:
            log.error("question %s: search store unavailable: %s", question.id, exc)
            self._upstream("search", exc)
            return _unavailable(question, STORE_DOWN_TEXT), FAILED
        try:
            access = self.resolver.allowed_repos(question.principal, question.place, registered)
            if question.only is not None:
                access = dataclasses.replace(access, repos=access.repos & question.only)
        except Exception as exc:
            # Fail closed: without a decision nothing is searched.
            log.error("question %s: access resolution failed: %s", question.id, exc)
            self._upstream("access", exc)
            return _unavailable(question, ACCESS_DOWN_TEXT), FAILED
        access_seconds = time.perf_counter() - started
        carried = self._carried(question, access)
        answer, outcome = self._answer_within(question, access, on_token, on_step, carried)
        answer.timings["access"] = access_seconds
        answer.withheld_private = access.withheld
        if access.reason and question.place.kind == "channel":
            answer.asker_note = access.reason  # the audience must not learn more exists
        elif access.reason:
            answer.notes.insert(0, access.reason)
        self._audit(question, access, answer)
        self._record(question, answer)
        return answer, outcome

    def access(self, principal: Principal, place: Place) -> Access:
        """The repositories ``principal`` may see answers from in ``place`` (blocking)."""
        return self.resolver.allowed_repos(principal, place, registered_repos(self.services.store))

    def answered(self, question_id: str) -> AnsweredQuestion | None:
        """The stored answer a button names, from any replica (blocking); None if unknown.

        The caller authorizes the clicker (``bot.answer.records.seen_here``) before using it.
        """
        return load_answer(self.services.engine, question_id)

    # --- lazily built collaborators ------------------------------------------------------

    @property
    def resolver(self) -> AccessResolver:
        with self._lock:
            if self._resolver is None:
                self._resolver = self.services.resolver
            return self._resolver

    @property
    def pipeline(self) -> AnswerPipeline:
        with self._lock:
            if self._pipeline is None:
                self._pipeline = self.services.pipeline()
            return self._pipeline

    # --- internals -----------------------------------------------------------------------

    def _answer_within(
        self,
        question: Question,
        access: Access,
        on_token: TokenCallback | None,
        on_step: StepCallback | None = None,
        carried: tuple[Source, ...] = (),
    ) -> tuple[Answer, str]:
        if not access.repos:
            return Answer(question.text, NO_REPOS_TEXT, [], found=False), REFUSED
        history = list(question.thread_history)
        pipeline = self.pipeline
        try:
            stream = on_token if pipeline.llm is not None else None
            answer = pipeline.answer(question.text, access.repos, stream, history, on_step, carried)
        except StoreUnavailable as exc:
            log.error("question %s: search store unavailable: %s", question.id, exc)
            self._upstream("search", exc)
            return _unavailable(question, STORE_DOWN_TEXT), FAILED
        except (InvalidInput, AccessDenied) as exc:  # the question itself: say why
            return Answer(question.text, str(exc), [], found=False), REFUSED
        except CodeaskError as exc:
            # Everything else the pipeline raises comes from the language model.
            log.error("question %s: generation failed: %s", question.id, exc)
            self._upstream("llm", exc)
            return self._without_model(question, access, history), FAILED
        except Exception:
            log.exception("question %s: answering failed", question.id)
            return _unexpected(question), FAILED
        answer.searched = sorted(access.repos)  # the place's set: never beyond its audience
        return answer, ANSWERED if answer.found else NOT_FOUND

    def _upstream(self, service: str, exc: Exception) -> None:
        try:
            self.services.observer.upstream_error(service, type(exc).__name__)
        except Exception:
            log.exception("an upstream error could not be counted")

    def _without_model(
        self, question: Question, access: Access, history: list[tuple[str, str]]
    ) -> Answer:
        """The best places found (retrieval is cached), when the model cannot write."""
        search_text = f"{history[-1][0]}\n{question.text}" if history else question.text
        try:
            hits = self.pipeline.retrieve(search_text, access.repos).hits
        except Exception:
            log.exception("question %s: retrieval after a model failure failed", question.id)
            return _unavailable(question, LLM_DOWN_BARE_TEXT)
        sources = [Source(i, h.chunk, h.score) for i, h in enumerate(hits[:FALLBACK_SOURCES], 1)]
        if not sources:
            return _unavailable(question, LLM_DOWN_BARE_TEXT)
        return Answer(
            question.text,
            f"{LLM_DOWN_TEXT}\n{source_list(sources)}",
            sources,
            found=False,
            unavailable=True,
            lead=LLM_DOWN_TEXT,
        )

    def _carried(self, question: Question, access: Access) -> tuple[Source, ...]:
        """The places earlier answers of this conversation showed, that this asker may see
        here and now: an answer from another place or asker, or a repository no longer
        allowed, carries nothing."""
        carried: list[Source] = []
        for earlier in question.earlier[-4:]:
            try:
                stored = load_answer(self.services.engine, earlier)
            except Exception:
                log.exception("question %s: earlier answer %s unreadable", question.id, earlier)
                continue
            if stored is None or not seen_here(stored, question.principal, question.place):
                continue
            carried += [s for s in stored.sources if s.chunk.repo in access.repos]
        return tuple(carried)

    def _audit(self, question: Question, access: Access, answer: Answer) -> None:
        try:
            self.services.acl_store.record_audit(
                platform=question.principal.platform,
                user_id=question.principal.user_id,
                github_login=access.github_login,
                place=str(question.place),
                question=question.text,
                allowed_repos=access.repos,
                cited=[
                    (s.chunk.repo, s.chunk.path, s.chunk.start_line, s.chunk.end_line)
                    for s in answer.sources
                ],
                withheld=access.withheld,
                reason=access.reason,
                request_id=question.id,
            )
        except Exception:
            # The answer is already access-checked; a lost audit row is an operator alarm,
            # not a reason to leave the asker without a reply.
            log.exception("question %s: the audit entry could not be written", question.id)

    def _record(self, question: Question, answer: Answer) -> None:
        try:
            record_answer(
                self.services.engine,
                question.id,
                question.principal,
                question.place,
                question.text,
                answer.sources,
                answer.text,
                answer.notes,
                answer.found,
            )
        except Exception:
            # Its buttons will say the answer is gone; the answer itself still goes out.
            log.exception("question %s: the answer record could not be written", question.id)


def _unexpected(question: Question) -> Answer:
    return _unavailable(question, UNEXPECTED_TEXT.format(id=question.id))


def _unavailable(question: Question, text: str) -> Answer:
    """A failure worth asking again about later: nothing found, a part being down."""
    return Answer(question.text, text, [], found=False, unavailable=True)
