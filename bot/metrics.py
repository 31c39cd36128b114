"""Prometheus metrics of one process (``GET /metrics`` on ``codeask serve`` and the worker).

Each process owns a private :class:`~prometheus_client.CollectorRegistry`, so tests can
build several apps side by side. Counters and histograms are recorded by the few places
that matter (the Asker through :class:`bot.answer.asking.QuestionObserver`, the GitHub
webhook handler, the worker's job hook); queue depth and index lag are read from the
metadata database at scrape time.

Labels are bounded: no user ids, no question text, no client-chosen strings. Repository
names appear only as ``CODEASK_METRICS_REPO_LABELS`` allows ("public": public ones,
"true": every one); the others are folded into ``repository="other"`` per visibility.
"""

from __future__ import annotations

import hmac
import logging
import threading
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from sqlalchemy.engine import Engine

from bot.settings import BotSettings
from indexer.jobs import QUEUED, Registry, Repo, utcnow
from indexer.jobs import queue as jobs

log = logging.getLogger(__name__)

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
HIDDEN_REPO = "other"  # the label of repositories whose names are not shown

PLATFORMS = frozenset({"slack", "teams", "cli"})
PLACES = frozenset({"dm", "channel", "cli"})
MODES = frozenset({"agent", "single", "extractive"})
OUTCOMES = frozenset({"answered", "not_found", "refused", "failed"})
# The pipeline's timing keys, by the stage name the metrics use.
STAGES = {
    "access": "access",
    "search": "search",
    "rerank": "rerank",
    "evidence": "evidence",
    "context": "context",
    "generate": "model",
    "render": "render",
}
WEBHOOK_EVENTS = frozenset(
    {"ping", "push", "repository", "installation_repositories", "installation", "member"}
)
# Counted where the request failed: github, opensearch (every failed request, by kind).
# Counted by the Asker once per question that a part failed: llm, search, access.
UPSTREAMS = frozenset({"github", "opensearch", "llm", "search", "access", "slack", "teams"})
ANSWER_BUCKETS = (0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120)
STAGE_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
JOB_BUCKETS = (1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600)


def _bounded(value: str, known: frozenset[str]) -> str:
    return value if value in known else "other"


class Metrics:
    """The process's metrics; every recording method is safe to call from any thread."""

    def __init__(self, settings: BotSettings, engine: Callable[[], Engine] | None = None) -> None:
        self.settings = settings
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.questions = Counter(
            "codeask_questions",
            "Questions answered, by platform, place kind, answer mode and outcome.",
            ["platform", "place", "mode", "outcome"],
            registry=r,
        )
        self.answer_seconds = Histogram(
            "codeask_answer_seconds",
            "End-to-end seconds from a question to its answer (access check included).",
            ["platform", "mode"],
            buckets=ANSWER_BUCKETS,
            registry=r,
        )
        self.stage_seconds = Histogram(
            "codeask_answer_stage_seconds",
            "Seconds per answering stage.",
            ["stage"],
            buckets=STAGE_BUCKETS,
            registry=r,
        )
        self.tokens = Counter(
            "codeask_llm_tokens",
            "Language-model tokens of answered questions (as LiteLLM reports them), by "
            "direction (in: prompt, out: completion) and answer mode.",
            ["direction", "mode"],
            registry=r,
        )
        self.upstream_errors = Counter(
            "codeask_upstream_errors",
            "Errors of the services codeask depends on, by service and kind.",
            ["service", "kind"],
            registry=r,
        )
        self.webhooks = Counter(
            "codeask_webhook_deliveries",
            "GitHub webhook deliveries, by event and result.",
            ["event", "result"],
            registry=r,
        )
        self.jobs = Counter(
            "codeask_jobs",
            "Indexing jobs this worker ran, by kind and result (done, retry, failed).",
            ["kind", "result"],
            registry=r,
        )
        self.job_seconds = Histogram(
            "codeask_job_seconds",
            "Seconds an indexing job ran, by kind.",
            ["kind"],
            buckets=JOB_BUCKETS,
            registry=r,
        )
        if engine is not None:
            r.register(IndexCollector(engine, settings.metrics_repo_labels))

    # --- recording ---------------------------------------------------------------------

    def question(
        self,
        platform: str,
        place: str,
        mode: str,
        outcome: str,
        seconds: float,
        stages: Mapping[str, float],
        tokens: tuple[int, int] = (0, 0),
    ) -> None:
        """One answered question (the Asker's observer); ``tokens`` are (in, out)."""
        platform = _bounded(platform, PLATFORMS)
        mode = _bounded(mode, MODES)
        self.questions.labels(
            platform, _bounded(place, PLACES), mode, _bounded(outcome, OUTCOMES)
        ).inc()
        self.answer_seconds.labels(platform, mode).observe(seconds)
        for key, value in stages.items():
            if key in STAGES:
                self.stage_seconds.labels(STAGES[key]).observe(value)
        for direction, count in zip(("in", "out"), tokens, strict=True):
            if count > 0:
                self.tokens.labels(direction, mode).inc(count)

    def stage(self, name: str, seconds: float) -> None:
        """A stage timed outside the pipeline: "render", a chat adapter building its message."""
        if name in STAGES.values():
            self.stage_seconds.labels(name).observe(seconds)

    def upstream_error(self, service: str, kind: str) -> None:
        """A failed call to GitHub, the language model, the search store or a chat API;
        ``kind`` is a short fixed word or an exception class name, never a message."""
        self.upstream_errors.labels(_bounded(service, UPSTREAMS), kind[:60]).inc()

    def webhook(self, event: str, result: str) -> None:
        """One GitHub delivery; ``event`` only from a verified delivery (else "unverified")."""
        self.webhooks.labels(_bounded(event, WEBHOOK_EVENTS | {"unverified"}), result).inc()

    def job(self, kind: str, result: str, seconds: float) -> None:
        """One job the worker ran (the Worker's ``on_job`` hook)."""
        kind = _bounded(kind, frozenset({"index", "full", "delete"}))
        self.jobs.labels(kind, result).inc()
        self.job_seconds.labels(kind).observe(seconds)

    # --- exposition --------------------------------------------------------------------

    def render(self) -> bytes:
        """The text exposition format (reads the database: call it off the event loop)."""
        return generate_latest(self.registry)

    def authorized(self, authorization: str) -> bool:
        """Whether a scrape's ``Authorization`` header passes ``CODEASK_METRICS_TOKEN``."""
        token = self.settings.metrics_token
        if not token:
            return True
        return hmac.compare_digest(authorization.encode(), f"Bearer {token}".encode())


