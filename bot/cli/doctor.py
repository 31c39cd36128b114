"""``codeask doctor``: every configured part checked end to end, one line each.

Each check is ok, warning (works, but something a user would notice: a missing optional
part, an index that the next run re-reads) or failed (what a question or a run would
trip on), with what to do. Nothing secret is printed: URLs lose their passwords and
tokens are never echoed. Checks only read, except that the search store's schema is
checked the way ``serve`` does at start.
"""

from __future__ import annotations

import functools
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from bot.services import Services
from indexer.errors import CodeaskError

Status = Literal["ok", "warning", "failed", "skipped"]
LOW_DISK_BYTES = 2 * 1024**3
NO_DISK_BYTES = 200 * 1024**2
SLACK_SCOPES = (
    "app_mentions:read",
    "chat:write",
    "commands",
    "im:history",
    "im:read",
    "im:write",
    "channels:history",
    "groups:history",
)


@dataclass(frozen=True)
class Check:
    name: str
    status: Status
    detail: str


def run_checks(services: Services) -> list[Check]:
    """Every check, in the order a question needs the parts."""
    found: list[Check] = []
    for name, check in (
        ("database", _database),
        ("search store", _store),
        ("embedding model", _embedder),
        ("reranker", _reranker),
        ("language model", _language_model),
        ("GitHub", _github),
        ("GitHub sign-in", _oauth),
        ("GitHub webhooks", _webhooks),
        ("Slack", _slack),
        ("Teams", _teams),
        ("disk", _disk),
    ):
        found.append(_guarded(name, functools.partial(check, services)))
    return found


def _guarded(name: str, check: Callable[[], tuple[Status, str]]) -> Check:
    started = time.perf_counter()
    try:
        status, detail = check()
    except CodeaskError as exc:
        status, detail = "failed", str(exc)
    except Exception as exc:  # a check must report, never crash the command
        status, detail = "failed", f"{type(exc).__name__}: {exc}"
    took = time.perf_counter() - started
    suffix = f" ({took:.1f} s)" if took >= 1 else ""
    return Check(name, status, detail + suffix)


# --- the checks ----------------------------------------------------------------------------


def _database(services: Services) -> tuple[Status, str]:
    from sqlalchemy.engine import make_url

    from indexer.db import UPGRADE_HINT, open_engine, schema_state

    url = services.indexer.database_url
    shown = make_url(url).render_as_string(hide_password=True)
    engine = open_engine(url)
    try:
        state = schema_state(engine)
    finally:
        engine.dispose()
    if state.at_head:
        return "ok", f"{shown}: at {state.head} (head)"
    where = f"at {state.current}" if state.current else "no schema yet"
    if engine.dialect.name == "sqlite":
        return "warning", f"{shown}: {where}; the next codeask command migrates it"
    return "failed", f"{shown}: {where}, head is {state.head}; {UPGRADE_HINT}"


def _store(services: Services) -> tuple[Status, str]:
    settings = services.indexer
    where = (
        f"OpenSearch {settings.opensearch_url} (alias {settings.opensearch_index})"
        if settings.store == "opensearch"
        else f"SQLite {settings.sqlite_path}"
    )
    states = services.store.repo_states()
    if not states:
        return "warning", f"{where}: reachable, no repository indexed yet (codeask index PATH)"
    return "ok", f"{where}: {len(states)} repositories indexed"


def _embedder(services: Services) -> tuple[Status, str]:
    from indexer.jobs import config_version

    embedder = services.embedder
    described = f"{embedder.name} ({embedder.dimension} dimensions)"
    states = services.store.repo_states()
    if not states:
        return "ok", f"{described} loads"
    services.store.ensure_schema(embedder.dimension)  # refuses another dimension
    expected = config_version(embedder)
    model = expected.rsplit("/", 1)[-1]
    other_model = sorted(s.repo for s in states if not s.config_version.endswith(f"/{model}"))
    if other_model:
        return "failed", (
            f"{described} loads, but {len(other_model)} repositories were indexed with another "
            f"model ({', '.join(other_model[:3])}): questions would compare vectors of two "
            "models. Re-index them (`codeask index --full`, or `repo reindex` in chat)."
        )
    stale = [s.repo for s in states if s.config_version != expected]
    if stale:
        return "warning", (
            f"{described}; {len(stale)} repositories were indexed by an older chunker or names "
            "index and are read again on their next index run"
        )
    return "ok", f"{described}, the model of all {len(states)} indexed repositories"


def _reranker(services: Services) -> tuple[Status, str]:
    reranker = services.reranker
    if reranker is None:
        return "ok", "none configured (the fused order is kept)"
    return "ok", f"{reranker.name} loads"


