"""Admin and user commands, written once for Slack, Teams and the CLI.

An adapter turns its platform event into an :class:`Invoker` and the command text, calls
:meth:`Commands.run` (blocking: from async code use ``await asyncio.to_thread(...)``),
and renders the :class:`CommandResult`: ``lines`` as text, ``rows`` as a table when the
platform has one, privately when ``ephemeral``. Errors come back as a result with
``error=True`` and a message the user can act on, never as an exception.
"""

from __future__ import annotations

import logging
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from bot.answer import check_name
from bot.chat.repositories import ADDED_CLI, AdminRepo, admin_repos
from indexer.errors import (
    AccessDenied,
    CodeaskError,
    ConfigError,
    InvalidInput,
    UpstreamUnavailable,
)
from indexer.jobs import (
    KIND_DELETE,
    KIND_FULL,
    KIND_INDEX,
    REPO_DELETING,
    REPO_PENDING,
    Registry,
    Repo,
    age_text,
    check_repo_name,
)
from indexer.jobs import queue as jobs
from indexer.models import RepoState
from indexer.source import remote_head

if TYPE_CHECKING:
    from bot.answer import NamePlace
    from bot.services import Services

log = logging.getLogger(__name__)

# (usage, what it does, admins only): each platform shows these in its own syntax.
HELP: tuple[tuple[str, str, bool], ...] = (
    ("help", "this list", False),
    ("whoami", "your GitHub link and role", False),
    ("link", "link your GitHub account (to read private repos)", False),
    ("link confirm CODE", "finish it with the code the sign-in page showed", False),
    ("unlink", "remove that link", False),
    ("defs NAME", "where NAME is defined (repositories you may read here)", False),
    ("refs NAME", "where NAME is used: calls, types, imports, literals", False),
    (
        "repo add owner/name [--branch B] [--include GLOB]... [--exclude GLOB]...",
        "register a repository and index it",
        True,
    ),
    ("repo list", "registered and CLI-indexed repositories, freshness", True),
    ("repo remove owner/name", "stop tracking and delete its index", True),
    ("repo reindex owner/name", "re-index every file", True),
    (
        "channel grant owner/name [--channel C]",
        "everyone in this channel may see answers from it",
        True,
    ),
    ("channel revoke owner/name [--channel C]", "undo a grant", True),
    ("status [owner/name]", "freshness, jobs and recent GitHub App changes", True),
)


def help_result(admin: bool) -> CommandResult:
    """``help``: ``rows`` (command, does, admin) for chat, ``lines`` for a terminal."""
    entries = [e for e in HELP if admin or not e[2]]
    rows = [{"command": c, "does": d, "admin": "yes" if a else ""} for c, d, a in entries]
    lines = ["Commands:"]
    for command, does, only_admins in entries:
        if only_admins and not lines[-1].startswith("Admin"):
            lines.append("Admin commands:")
        lines.append(f"  {command:<38} {does}")
    return CommandResult(lines, rows=rows)


@dataclass(frozen=True)
class Invoker:
    """Who runs a command, and where.

    ``user_id`` is the platform's own id (Slack ``TEAM:USER``, Teams AAD object id, the
    CLI's login); ``channel_id`` is None in a direct message or the terminal.
    """

    platform: str  # slack | teams | cli
    user_id: str
    channel_id: str | None = None

    @property
    def qualified_id(self) -> str:
        return f"{self.platform}:{self.user_id}"


@dataclass
class CommandResult:
    lines: list[str]
    rows: list[dict[str, str]] = field(default_factory=list)  # same keys in every row
    ephemeral: bool = True  # only the invoker should see it
    error: bool = False

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


class RepoInfoLike(Protocol):
    @property
    def full_name(self) -> str: ...
    @property
    def id(self) -> int: ...
    @property
    def visibility(self) -> str: ...
    @property
    def default_branch(self) -> str: ...


class GitHubLookup(Protocol):
    def repository(self, full_name: str) -> RepoInfoLike | None: ...


class AccessStore(Protocol):
    """The parts of ``acl.store.AclStore`` that commands use."""

    def grant(self, platform: str, channel_id: str, repo: str, granted_by: str = "") -> None: ...

    def revoke_grant(self, platform: str, channel_id: str, repo: str) -> bool: ...

    def identity(self, platform: str, chat_user_id: str) -> Any: ...

    def unlink(self, platform: str, chat_user_id: str) -> bool: ...

    def set_repo_override(self, repo: str, visibility: str, reason: str = "") -> None: ...


