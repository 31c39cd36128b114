"""Question + allowed repositories -> cited Answer: the Asker, pipeline, rerank, prompt, LLM, citations."""

from __future__ import annotations

from typing import TYPE_CHECKING

from indexer.lazy import lazy_attributes

if TYPE_CHECKING:
    from bot.answer.asking import Asker, History, Question, registered_repos
    from bot.answer.citations import (
        UNCITED_NOTE,
        UNVERIFIED_NOTE,
        check_citations,
        parse_citations,
    )
    from bot.answer.lookup import NamePlace, check_name, look_up
    from bot.answer.model_card import GATE_MRR_GAIN, enabled_by_default, read_card, write_card
    from bot.answer.pipeline import AnswerPipeline, check_question
    from bot.answer.records import AnsweredQuestion, seen_here
    from bot.answer.rerank import (
        TRAINED_SUBDIR,
        CrossEncoderReranker,
        OnnxCrossEncoderReranker,
        Reranker,
        load_reranker,
        pair_text,
        trained_reranker_path,
    )
    from bot.answer.result import GITHUB_WEB, NOT_FOUND_TEXT, Answer, Source
    from bot.answer.retrieval_cache import RetrievalCache

# Loaded on first use: the language model client alone takes seconds to import, and
# most commands never answer a question.
_HOME = {
    "Answer": "bot.answer.result",
    "AnswerPipeline": "bot.answer.pipeline",
    "AnsweredQuestion": "bot.answer.records",
    "Asker": "bot.answer.asking",
    "CrossEncoderReranker": "bot.answer.rerank",
    "GATE_MRR_GAIN": "bot.answer.model_card",
    "GITHUB_WEB": "bot.answer.result",
    "History": "bot.answer.asking",
    "NOT_FOUND_TEXT": "bot.answer.result",
    "NamePlace": "bot.answer.lookup",
    "OnnxCrossEncoderReranker": "bot.answer.rerank",
    "Question": "bot.answer.asking",
    "Reranker": "bot.answer.rerank",
    "RetrievalCache": "bot.answer.retrieval_cache",
    "Source": "bot.answer.result",
    "TRAINED_SUBDIR": "bot.answer.rerank",
    "UNCITED_NOTE": "bot.answer.citations",
    "UNVERIFIED_NOTE": "bot.answer.citations",
    "check_citations": "bot.answer.citations",
    "check_name": "bot.answer.lookup",
    "check_question": "bot.answer.pipeline",
    "enabled_by_default": "bot.answer.model_card",
    "load_reranker": "bot.answer.rerank",
    "look_up": "bot.answer.lookup",
    "pair_text": "bot.answer.rerank",
    "parse_citations": "bot.answer.citations",
    "read_card": "bot.answer.model_card",
    "registered_repos": "bot.answer.asking",
    "seen_here": "bot.answer.records",
    "trained_reranker_path": "bot.answer.rerank",
    "write_card": "bot.answer.model_card",
}

__all__ = [
    "GATE_MRR_GAIN",
    "GITHUB_WEB",
    "NOT_FOUND_TEXT",
    "TRAINED_SUBDIR",
    "UNCITED_NOTE",
    "UNVERIFIED_NOTE",
    "Answer",
    "AnswerPipeline",
    "AnsweredQuestion",
    "Asker",
    "CrossEncoderReranker",
    "History",
    "NamePlace",
    "OnnxCrossEncoderReranker",
    "Question",
    "Reranker",
    "RetrievalCache",
    "Source",
    "check_citations",
    "check_name",
    "check_question",
    "enabled_by_default",
    "load_reranker",
    "look_up",
    "pair_text",
    "parse_citations",
    "read_card",
    "registered_repos",
    "seen_here",
    "trained_reranker_path",
    "write_card",
]

__getattr__ = lazy_attributes(__name__, _HOME)
