"""What a verified GitHub webhook means for the repository registry and the job queue.

Only metadata changes here; indexing itself is left to ``codeask worker``, so a webhook
is answered in milliseconds. ACL cache invalidation is ``acl.webhooks``' business.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from acl import previous_name
from indexer.db import write_session
from indexer.jobs import (
    KIND_DELETE,
    KIND_FULL,
    KIND_INDEX,
    REPO_ARCHIVED,
    REPO_DELETING,
    REPO_NO_ACCESS,
    REPO_READY,
    Registry,
    Repo,
    utcnow,
)
from indexer.jobs import queue as jobs

log = logging.getLogger(__name__)

CloneUrl = Callable[[str], str]  # owner/name → clone URL


@dataclass
class EventOutcome:
    """What one delivery did, returned as the webhook's JSON body."""

    event: str
    action: str = ""
    repo: str = ""
    queued: list[str] = field(default_factory=list)  # "kind repo" of each job queued
    notes: list[str] = field(default_factory=list)
    duplicate: bool = False

    def as_json(self) -> dict[str, Any]:
        return {
            "event": self.event,
            "action": self.action,
            "repo": self.repo,
            "queued": self.queued,
            "notes": self.notes,
            "duplicate": self.duplicate,
        }


def apply_event(
    engine: Engine, event: str, payload: Mapping[str, Any], clone_url: CloneUrl
) -> EventOutcome:
    """Update the registry for one verified delivery and queue the jobs it calls for."""
    outcome = EventOutcome(event=event, action=str(payload.get("action") or ""))
    repository = payload.get("repository")
    if isinstance(repository, dict):
        outcome.repo = str(repository.get("full_name") or "")
    if event == "ping":
        outcome.notes.append("pong")
    elif event == "push":
        _push(engine, payload, outcome)
    elif event == "repository":
        _repository(engine, payload, outcome, clone_url)
    elif event == "installation_repositories":
        _installation_repositories(engine, payload, outcome)
    else:
        outcome.notes.append("ignored")
    return outcome


def registered_name(engine: Engine, payload: Mapping[str, Any]) -> str | None:
    """The name the index uses for the payload's repository, found by its GitHub id (it can
    differ from GitHub's current name, e.g. after an organization rename)."""
    repository = payload.get("repository")
    if not isinstance(repository, dict) or not isinstance(repository.get("id"), int):
        return None
    with Session(engine) as s:
        repo = _find(s, repository, "")
        return repo.full_name if repo is not None else None


def _find(s: Session, repository: Mapping[str, Any], name: str) -> Repo | None:
    """The registered repo, by GitHub id first (it survives renames), then by name."""
    gid = repository.get("id")
    if isinstance(gid, int):
        repo = s.exec(select(Repo).where(Repo.github_id == gid)).first()
        if repo is not None:
            return repo
    return s.exec(select(Repo).where(Repo.full_name == name)).first() if name else None


def _push(engine: Engine, payload: Mapping[str, Any], out: EventOutcome) -> None:
    repository = payload.get("repository") or {}
    with write_session(engine) as s:
        repo = _find(s, repository, out.repo)
        if repo is None:
            out.notes.append("not registered")
            return
        if payload.get("ref") != f"refs/heads/{repo.tracked_branch}":
            out.notes.append(f"not the tracked branch {repo.tracked_branch}")
            return
        if payload.get("deleted") or repo.status in (REPO_DELETING, REPO_ARCHIVED, REPO_NO_ACCESS):
            out.notes.append("branch deleted" if payload.get("deleted") else f"repo {repo.status}")
            return
        after = str(payload.get("after") or "")
        commits = payload.get("commits")
        pushed = len(commits) if isinstance(commits, list) else None
        if repo.head_commit == str(payload.get("before") or "") and repo.commits_behind is not None:
            repo.commits_behind = repo.commits_behind + pushed if pushed is not None else None
        elif repo.last_indexed_commit == str(payload.get("before") or ""):
            repo.commits_behind = pushed
        else:
            repo.commits_behind = None
        repo.head_commit, repo.updated_at = after, utcnow()
        s.add(repo)
        s.commit()
        name = repo.full_name
    # History rewritten: re-index everything rather than trust what was derived from it.
    kind = KIND_FULL if payload.get("forced") else KIND_INDEX
    jobs.enqueue(engine, name, kind, commit=after, reason="push")
    out.queued.append(f"{kind} {name}")


def _repository(
    engine: Engine, payload: Mapping[str, Any], out: EventOutcome, clone_url: CloneUrl
) -> None:
    repository = payload.get("repository") or {}
    action = out.action
    old_name = previous_name(action, out.repo, payload) or ""
    with write_session(engine) as s:
        repo = _find(s, repository, old_name or out.repo)
        if repo is None:
            out.notes.append("not registered")
            return
        previous = repo.full_name
        follow_up: list[tuple[str, str]] = []  # (repo, kind) to queue after commit
        if action in ("renamed", "transferred") and out.repo and out.repo != previous:
            # Chunks carry the repo name; the old name's chunks go, the new name is indexed.
            repo.full_name, repo.clone_url = out.repo, clone_url(out.repo)
            follow_up += [(previous, KIND_DELETE), (out.repo, KIND_FULL)]
            out.notes.append(f"renamed from {previous}")
        elif action in ("privatized", "publicized", "edited"):
            visibility = repository.get("visibility") or (
                "private" if action == "privatized" else "public" if action == "publicized" else ""
            )
            if visibility and visibility != repo.visibility:
                repo.visibility = str(visibility)
                follow_up.append((repo.full_name, KIND_FULL))  # every chunk carries visibility
                out.notes.append(f"visibility {visibility}")
        elif action == "deleted":
            repo.status = REPO_DELETING
            follow_up.append((repo.full_name, KIND_DELETE))
        elif action == "archived":
            repo.status = REPO_ARCHIVED
            out.notes.append("archived: kept searchable, no longer tracked")
        elif action == "unarchived":
            repo.status = REPO_READY
            follow_up.append((repo.full_name, KIND_INDEX))
        else:
            out.notes.append("no registry change")
        repo.updated_at = utcnow()
        s.add(repo)
        s.commit()
    for name, kind in follow_up:
        if kind == KIND_DELETE:
            jobs.cancel_queued(engine, name)
        jobs.enqueue(engine, name, kind, reason=f"repository {action}")
        out.queued.append(f"{kind} {name}")


def _installation_repositories(
    engine: Engine, payload: Mapping[str, Any], out: EventOutcome
) -> None:
    registry = Registry(engine)
    for item in payload.get("repositories_added") or []:
        name = str(item.get("full_name") or "")
        registry.record_event("app_added", name, "added to the GitHub App installation")
        out.notes.append(f"added {name}")
    for item in payload.get("repositories_removed") or []:
        name = str(item.get("full_name") or "")
        registry.record_event("app_removed", name, "removed from the GitHub App installation")
        out.notes.append(f"removed {name}")
        with write_session(engine) as s:
            repo = s.exec(select(Repo).where(Repo.full_name == name)).first()
            if repo is not None:
                # We can no longer fetch it; what is indexed stays, and admins see why.
                repo.status = REPO_NO_ACCESS
                repo.last_error = "The GitHub App lost access to this repository."
                repo.updated_at = utcnow()
                s.add(repo)
                s.commit()
    log.info("installation_repositories: %s", "; ".join(out.notes) or "no change")
