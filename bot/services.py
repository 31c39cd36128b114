"""The long-lived objects of ``codeask serve`` / ``worker`` / admin commands, built lazily.

One ``Services`` per process. Anything that talks to GitHub or the stores is opened on
first use, so ``codeask repo list`` does not load an embedding model and ``/healthz``
answers before the search store is reachable.
"""

from __future__ import annotations

import threading
from functools import cached_property
from typing import TYPE_CHECKING

from sqlalchemy.engine import Engine

from acl.settings import AclSettings
from bot.settings import BotSettings
from indexer.errors import ConfigError
from indexer.jobs.registry import Registry, open_engine
from indexer.settings import IndexerSettings
from indexer.stores.contract import SearchBackend

if TYPE_CHECKING:
    from acl.github import GitHubClient
    from acl.store import AclStore
    from bot.chat.commands import CommandContext, Commands, Invoker


class Services:
    def __init__(
        self,
        bot: BotSettings | None = None,
        acl: AclSettings | None = None,
        indexer: IndexerSettings | None = None,
    ) -> None:
        self.bot = bot or BotSettings()
        self.acl = acl or AclSettings()
        self.indexer = indexer or IndexerSettings()
        self._lock = threading.Lock()

    @cached_property
    def engine(self) -> Engine:
        return open_engine(self.acl.database_url)

    @cached_property
    def registry(self) -> Registry:
        return Registry(self.engine)

    @cached_property
    def store(self) -> SearchBackend:
        from indexer.stores import open_store

        return open_store(self.indexer)

    @cached_property
    def acl_store(self) -> AclStore:
        from acl.store import AclStore

        return AclStore(self.acl.database_url)

    @cached_property
    def github(self) -> GitHubClient:
        """The GitHub API client; ConfigError when no credentials are configured."""
        from acl.github import GitHubClient

        return GitHubClient.from_settings(self.acl)

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

    def command_context(self) -> CommandContext:
        from bot.chat.commands import CommandContext, parse_admins

        return CommandContext(
            registry=self.registry,
            github=lambda: self.github,
            access=lambda: self.acl_store,
            delete_chunks=lambda repo: self.store.delete_repo(repo),
            clone_url=self.clone_url,
            git_token=self.git_token,
            admins=parse_admins(self.bot.admins),
            link_url=self._link_url if self.acl.github_oauth_client_id else None,
            link_confirm=self._link_confirm if self.acl.github_oauth_client_id else None,
        )

    def commands(self) -> Commands:
        from bot.chat.commands import Commands

        return Commands(self.command_context())

    def _link_url(self, invoker: Invoker) -> str:
        from acl.linking import OAuthLinker
        from acl.permissions import Principal

        linker = OAuthLinker(self.acl, self.acl_store)
        return linker.start(Principal(invoker.platform, invoker.user_id))

    def _link_confirm(self, invoker: Invoker, code: str) -> str:
        from acl.linking import OAuthLinker
        from acl.permissions import Principal

        linker = OAuthLinker(self.acl, self.acl_store)
        return linker.confirm(Principal(invoker.platform, invoker.user_id), code).github_login

    def close(self) -> None:
        for name in ("store", "acl_store", "github"):
            obj = self.__dict__.pop(name, None)
            if obj is not None:
                obj.close()
        engine = self.__dict__.pop("engine", None)
        if engine is not None:
            engine.dispose()