@dataclass
class CommandContext:
    """Everything commands need; :func:`command_context` builds it from the services."""

    registry: Registry
    github: Callable[[], GitHubLookup]  # lazy: only repo add needs GitHub
    access: Callable[[], AccessStore]
    delete_chunks: Callable[[str], None]  # store.delete_repo
    # store.repo_states: what search holds, including repositories `codeask index` wrote
    indexed: Callable[[], list[RepoState]]
    clone_url: Callable[[str], str]
    git_token: Callable[[], str]
    admins: frozenset[str]  # "slack:T1:U1", "teams:<id>", "cli:*"
    link_url: Callable[[Invoker], str] | None = None  # OAuth start URL
    # Confirms a finished GitHub sign-in with the code its page showed; the GitHub login.
    link_confirm: Callable[[Invoker, str], str] | None = None
    # defs / refs: (invoker, "defs" | "refs", name) -> the places, found only in the
    # repositories the invoker may see answers from where the command was run.
    find_names: Callable[[Invoker, str, str], list[NamePlace]] | None = None
    web_url: str = "https://github.com"


def parse_admins(*values: str | list[str]) -> frozenset[str]:
    ids: set[str] = set()
    for value in values:
        items = value.split(",") if isinstance(value, str) else value
        ids.update(i.strip() for i in items if i.strip())
    return frozenset(ids)


def is_admin(invoker: Invoker, admins: frozenset[str]) -> bool:
    return invoker.qualified_id in admins or f"{invoker.platform}:*" in admins


