"""The composition root: one settings object per package in, every long-lived part out.

``codeask serve``, ``worker``, every CLI command, eval and the benches build one
``Services`` per process and take what they need from it; no library reads settings
itself. Anything that talks to GitHub or the stores, or loads a model, is opened on first
use, so ``codeask repo list`` does not load an embedding model and ``/healthz`` answers
before the search store is reachable.
"""

from __future__ import annotations

import threading
from functools import cached_property
from typing import TYPE_CHECKING

from sqlalchemy.engine import Engine

from acl import AclSettings
from bot.settings import BotSettings
from indexer.db import open_database
from indexer.errors import ConfigError
from indexer.jobs import Registry
from indexer.settings import IndexerSettings
from indexer.stores import SearchBackend

if TYPE_CHECKING:
    from acl import AccessResolver, AclStore, GitHubClient
    from bot.answer import AnswerPipeline, Asker, Reranker
    from bot.metrics import Metrics
    from indexer.embedding import Embedder, SqliteEmbeddingCache
    from indexer.search import Searcher


class Services:
    def __init__(
        self,
        bot: BotSettings | None = None,
        acl: AclSettings | None = None,
        indexer: IndexerSettings | None = None,
        *,
        migrate: bool = True,
    ) -> None:
        self.bot = bot or BotSettings()
        self.acl = acl or AclSettings()
        self.indexer = indexer or IndexerSettings()
        # serve and worker pass False: they never migrate, they refuse an old database.
        self.migrate = migrate
        self._lock = threading.Lock()
        self._pipeline: AnswerPipeline | None = None

    @cached_property
    def engine(self) -> Engine:
        """The one metadata engine, at head (see indexer.db.open_database)."""
        return open_database(self.indexer.database_url, migrate_sqlite=self.migrate)

    @cached_property
    def registry(self) -> Registry:
        return Registry(self.engine)

    @cached_property
    def store(self) -> SearchBackend:
        from indexer.stores import open_store

        store = open_store(self.indexer)
        if hasattr(store, "on_error"):  # OpenSearch: its failed requests are counted
            store.on_error = lambda kind: self.metrics.upstream_error("opensearch", kind)
        return store

    @cached_property
    def embedder(self) -> Embedder:
        """The configured embedding model (loaded once per process and configuration)."""
        from indexer.embedding import open_embedder

        return open_embedder(self.indexer)

    @cached_property
    def embedding_cache(self) -> SqliteEmbeddingCache:
        from indexer.embedding import open_embedding_cache

        return open_embedding_cache(self.indexer)

    @cached_property
    def searcher(self) -> Searcher:
        from indexer.search import Searcher

        return Searcher(self.store, self.embedder, vectors=self.embedding_cache)

    @cached_property
    def reranker(self) -> Reranker | None:
        """The configured cross-encoder, else the trained one in the data dir, else None."""
        from bot.answer import load_reranker

        return load_reranker(self.bot, self.indexer.data_path, self.indexer.onnx_path)

    def pipeline(self) -> AnswerPipeline:
        """The production answer pipeline: search, reranker and the configured language model."""
        from bot.answer import AnswerPipeline

        with self._lock:
            if self._pipeline is None:
                self._pipeline = AnswerPipeline(self.searcher, self.bot, reranker=self.reranker)
            return self._pipeline

    @cached_property
    def metrics(self) -> Metrics:
        """This process's Prometheus metrics (its gauges read the metadata database)."""
        from bot.metrics import Metrics

        return Metrics(self.bot, lambda: self.engine)

    @property
    def observer(self) -> Metrics:
        """Where the Asker reports each question (bot.answer.asking.QuestionObserver)."""
        return self.metrics

    @cached_property
    def asker(self) -> Asker:
        """The one Asker of the process: every adapter and the CLI answer through it."""
        from bot.answer import Asker

        return Asker(self)

    @cached_property
    def acl_store(self) -> AclStore:
        from acl import AclStore

        return AclStore(self.engine)

    @cached_property
    def github(self) -> GitHubClient:
        """The GitHub API client; ConfigError when no credentials are configured."""
        from acl import GitHubClient

        return GitHubClient.from_settings(
            self.acl, on_error=lambda kind: self.metrics.upstream_error("github", kind)
        )

    @cached_property
    def resolver(self) -> AccessResolver:
        """(chat user, place) -> readable repositories; without GitHub: public ones only."""
        from acl import AccessResolver

        github = self.github if self.acl.github_configured else None
        return AccessResolver(self.acl_store, github, ttl_seconds=self.acl.permission_ttl_seconds)

    def git_token(self) -> str:
        """A token for git over HTTPS: the static token, or a fresh App installation token."""
        if self.acl.github_token and not self.acl.uses_app_auth:
            return self.acl.github_token
        if not self.acl.uses_app_auth:
            return ""  # no credentials: public repositories and local test servers
        with self._lock:
            client = self.github
        # The client caches the installation token and renews it before it expires.
        header = client._auth_header()
        return header.removeprefix("Bearer ")

    def clone_url(self, full_name: str) -> str:
        template = (
            self.bot.git_clone_url or f"{self.acl.github_web_url.rstrip('/')}/{{full_name}}.git"
        )
        if "{full_name}" not in template:
            raise ConfigError("CODEASK_GIT_CLONE_URL must contain {full_name}")
        return template.replace("{full_name}", full_name)

    def close(self) -> None:
        for name in ("store", "github"):
            obj = self.__dict__.pop(name, None)
            if obj is not None:
                obj.close()
        engine = self.__dict__.pop("engine", None)
        if engine is not None:
            engine.dispose()
