"""The aiohttp application behind ``codeask serve``.

Routes owned here: ``GET /healthz`` (the process is up), ``GET /readyz`` (the metadata
database and the search store answer), ``GET /metrics`` (Prometheus, :mod:`bot.metrics`;
a bearer token when ``CODEASK_METRICS_TOKEN`` is set), ``POST /github/webhook`` and
``GET /github/oauth/callback``. Bad input never gets a 5xx: bodies go through
:mod:`bot.chat.request_checks` (400, 401, 413, 415). Chat adapters mount
their own routes without editing this file::

    def mount_slack(app: web.Application) -> None:
        services = app[SERVICES]            # settings, registry, store, GitHub client
        app.router.add_post("/slack/events", handler)

    app = create_app(services, mounts=[mount_slack, mount_teams])

A mount may also append to ``app.on_startup`` / ``app.cleanup_ctx`` for clients it owns.
Handlers must not block the event loop: run database, GitHub and search calls with
``asyncio.to_thread``. Nothing here indexes; webhooks only queue jobs for the worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import logging
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError

from acl import handle_acl_webhook
from bot.chat import (
    SERVICES,
    BadRequest,
    Mount,
    bad_request,
    claim_delivery,
    error_response,
    forget_delivery,
    parse_json_object,
)
from bot.metrics import CONTENT_TYPE
from bot.server.github_events import apply_event, registered_name
from bot.services import Services
from indexer.errors import AccessDenied, CodeaskError, ConfigError
from indexer.jobs import git_heads, reconcile

log = logging.getLogger(__name__)

MAX_WEBHOOK_BYTES = 25 * 1024 * 1024  # GitHub caps payloads at 25 MB


def create_app(
    services: Services | None = None,
    *,
    mounts: Sequence[Mount] = (),
    reconcile_seconds: float | None = None,
) -> web.Application:
    """Build the application; ``mounts`` add adapter routes, ``reconcile_seconds`` overrides
    ``CODEASK_RECONCILE_SECONDS`` (0 disables the periodic reconcile)."""
    services = services or Services()
    _log_malformed_http_as_warnings()
    app = web.Application(client_max_size=MAX_WEBHOOK_BYTES)
    app[SERVICES] = services
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/metrics", metrics)
    app.router.add_post("/github/webhook", github_webhook)
    app.router.add_get("/github/oauth/callback", github_oauth_callback)
    for mount in mounts:
        mount(app)
    interval = services.bot.reconcile_seconds if reconcile_seconds is None else reconcile_seconds
    if interval > 0:
        app.cleanup_ctx.append(_reconcile_every(interval))
    return app


def run(services: Services | None = None, *, mounts: Sequence[Mount] = ()) -> None:
    """Serve until interrupted, on ``CODEASK_HOST``:``CODEASK_PORT``."""
    services = services or Services()
    app = create_app(services, mounts=mounts)
    app.on_cleanup.append(_close_services)
    web.run_app(app, host=services.bot.host, port=services.bot.port, print=None)


async def _close_services(app: web.Application) -> None:
    await asyncio.to_thread(app[SERVICES].close)


async def healthz(request: web.Request) -> web.Response:
    return web.json_response({"status": "ok"})


async def readyz(request: web.Request) -> web.Response:
    services = request.app[SERVICES]
    checks: dict[str, str] = {}

    def database() -> None:
        services.registry.ping()

    def store() -> None:
        services.store.repo_states()

    for name, check in (("database", database), ("store", store)):
        try:
            await asyncio.to_thread(check)
            checks[name] = "ok"
        except Exception as exc:
            # Readiness reports which dependency is down; the detail goes to the log only.
            log.warning("readyz: %s unavailable: %s", name, exc)
            checks[name] = "unavailable"
    ok = all(v == "ok" for v in checks.values())
    return web.json_response(
        {"status": "ok" if ok else "unavailable", **checks}, status=200 if ok else 503
    )


async def metrics(request: web.Request) -> web.Response:
    """Prometheus text format; 401 without the bearer token when one is configured."""
    recorded = request.app[SERVICES].metrics
    if not recorded.authorized(request.headers.get("Authorization", "")):
        return error_response(401, "a bearer token is required")
    body = await asyncio.to_thread(recorded.render)
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE})


async def github_webhook(request: web.Request) -> web.Response:
    """Verify, de-duplicate and apply one GitHub delivery; answers before any indexing."""
    services = request.app[SERVICES]
    response, event, result = await _github_delivery(request)
    services.metrics.webhook(event, result)
    return response


async def _github_delivery(request: web.Request) -> tuple[web.Response, str, str]:
    """The response, the event (``unverified`` before the signature is checked) and the
    result for the metrics."""
    from acl import verify_signature

    services = request.app[SERVICES]
    body = await request.read()
    try:
        verify_signature(services.acl.github_webhook_secret, request.headers, body)
    except ConfigError as exc:
        log.error("webhook refused: %s", exc)
        return error_response(503, str(exc)), "unverified", "not_configured"
    except AccessDenied:
        return (
            error_response(401, "bad or missing X-Hub-Signature-256"),
            "unverified",
            "bad_signature",
        )
    event = request.headers.get("X-GitHub-Event", "")
    delivery = request.headers.get("X-GitHub-Delivery", "") or f"local-{uuid.uuid4()}"
    if not event:
        return error_response(400, "missing X-GitHub-Event"), "unverified", "bad_request"
    if not (_plain_text(event) and _plain_text(delivery)):  # GitHub sends names and GUIDs
        text = "X-GitHub-Event and X-GitHub-Delivery must be printable ASCII"
        return error_response(400, text), "unverified", "bad_request"
    try:
        payload = parse_json_object(body)
    except BadRequest as exc:
        return bad_request(exc), event, "bad_request"

    def handle() -> dict[str, Any]:
        if not claim_delivery(services.engine, delivery, event):
            return {"event": event, "duplicate": True}
        try:
            outcome = apply_event(services.engine, event, payload, services.clone_url)
            result = outcome.as_json()
            result["acl"] = _acl_webhook(services, event, payload)
            return result
        except BaseException:
            forget_delivery(services.engine, delivery)
            raise

    try:
        result = await asyncio.to_thread(handle)
    except CodeaskError as exc:
        log.error("webhook %s (%s) failed: %s", delivery, event, exc)
        return error_response(503, str(exc)), event, "failed"
    log.info("webhook %s %s: %s", delivery, event, result)
    outcome = "duplicate" if result.get("duplicate") else "applied"
    return web.json_response(result), event, outcome


async def github_oauth_callback(request: web.Request) -> web.Response:
    """Finish ``codeask link``: GitHub redirects here with the one-time state and a code."""
    from acl import OAuthLinker, PendingConfirmation

    services = request.app[SERVICES]
    if not (services.acl.github_oauth_client_id and services.acl.github_oauth_client_secret):
        return _page(404, "Linking with GitHub is not enabled on this server.")
    state = request.query.get("state", "")
    code = request.query.get("code", "")
    if not state or not code:
        return _page(400, "This link is incomplete. Ask the bot for a new one with `link`.")

    def complete() -> PendingConfirmation:
        return OAuthLinker(services.acl, services.acl_store).complete(state, code)

    try:
        pending = await asyncio.to_thread(complete)
    except AccessDenied:
        return _page(400, "This link has expired or was already used. Ask the bot for a new one.")
    except CodeaskError as exc:
        log.error("oauth callback failed: %s", exc)
        return _page(503, "GitHub could not confirm your account right now; try again shortly.")
    platform = {"slack": "Slack", "teams": "Microsoft Teams"}.get(
        pending.platform, pending.platform
    )
    return _page(
        200,
        f"You signed in to GitHub as {pending.github_login}. Nothing is linked yet.",
        f"If you asked codeask for this link yourself, send it this message in {platform} "
        "to finish:",
        f"link confirm {pending.code}",
        f"This link was requested by {platform} user {pending.chat_user_id}. If that is not "
        "you, close this page and do not share the code: whoever sends it would read code "
        f"with your GitHub access. The code expires in {int(services.acl.link_state_ttl_seconds // 60)} "
        "minutes.",
    )


def _page(status: int, *paragraphs: str) -> web.Response:
    body = "<!doctype html><title>codeask</title>" + "".join(
        f"<p>{html.escape(p)}</p>" for p in paragraphs
    )
    return web.Response(status=status, text=body, content_type="text/html")


def _acl_webhook(services: Services, event: str, payload: dict[str, Any]) -> str:
    """Let access control drop cached permissions this event may have changed."""
    handle_acl_webhook(
        event, payload, services.acl_store, registered_name(services.engine, payload)
    )
    return "applied"


def _plain_text(value: str) -> bool:
    return value.isascii() and value.isprintable()


class _MalformedHttpAsWarning(logging.Filter):
    """aiohttp answers a malformed request (a request line or header over its limits, bad
    framing) with 400 itself, but logs a traceback at ERROR: it is the client's fault, so
    it becomes one warning line that repeats nothing the client sent."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, HttpProcessingError) and 400 <= (exc.code or 0) < 500:
            record.levelno, record.levelname = logging.WARNING, "WARNING"
            record.msg, record.args = "refused a malformed HTTP request (%s)", (type(exc).__name__,)
            record.exc_info, record.exc_text = None, None
        return True


def _log_malformed_http_as_warnings() -> None:
    logger = logging.getLogger("aiohttp.server")
    if not any(isinstance(f, _MalformedHttpAsWarning) for f in logger.filters):
        logger.addFilter(_MalformedHttpAsWarning())


def _reconcile_every(
    seconds: float,
) -> Callable[[web.Application], AsyncIterator[None]]:
    async def ctx(app: web.Application) -> AsyncIterator[None]:
        task = asyncio.create_task(_reconcile_loop(app[SERVICES], seconds))
        yield
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    return ctx


async def _reconcile_loop(services: Services, seconds: float) -> None:
    while True:
        await asyncio.sleep(seconds)
        try:
            drifts = await asyncio.to_thread(run_reconcile, services)
            if drifts:
                log.info("reconcile queued: %s", ", ".join(d.repo for d in drifts if d.queued))
        except Exception:  # keep reconciling on the next tick; the cause is in the log
            log.exception("reconcile failed")


def run_reconcile(services: Services) -> list[Any]:
    """One reconcile pass (``codeask reconcile`` and the periodic task)."""
    return reconcile(services.engine, git_heads(services.git_token))