class Commands:
    def __init__(self, ctx: CommandContext) -> None:
        self.ctx = ctx

    def run(self, invoker: Invoker, text: str) -> CommandResult:
        """Parse and execute one command line."""
        try:
            words = shlex.split(text.strip())
        except ValueError:
            return _fail("Unbalanced quotes in the command.")
        if not words or words[0] in ("help", "--help", "-h"):
            return help_result(is_admin(invoker, self.ctx.admins))
        try:
            return self._dispatch(invoker, words)
        except CodeaskError as exc:
            return _fail(str(exc))
        except Exception:
            log.exception("command %r by %s failed", words[:2], invoker.qualified_id)
            return _fail("Something went wrong running that command; the error was logged.")

    def _dispatch(self, invoker: Invoker, words: list[str]) -> CommandResult:
        head, args = words[0].lower(), words[1:]
        sub = args[0].lower() if args else ""
        user_commands = {"whoami": self.whoami, "unlink": self.unlink}
        if head in user_commands:
            return user_commands[head](invoker)
        if head == "link":
            return self.link(invoker, args)
        if head in ("defs", "refs"):
            return self.names(invoker, head, args)
        admin_commands: dict[tuple[str, str], Callable[[Invoker, list[str]], CommandResult]] = {
            ("repo", "add"): self.repo_add,
            ("repo", "list"): self.repo_list,
            ("repo", "remove"): self.repo_remove,
            ("repo", "reindex"): self.repo_reindex,
            ("channel", "grant"): self.channel_grant,
            ("channel", "revoke"): self.channel_revoke,
        }
        if head == "status":
            return self._admin(invoker, self.status, args)
        if (head, sub) in admin_commands:
            return self._admin(invoker, admin_commands[(head, sub)], args[1:])
        raise InvalidInput(f"Unknown command {' '.join(words[:2])!r}. Try `help`.")

    def _admin(
        self, invoker: Invoker, fn: Callable[[Invoker, list[str]], CommandResult], args: list[str]
    ) -> CommandResult:
        if not is_admin(invoker, self.ctx.admins):
            raise AccessDenied("Only codeask admins can run that command (see CODEASK_ADMINS).")
        return fn(invoker, args)

    # --- repositories ---------------------------------------------------------------

    def repo_add(self, invoker: Invoker, args: list[str]) -> CommandResult:
        opts = _options(args, single={"--branch"}, multi={"--include", "--exclude"})
        name = check_repo_name(_one(opts.positional, "repo add owner/name"))
        info = self.ctx.github().repository(name)
        if info is None:
            raise InvalidInput(
                f"GitHub has no repository {name}, or the codeask GitHub App cannot read it."
            )
        branch = opts.single.get("--branch") or info.default_branch
        url = self.ctx.clone_url(info.full_name)
        if not remote_head(url, branch, token=self.ctx.git_token()):
            raise InvalidInput(f"{info.full_name} has no branch {branch!r}.")
        registry = self.ctx.registry
        repo = registry.get(info.full_name) or Repo(full_name=info.full_name)
        existed = repo.id is not None and repo.status != REPO_DELETING
        if repo.status == REPO_DELETING:
            jobs.cancel_queued(registry.engine, repo.full_name)  # do not delete what we re-add
            repo.status = REPO_PENDING
        repo.github_id, repo.visibility = info.id, info.visibility
        repo.default_branch, repo.tracked_branch, repo.clone_url = info.default_branch, branch, url
        if "--include" in opts.multi or not existed:
            repo.include_globs = "\n".join(opts.multi.get("--include", []))
        if "--exclude" in opts.multi or not existed:
            repo.exclude_globs = "\n".join(opts.multi.get("--exclude", []))
        registry.save(repo)
        # GitHub just said what this name is: that replaces a "gone" left by a deletion or a
        # move of an earlier repository of the same name. Until the index has caught up,
        # the stricter of this and the indexed visibility applies.
        self.ctx.access().set_repo_override(repo.full_name, info.visibility, "repo add")
        jobs.enqueue(registry.engine, repo.full_name, KIND_INDEX, reason="register")
        registry.audit(invoker.qualified_id, "repo.add", repo.full_name, f"branch={branch}")
        verb = "Updated" if existed else "Registered"
        return CommandResult(
            [f"{verb} {repo.full_name} ({info.visibility}, branch {branch}); indexing is queued."]
        )

    def repo_list(self, invoker: Invoker, args: list[str]) -> CommandResult:
        repos, note = self._repos()
        if not repos:
            empty = "No repositories registered or indexed. Add one with `repo add owner/name`."
            return CommandResult([empty, *note])
        return CommandResult([r.line() for r in repos] + note, rows=[r.row() for r in repos])

    def repo_remove(self, invoker: Invoker, args: list[str]) -> CommandResult:
        repo = self._registered(_one(args, "repo remove owner/name"))
        engine = self.ctx.registry.engine
        repo.status = REPO_DELETING
        self.ctx.registry.save(repo)
        jobs.cancel_queued(engine, repo.full_name)
        # Gone from search now; the queued delete runs after any index still in flight and
        # clears what it writes, then drops the registry row and the worker's clone.
        self.ctx.delete_chunks(repo.full_name)
        jobs.enqueue(engine, repo.full_name, KIND_DELETE, reason="remove")
        self.ctx.registry.audit(invoker.qualified_id, "repo.remove", repo.full_name)
        return CommandResult([f"Removed {repo.full_name}; its code is no longer searchable."])

    def repo_reindex(self, invoker: Invoker, args: list[str]) -> CommandResult:
        repo = self._registered(_one(args, "repo reindex owner/name"))
        jobs.enqueue(self.ctx.registry.engine, repo.full_name, KIND_FULL, reason="reindex")
        self.ctx.registry.audit(invoker.qualified_id, "repo.reindex", repo.full_name)
        return CommandResult([f"Full re-index of {repo.full_name} queued."])

    def status(self, invoker: Invoker, args: list[str]) -> CommandResult:
        if args:
            return self._status_of(check_repo_name(_one(args, "status owner/name")))
        registry = self.ctx.registry
        repos, note = self._repos()
        waiting = jobs.pending(registry.engine)
        fresh = sum(1 for r in repos if r.up_to_date)
        cli = sum(1 for r in repos if not r.registered)
        untracked = f" ({cli} {ADDED_CLI}, not tracked)" if cli else ""
        lines = [
            f"{len(repos)} repositories{untracked}, {fresh} up to date, "
            f"{len(waiting)} jobs queued or running."
        ]
        lines += [r.line() for r in repos] + note
        for event in registry.events(limit=5):
            lines.append(f"GitHub App: {event.repo} {event.detail} ({age_text(event.created_at)})")
        return CommandResult(lines, rows=[r.row() for r in repos])

    def _status_of(self, name: str) -> CommandResult:
        cli = self._indexed_only(name)
        if cli is not None:
            row = cli.row()
            lines = [
                f"{name}: {row['status']}, {cli.visibility}, {ADDED_CLI} (not tracked)",
                f"  indexed {row['commit'] or 'from a folder, no commit'} ({row['indexed']}), "
                f"{cli.chunk_count} chunks",
                f"  `codeask index` refreshes it; `repo add {name}` tracks its branch.",
            ]
            return CommandResult(lines, rows=[row])
        registry = self.ctx.registry
        repo = self._registered(name)
        row = admin_repos([repo], [])[0].row()
        lines = [
            f"{repo.full_name}: {row['status']}, {repo.visibility}, "
            f"branch {repo.tracked_branch}, {row['added']}",
            f"  indexed {row['commit'] or 'never'} ({row['indexed']}), {repo.chunk_count} chunks",
        ]
        if row["behind"]:
            lines.append(f"  {row['behind']}")
        if repo.last_error:
            lines.append(f"  last error: {repo.last_error}")
        for job in jobs.pending(registry.engine, repo.full_name):
            lines.append(f"  job {job.id}: {job.kind} {job.status} (attempt {job.attempts})")
        for run in registry.runs(repo.full_name, limit=3):
            lines.append(
                f"  run {run.commit[:12] or '?'}: {run.outcome}, {run.changed_files} files "
                f"changed, {run.chunks} chunks, {run.seconds:.1f} s"
            )
        return CommandResult(lines, rows=[row])

    # --- channels -------------------------------------------------------------------

    def channel_grant(self, invoker: Invoker, args: list[str]) -> CommandResult:
        repo, channel = self._channel_args(invoker, args, "channel grant owner/name")
        self.ctx.access().grant(invoker.platform, channel, repo, granted_by=invoker.qualified_id)
        self.ctx.registry.audit(invoker.qualified_id, "channel.grant", repo, f"channel={channel}")
        return CommandResult(
            [f"Everyone in this channel may now see answers from {repo}."], ephemeral=False
        )

    def channel_revoke(self, invoker: Invoker, args: list[str]) -> CommandResult:
        repo, channel = self._channel_args(invoker, args, "channel revoke owner/name")
        removed = self.ctx.access().revoke_grant(invoker.platform, channel, repo)
        self.ctx.registry.audit(invoker.qualified_id, "channel.revoke", repo, f"channel={channel}")
        if not removed:
            return CommandResult([f"{repo} was not granted to this channel."])
        return CommandResult([f"Answers in this channel no longer use {repo}."], ephemeral=False)

    def _channel_args(self, invoker: Invoker, args: list[str], usage: str) -> tuple[str, str]:
        opts = _options(args, single={"--channel"}, multi=set())
        repo = self._registered(_one(opts.positional, usage)).full_name
        channel = opts.single.get("--channel") or invoker.channel_id
        if not channel:
            raise InvalidInput("Run this in the channel itself, or pass --channel CHANNEL_ID.")
        return repo, channel

    # --- identity -------------------------------------------------------------------

    def whoami(self, invoker: Invoker) -> CommandResult:
        link = self.ctx.access().identity(invoker.platform, invoker.user_id)
        role = "admin" if is_admin(invoker, self.ctx.admins) else "user"
        if link is None:
            return CommandResult(
                [
                    f"You are {invoker.qualified_id} ({role}), not linked to GitHub: you can read "
                    "public repositories only. Use `link` to connect your account."
                ]
            )
        return CommandResult(
            [f"You are {invoker.qualified_id} ({role}), linked to GitHub @{link.github_login}."]
        )

    def link(self, invoker: Invoker, args: list[str]) -> CommandResult:
        if self.ctx.link_url is None or self.ctx.link_confirm is None:
            raise ConfigError("Linking is not configured on this codeask server.")
        if args and args[0].lower() == "confirm":
            code = "".join(args[1:])
            if not code:
                raise InvalidInput(
                    "Usage: `link confirm CODE`, with the code the sign-in page showed."
                )
            login = self.ctx.link_confirm(invoker, code)
            self.ctx.registry.audit(invoker.qualified_id, "link", f"github:{login}")
            return CommandResult([f"Linked to GitHub @{login}."])
        if args:
            raise InvalidInput("Usage: `link`, then `link confirm CODE`.")
        url = self.ctx.link_url(invoker)
        return CommandResult(
            [
                f"Open this link to sign in to GitHub (it works once): {url}",
                "The page then shows a code: send it back here as `link confirm CODE` to "
                "finish. Never send a code that someone else's link gave you.",
            ]
        )

    def names(self, invoker: Invoker, kind: str, args: list[str]) -> CommandResult:
        if len(args) != 1:
            raise InvalidInput(f"Usage: `{kind} NAME` (one name, e.g. `{kind} parse_url`).")
        if self.ctx.find_names is None:
            raise ConfigError("Looking up names is not available here.")
        name = check_name(args[0])
        places = self.ctx.find_names(invoker, kind, name)
        what = "Definitions" if kind == "defs" else "References"
        if not places:
            where = "here" if invoker.channel_id else "in the repositories you may read"
            return CommandResult([f"No {what.lower()} of `{name}` {where}."])
        lines = [f"{what} of `{name}`:"]
        lines += [f"• {p.label}  {p.chunk.symbol}  {p.link(self.ctx.web_url)}" for p in places]
        return CommandResult(lines)

    def unlink(self, invoker: Invoker) -> CommandResult:
        removed = self.ctx.access().unlink(invoker.platform, invoker.user_id)
        self.ctx.registry.audit(invoker.qualified_id, "unlink", invoker.qualified_id)
        return CommandResult(
            ["Your GitHub link was removed." if removed else "You were not linked."]
        )

    def _registered(self, name: str) -> Repo:
        repo = self.ctx.registry.get(check_repo_name(name))
        if repo is None or repo.status == REPO_DELETING:
            if repo is None and self._indexed_only(name) is not None:
                raise InvalidInput(
                    f"{name} was {ADDED_CLI}, not registered: `repo add {name}` tracks it."
                )
            raise InvalidInput(f"{name} is not registered. See `repo list`.")
        return repo

    def _repos(self) -> tuple[list[AdminRepo], list[str]]:
        """Registered and CLI-indexed repositories, and a note when the store is down."""
        try:
            indexed = self.ctx.indexed()
        except UpstreamUnavailable as exc:
            log.warning("admin view without the search store: %s", exc)
            note = "The search store is unreachable: repositories indexed from the command "
            note += "line are not listed."
            return admin_repos(self.ctx.registry.all(), []), [note]
        return admin_repos(self.ctx.registry.all(), indexed), []

    def _indexed_only(self, name: str) -> AdminRepo | None:
        """``name`` when only the search store knows it (written by `codeask index`)."""
        if self.ctx.registry.get(name) is not None:
            return None
        try:
            states = [s for s in self.ctx.indexed() if s.repo == name]
        except UpstreamUnavailable as exc:
            log.warning("admin view without the search store: %s", exc)
            return None
        return next(iter(admin_repos([], states)), None)