def _language_model(services: Services) -> tuple[Status, str]:
    settings = services.bot
    if not settings.llm_model:
        return "skipped", "no CODEASK_LLM_MODEL: answers are the best places found, with citations"
    from bot.answer.llm import LiteLLMClient, ToolsRefused
    from bot.answer.tools import TOOL_SPECS

    probe = settings.model_copy(
        update={
            "llm_max_tokens": 16,
            "llm_retries": 0,
            "llm_timeout": min(settings.llm_timeout, 20),
        }
    )
    client = LiteLLMClient(probe)
    support = client.tool_support()
    mode = settings.answer_mode
    if mode == "single":
        client.complete([{"role": "user", "content": "Reply with the word OK."}])
        return "ok", f"{client.name} answers (single-shot mode)"
    try:
        client.chat(
            [{"role": "user", "content": "Reply with the word OK."}], TOOL_SPECS, tool_choice="none"
        )
    except ToolsRefused as exc:
        if mode == "agent":
            return "failed", str(exc)
        return "warning", f"{client.name} answers but refuses tools: auto mode uses single-shot"
    if support == "no":
        status: Status = "failed" if mode == "agent" else "ok"
        return status, f"{client.name} answers; LiteLLM says it cannot call tools (single-shot)"
    return "ok", f"{client.name} answers and accepts the search tools ({mode} mode)"


def _github(services: Services) -> tuple[Status, str]:
    acl = services.acl
    if not acl.github_configured:
        return "warning", (
            "not configured: only public repositories can be answered from, and `repo add` "
            "cannot check repositories (set CODEASK_GITHUB_TOKEN or the App settings)"
        )
    return "ok", services.github.verify()


def _oauth(services: Services) -> tuple[Status, str]:
    acl = services.acl
    parts = {
        "CODEASK_GITHUB_OAUTH_CLIENT_ID": acl.github_oauth_client_id,
        "CODEASK_GITHUB_OAUTH_CLIENT_SECRET": acl.github_oauth_client_secret,
        "CODEASK_GITHUB_OAUTH_REDIRECT_URL": acl.github_oauth_redirect_url,
    }
    missing = [k for k, v in parts.items() if not v]
    if len(missing) == len(parts):
        return "warning", "not configured: people cannot `link` a GitHub account"
    if missing:
        return "failed", f"incomplete: set {', '.join(missing)}"
    return "ok", f"client {acl.github_oauth_client_id}, redirect {acl.github_oauth_redirect_url}"


def _webhooks(services: Services) -> tuple[Status, str]:
    if not services.acl.github_webhook_secret:
        return "warning", (
            "no CODEASK_GITHUB_WEBHOOK_SECRET: pushes and permission changes are refused, so "
            "indexes follow the reconcile interval only"
        )
    return "ok", "secret set (deliveries are verified)"


def _slack(services: Services) -> tuple[Status, str]:
    settings = services.bot
    if not settings.slack_bot_token:
        return "skipped", "not configured (CODEASK_SLACK_BOT_TOKEN)"
    from slack_sdk import WebClient
    from slack_sdk.errors import SlackApiError

    if not settings.slack_signing_secret and not settings.slack_socket_mode:
        return "failed", "CODEASK_SLACK_SIGNING_SECRET is not set: every event would be refused"
    client = WebClient(token=settings.slack_bot_token, base_url=settings.slack_api_url, timeout=10)
    try:
        response = client.auth_test()
    except SlackApiError as exc:
        error = exc.response.get("error", "unknown")
        return "failed", f"Slack refused the bot token ({error}): check CODEASK_SLACK_BOT_TOKEN"
    except Exception as exc:
        return "failed", f"cannot reach Slack at {settings.slack_api_url}: {type(exc).__name__}"
    granted = {s.strip() for s in str(response.headers.get("x-oauth-scopes", "")).split(",")}
    missing = [s for s in SLACK_SCOPES if s not in granted] if granted - {""} else []
    who = f"{response.get('user', '?')} in {response.get('team', '?')}"
    if missing:
        return "warning", f"{who}; missing scopes {', '.join(missing)} (deploy/slack-manifest.yml)"
    return "ok", who


def _teams(services: Services) -> tuple[Status, str]:
    settings = services.bot
    if not settings.teams_app_id:
        return "skipped", "not configured (CODEASK_TEAMS_APP_ID)"
    if not settings.teams_app_password:
        return "failed", "CODEASK_TEAMS_APP_PASSWORD is not set"
    from bot.teams.auth import TOKEN_PATH, TokenClient, login_url

    tokens = TokenClient(
        settings.teams_app_id, settings.teams_app_password, login_url(settings) + TOKEN_PATH
    )
    tokens.token(settings.teams_oauth_scope)
    return "ok", f"app {settings.teams_app_id} obtains a Bot Framework token"


def _disk(services: Services) -> tuple[Status, str]:
    data = services.indexer.data_path
    data.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(data).free
    shown = f"{free / 1024**3:.1f} GiB free under {data}"
    if free < NO_DISK_BYTES:
        return "failed", f"{shown}: clones and the index cannot grow"
    if free < LOW_DISK_BYTES:
        return "warning", f"{shown}: large repositories may not fit"
    return "ok", shown
