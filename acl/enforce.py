"""Defence in depth: re-check every hit against the allowed set before it goes further."""

from __future__ import annotations

import logging
from collections.abc import Iterable

from acl.permissions import Access
from indexer.errors import AccessDenied
from indexer.models import Chunk, Hit

log = logging.getLogger(__name__)


def _allowed(access: Access | frozenset[str]) -> frozenset[str]:
    return access.repos if isinstance(access, Access) else access


def check_chunks(chunks: Iterable[Chunk], access: Access | frozenset[str]) -> None:
    """Raise ``AccessDenied`` if any chunk comes from a repository outside ``access``.

    The search query already filters by repository; reaching this error means a bug, so
    nothing is dropped silently and nothing is shown.
    """
    repos = _allowed(access)
    for chunk in chunks:
        if chunk.repo not in repos:
            log.error(
                "access violation: a chunk of %s reached an answer it was not allowed in",
                chunk.repo,
            )
            raise AccessDenied(
                "A search result fell outside the repositories you may read; nothing was shown."
            )


def check_hits(hits: Iterable[Hit], access: Access | frozenset[str]) -> None:
    """``check_chunks`` over search hits (call before reranking and before the LLM)."""
    check_chunks((h.chunk for h in hits), access)
