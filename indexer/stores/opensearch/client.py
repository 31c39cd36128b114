"""The OpenSearch connection: client from settings, errors users can act on, bulk with retries."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

from opensearchpy import OpenSearch
from opensearchpy import exceptions as os_errors

from indexer.errors import ConfigError, StoreUnavailable
from indexer.settings import IndexerSettings

T = TypeVar("T")

# Bulk requests are retried on these statuses (back-pressure and node trouble); any other
# per-document error is permanent (a mapping conflict, a malformed document).
RETRY_STATUSES = frozenset({429, 502, 503, 504})
DEFAULT_RETRY_DELAYS = (0.5, 1.0, 2.0, 4.0, 8.0)


def public_url(url: str) -> str:
    """``url`` without credentials, for messages and logs."""
    parts = urlsplit(url)
    if parts.username or parts.password:
        host = parts.hostname or ""
        netloc = f"{host}:{parts.port}" if parts.port else host
        return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
    return url


def connect(settings: IndexerSettings) -> OpenSearch:
    """A client for ``CODEASK_OPENSEARCH_URL``; retries are ours (bulk only), not the client's."""
    options: dict[str, Any] = {
        "hosts": [settings.opensearch_url],
        "timeout": settings.opensearch_timeout,
        "max_retries": 0,
        "retry_on_timeout": False,
        "verify_certs": settings.opensearch_verify_certs,
        "ssl_show_warn": settings.opensearch_verify_certs,
    }
    if settings.opensearch_user:
        options["http_auth"] = (settings.opensearch_user, settings.opensearch_password)
    if settings.opensearch_ca_certs:
        options["ca_certs"] = settings.opensearch_ca_certs
    try:
        return OpenSearch(**options)
    except os_errors.ImproperlyConfigured as exc:
        raise ConfigError(f"Invalid OpenSearch settings: {exc}") from exc


def _reason(exc: os_errors.TransportError) -> str:
    info = exc.info
    if isinstance(info, dict):
        error = info.get("error")
        if isinstance(error, dict):
            root = (error.get("root_cause") or [error])[0]
            return f"{root.get('type', '')}: {root.get('reason', '')}".strip(": ")
        if error:
            return str(error)
    return str(exc.error)


def translate(exc: Exception, url: str, what: str) -> Exception:
    """The CodeaskError a user sees for a failed OpenSearch call (never a client trace)."""
    where = public_url(url)
    if isinstance(exc, os_errors.SSLError):
        return StoreUnavailable(
            f"OpenSearch at {where}: TLS failed ({exc.info}). Check CODEASK_OPENSEARCH_CA_CERTS "
            "or CODEASK_OPENSEARCH_VERIFY_CERTS."
        )
    if isinstance(exc, os_errors.ConnectionError):  # includes ConnectionTimeout
        return StoreUnavailable(
            f"OpenSearch at {where} is unreachable: {exc.info}. Start it "
            "(scripts/opensearch.sh start) or check CODEASK_OPENSEARCH_URL."
        )
    if isinstance(exc, os_errors.AuthenticationException | os_errors.AuthorizationException):
        return ConfigError(
            f"OpenSearch at {where} refused the credentials while trying to {what} "
            f"({exc.status_code}). Check CODEASK_OPENSEARCH_USER and CODEASK_OPENSEARCH_PASSWORD."
        )
    if isinstance(exc, os_errors.TransportError):
        return StoreUnavailable(
            f"OpenSearch at {where} failed to {what}: {exc.status_code} {_reason(exc)}"
        )
    return exc


def call(url: str, what: str, fn: Callable[[], T]) -> T:
    """Run one request, turning client exceptions into StoreUnavailable / ConfigError."""
    try:
        return fn()
    except (os_errors.TransportError, os_errors.ImproperlyConfigured) as exc:
        raise translate(exc, url, what) from exc


def _retryable(exc: os_errors.TransportError) -> bool:
    return isinstance(exc, os_errors.ConnectionError) or exc.status_code in RETRY_STATUSES


