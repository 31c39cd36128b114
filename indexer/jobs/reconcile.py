"""Catch missed push webhooks: compare each tracked branch head with the indexed commit."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy.engine import Engine
from sqlmodel import select

from indexer.db import write_session
from indexer.errors import CodeaskError
from indexer.jobs import queue as jobs
from indexer.jobs.registry import (
    KIND_INDEX,
    REPO_ARCHIVED,
    REPO_DELETING,
    REPO_NO_ACCESS,
    Registry,
    Repo,
    utcnow,
)
from indexer.source import remote_head

log = logging.getLogger(__name__)

HeadLookup = Callable[[Repo], str]  # the commit the tracked branch points at on GitHub


@dataclass(frozen=True)
class Drift:
    repo: str
    indexed: str
    head: str
    queued: bool
    error: str = ""


def git_heads(token: Callable[[], str]) -> HeadLookup:
    """Branch heads by ``git ls-remote`` against each repo's clone URL."""

    def head(repo: Repo) -> str:
        return remote_head(repo.clone_url, repo.tracked_branch, token=token())

    return head


def reconcile(engine: Engine, head_of: HeadLookup) -> list[Drift]:
    """Queue an index job for every tracked repo whose branch moved past its indexed commit."""
    drifts: list[Drift] = []
    for repo in Registry(engine).all():
        if repo.status in (REPO_ARCHIVED, REPO_DELETING, REPO_NO_ACCESS):
            continue
        try:
            head = head_of(repo)
        except CodeaskError as exc:
            log.warning("reconcile: cannot read the head of %s: %s", repo.full_name, exc)
            drifts.append(Drift(repo.full_name, repo.last_indexed_commit, "", False, str(exc)))
            continue
        if not head:
            message = f"branch {repo.tracked_branch} not found"
            drifts.append(Drift(repo.full_name, repo.last_indexed_commit, "", False, message))
            continue
        if head == repo.last_indexed_commit:
            continue
        busy = bool(jobs.pending(engine, repo.full_name))
        if not busy:
            jobs.enqueue(engine, repo.full_name, KIND_INDEX, commit=head, reason="reconcile")
        _note_head(engine, repo.full_name, head)
        drifts.append(Drift(repo.full_name, repo.last_indexed_commit, head, not busy))
    return drifts


def _note_head(engine: Engine, full_name: str, head: str) -> None:
    with write_session(engine) as s:
        repo = s.exec(select(Repo).where(Repo.full_name == full_name)).first()
        if repo is not None and repo.head_commit != head:
            repo.head_commit = head
            repo.commits_behind = None  # ls-remote cannot count them
            repo.updated_at = utcnow()
            s.add(repo)
            s.commit()
