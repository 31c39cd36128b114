"""The write side: registry, job queue, worker, reconcile and the indexing run."""

from __future__ import annotations

from indexer.jobs.indexing import IndexReport, ProgressFn, config_version, index_repository
from indexer.jobs.reconcile import git_heads, reconcile
from indexer.jobs.registry import (
    KIND_DELETE,
    KIND_FULL,
    KIND_INDEX,
    QUEUED,
    REPO_ARCHIVED,
    REPO_DELETING,
    REPO_ERROR,
    REPO_NO_ACCESS,
    REPO_PENDING,
    REPO_READY,
    Registry,
    Repo,
    WebhookDelivery,
    age_text,
    check_repo_name,
    utcnow,
)
from indexer.jobs.worker import Worker, WorkerConfig

__all__ = [
    "KIND_DELETE",
    "KIND_FULL",
    "KIND_INDEX",
    "QUEUED",
    "REPO_ARCHIVED",
    "REPO_DELETING",
    "REPO_ERROR",
    "REPO_NO_ACCESS",
    "REPO_PENDING",
    "REPO_READY",
    "IndexReport",
    "ProgressFn",
    "Registry",
    "Repo",
    "WebhookDelivery",
    "Worker",
    "WorkerConfig",
    "age_text",
    "check_repo_name",
    "config_version",
    "git_heads",
    "index_repository",
    "reconcile",
    "utcnow",
]