def bulk_index(
    client: OpenSearch,
    url: str,
    index: str,
    docs: Sequence[tuple[str, dict[str, Any]]],
    *,
    routed: bool = False,
    op: str = "index",
    **options: Any,
) -> None:
    """Index (upsert) ``(id, source)`` pairs, or ``op="create"`` them; see :func:`bulk_write`.

    ``routed``: each document goes to the shard of its ``repo`` (CODEASK_OPENSEARCH_ROUTING).
    """

    def action(doc_id: str, source: dict[str, Any]) -> str:
        meta = {"_id": doc_id, "routing": source["repo"]} if routed else {"_id": doc_id}
        return json.dumps({op: meta})

    lines = [
        (doc_id, action(doc_id, source) + "\n" + json.dumps(source) + "\n")
        for doc_id, source in docs
    ]
    bulk_write(client, url, index, lines, **options)


def bulk_delete(
    client: OpenSearch,
    url: str,
    index: str,
    ids: Sequence[str],
    *,
    routing: str | None = None,
    **options: Any,
) -> None:
    """Delete documents by id (already gone is fine); see :func:`bulk_write`.

    ``routing``: the shard key of every one of them (their repository, in a routed index).
    """
    meta: dict[str, str] = {} if routing is None else {"routing": routing}
    lines = [(doc_id, json.dumps({"delete": {"_id": doc_id, **meta}}) + "\n") for doc_id in ids]
    bulk_write(client, url, index, lines, **options)


def bulk_update(
    client: OpenSearch,
    url: str,
    index: str,
    ids: Sequence[str],
    fields: dict[str, Any],
    *,
    routing: str | None = None,
    **options: Any,
) -> None:
    """Set ``fields`` (None clears one) on existing documents; see :func:`bulk_write`."""
    meta: dict[str, str] = {} if routing is None else {"routing": routing}
    doc = json.dumps({"doc": fields})
    lines = [
        (doc_id, json.dumps({"update": {"_id": doc_id, **meta}}) + "\n" + doc + "\n")
        for doc_id in ids
    ]
    bulk_write(client, url, index, lines, **options)


def bulk_write(
    client: OpenSearch,
    url: str,
    index: str,
    lines: Sequence[tuple[str, str]],
    *,
    batch_docs: int = 500,
    retry_delays: Sequence[float] = DEFAULT_RETRY_DELAYS,
    refresh: bool = False,
    sleep: Callable[[float], None] = time.sleep,
    conflicts: list[str] | None = None,
) -> None:
    """Send ``(id, NDJSON action)`` pairs in batches; back off and retry on 429/5xx.

    Every batch is attempted; permanent per-document errors are collected and reported
    together at the end as one StoreUnavailable (so the caller records nothing as done).
    With ``conflicts``, the ids a ``create`` found taken are added to it instead.
    """
    failed: list[tuple[str, str]] = []
    for start in range(0, len(lines), batch_docs):
        pending = list(lines[start : start + batch_docs])
        last_error: Exception | None = None
        for delay in (0.0, *retry_delays):
            if delay:
                sleep(delay)
            try:
                response = client.bulk(
                    body="".join(line for _, line in pending), index=index, refresh=refresh
                )
            except os_errors.TransportError as exc:
                if not _retryable(exc):
                    raise translate(exc, url, "write chunks") from exc
                last_error = exc
                continue
            retry = []
            for (doc_id, line), item in zip(pending, response["items"], strict=True):
                op, result = next(iter(item.items()))
                status = int(result.get("status", 500))
                if status in RETRY_STATUSES or status >= 500:
                    retry.append((doc_id, line))
                    last_error = StoreUnavailable(f"{status} {result.get('error', '')}")
                elif op == "create" and status == 409 and conflicts is not None:
                    conflicts.append(doc_id)
                elif status >= 300 and not (op == "delete" and status == 404):
                    error = result.get("error", {})
                    failed.append((doc_id, f"{error.get('type', status)}: {error.get('reason')}"))
            pending = retry
            if not pending:
                break
        if pending:
            if isinstance(last_error, os_errors.TransportError):
                raise translate(last_error, url, "write chunks") from last_error
            raise StoreUnavailable(
                f"OpenSearch at {public_url(url)} kept refusing {len(pending)} chunks after "
                f"{len(retry_delays)} retries ({last_error}); nothing was marked as indexed."
            )
    if failed:
        reasons = "; ".join(f"{doc_id[:12]}: {why}" for doc_id, why in failed[:3])
        raise StoreUnavailable(
            f"OpenSearch at {public_url(url)} rejected {len(failed)} of {len(lines)} chunks "
            f"({reasons}); nothing was marked as indexed."
        )