@dataclass
class _Opts:
    positional: list[str]
    single: dict[str, str]
    multi: dict[str, list[str]]


def _options(args: list[str], single: set[str], multi: set[str]) -> _Opts:
    opts = _Opts([], {}, {})
    it = iter(args)
    for word in it:
        key, eq, inline = word.partition("=")
        if key in single | multi:
            value = inline if eq else next(it, None)
            if value is None:
                raise InvalidInput(f"{key} needs a value.")
            if key in single:
                opts.single[key] = value
            else:
                opts.multi.setdefault(key, []).append(value)
        elif word.startswith("--"):
            raise InvalidInput(f"Unknown option {key}. Try `help`.")
        else:
            opts.positional.append(word)
    return opts


def _one(values: list[str], usage: str) -> str:
    if len(values) != 1:
        raise InvalidInput(f"Usage: {usage}")
    return values[0]


def _fail(message: str) -> CommandResult:
    return CommandResult([message], error=True)


def command_context(services: Services) -> CommandContext:
    """The commands' view of the process's parts: registry, GitHub, ACL store, chunks."""
    linking = bool(services.acl.github_oauth_client_id)

    def link_url(invoker: Invoker) -> str:
        from acl import OAuthLinker, Principal

        linker = OAuthLinker(services.acl, services.acl_store)
        return linker.start(Principal(invoker.platform, invoker.user_id))

    def link_confirm(invoker: Invoker, code: str) -> str:
        from acl import OAuthLinker, Principal

        linker = OAuthLinker(services.acl, services.acl_store)
        return linker.confirm(Principal(invoker.platform, invoker.user_id), code).github_login

    def find_names(invoker: Invoker, kind: str, name: str) -> list[NamePlace]:
        from acl import Place, Principal
        from bot.answer import look_up, registered_repos

        place = Place("channel", invoker.channel_id) if invoker.channel_id else Place("dm")
        if invoker.platform == "cli":
            place = Place("cli")
        registered = registered_repos(services.store)
        access = services.resolver.allowed_repos(
            Principal(invoker.platform, invoker.user_id), place, registered
        )
        return look_up(services.store, kind, name, access.repos)  # type: ignore[arg-type]

    return CommandContext(
        registry=services.registry,
        github=lambda: services.github,
        access=lambda: services.acl_store,
        delete_chunks=lambda repo: services.store.delete_repo(repo),
        indexed=lambda: services.store.repo_states(),
        clone_url=services.clone_url,
        git_token=services.git_token,
        admins=parse_admins(services.bot.admins),
        link_url=link_url if linking else None,
        link_confirm=link_confirm if linking else None,
        find_names=find_names,
        web_url=services.acl.github_web_url,
    )


def commands_for(services: Services) -> Commands:
    """The admin commands over ``services`` (chat, CLI and tests share them)."""
    return Commands(command_context(services))