class IndexCollector(Collector):
    """Gauges read at scrape time: the job queue and each repository's index lag."""

    def __init__(self, engine: Callable[[], Engine], repo_labels: str) -> None:
        self.engine = engine
        self.repo_labels = repo_labels

    def describe(self) -> list[Metric]:
        return []  # read at scrape time: nothing to check when registering

    def collect(self) -> Iterator[Metric]:
        up = GaugeMetricFamily(
            "codeask_metadata_up", "1 when the metadata database answered this scrape."
        )
        try:
            engine = self.engine()
            pending = jobs.pending(engine)
            repos = Registry(engine).all()
        except Exception as exc:
            log.warning("metrics: the metadata database did not answer: %s", exc)
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        now = utcnow()
        yield from _queue_gauges(pending, now)
        yield from self._lag_gauges(repos, pending, now)

    def _named(self, repo: Repo) -> bool:
        return self.repo_labels == "true" or (
            self.repo_labels == "public" and repo.visibility == "public"
        )

    def _lag_gauges(
        self, repos: list[Repo], pending: list[jobs.Job], now: datetime
    ) -> Iterator[Metric]:
        lag = GaugeMetricFamily(
            "codeask_index_lag_seconds",
            "Seconds since the unindexed head of a repository was seen (0: up to date); "
            'the largest of those folded into repository="other".',
            labels=["repository", "visibility"],
        )
        behind = GaugeMetricFamily(
            "codeask_index_commits_behind",
            "Commits pushed since the indexed one (summed over those folded into "
            'repository="other"); absent when unknown.',
            labels=["repository", "visibility"],
        )
        first_job: dict[str, datetime] = {}
        for job in reversed(pending):  # oldest last, so the oldest wins
            first_job[job.repo] = job.created_at
        hidden_lag: dict[str, float] = {}
        hidden_behind: dict[str, int] = {}
        for repo in repos:
            stale = not repo.last_indexed_commit or repo.head_commit not in (
                "",
                repo.last_indexed_commit,
            )
            seen = first_job.get(repo.full_name) or repo.updated_at
            seconds = max(0.0, (now - _aware(seen)).total_seconds()) if stale else 0.0
            commits = repo.commits_behind if stale else 0  # None: unknown
            if self._named(repo):
                lag.add_metric([repo.full_name, repo.visibility], seconds)
                if commits is not None:
                    behind.add_metric([repo.full_name, repo.visibility], commits)
                continue
            hidden_lag[repo.visibility] = max(hidden_lag.get(repo.visibility, 0.0), seconds)
            if commits is not None:
                hidden_behind[repo.visibility] = hidden_behind.get(repo.visibility, 0) + commits
        for visibility, seconds in hidden_lag.items():
            lag.add_metric([HIDDEN_REPO, visibility], seconds)
        for visibility, commits in hidden_behind.items():
            behind.add_metric([HIDDEN_REPO, visibility], commits)
        yield lag
        yield behind


def _queue_gauges(pending: list[jobs.Job], now: datetime) -> Iterator[Metric]:
    depth = GaugeMetricFamily(
        "codeask_job_queue_depth", "Indexing jobs queued and running.", labels=["status"]
    )
    queued = [j for j in pending if j.status == QUEUED]
    depth.add_metric(["queued"], len(queued))
    depth.add_metric(["running"], len(pending) - len(queued))
    yield depth
    oldest = min((_aware(j.created_at) for j in queued), default=now)
    yield GaugeMetricFamily(
        "codeask_job_queue_oldest_seconds",
        "Age of the oldest queued job (0: none queued).",
        value=max(0.0, (now - oldest).total_seconds()),
    )


def _aware(when: datetime) -> datetime:
    """SQLite hands datetimes back without their zone; they were written in UTC."""
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


# --- the worker's listener -------------------------------------------------------------


def metrics_listener(metrics: Metrics, host: str | None = None) -> ThreadingHTTPServer | None:
    """Serve ``GET /metrics`` on ``CODEASK_WORKER_METRICS_PORT`` in a daemon thread (the
    worker has no web app); None when the port is 0. ``shutdown()`` the result to stop."""
    port = metrics.settings.worker_metrics_port
    if port == 0:
        return None

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.split("?", 1)[0] != "/metrics":
                self._reply(404, b"not found\n", "text/plain")
            elif not metrics.authorized(self.headers.get("Authorization", "")):
                self._reply(401, b"a bearer token is required\n", "text/plain")
            else:
                self._reply(200, metrics.render(), CONTENT_TYPE)

        def _reply(self, status: int, body: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass  # one line per scrape is noise; failures show in the scraper

    server = ThreadingHTTPServer((host or metrics.settings.host, port), Handler)
    threading.Thread(target=server.serve_forever, name="metrics", daemon=True).start()
    return server
