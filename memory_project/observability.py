"""Request ids, JSON log lines, per-route latency, /metrics and /api/v1/ready.

Every request gets an id (the caller's X-Request-ID when it is a sane token, else
a new one); the response echoes it and every log line written while serving it
carries it. /metrics speaks Prometheus text to a bearer token (METRICS_TOKEN) or
an allowed network (METRICS_ALLOWED_NETWORKS), nobody else.
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
import uuid
from contextvars import ContextVar

from django.conf import settings
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils import timezone

from memories import metrics
from memories.network import client_of
from memories.timing import count_statement, phase, server_timing, timeline_begin, timeline_end

_request_id: ContextVar[str] = ContextVar("request_id", default="")
_SANE_ID = re.compile(r"^[A-Za-z0-9._:-]{1,64}$")
REQUEST_ID_HEADER = "X-Request-ID"
logger = logging.getLogger("memory.requests")


def request_id_for(incoming: str | None) -> str:
    """The caller's id when it is a short token of safe characters (it is logged and echoed), else a new one."""
    return incoming if incoming and _SANE_ID.match(incoming) else uuid.uuid4().hex


# A path parameter that is a number or a UUID names a row, not a person: the log shows it as written.
_ROW_ID = re.compile(r"^(?:\d{1,20}|[0-9a-fA-F]{8}-?(?:[0-9a-fA-F]{4}-?){3}[0-9a-fA-F]{12})$")
UNMATCHED_PATH = "(unmatched)"


def logged_path(path: str, match) -> str:
    """The request path as the log shows it: every text path parameter (REST's users/<user_id>/,
    sessions/<session_id>/, Mem0's entities/user/<name>/ and memories/<memory_id>/, whatever a caller
    puts there) replaced by `~` + its keyed digest (identity.identifier_digest); numbers and UUIDs as
    requested. A path no route matched is not shown at all (UNMATCHED_PATH): nothing says which of
    its words name a person. The query string is never part of it."""
    from memories.identity import identifier_digest

    if match is None:
        return UNMATCHED_PATH
    for value in sorted({v for v in (match.kwargs or {}).values() if isinstance(v, str) and v}, key=len,
                        reverse=True):
        if not _ROW_ID.match(value):
            digest = f"~{identifier_digest(value)}"
            path = path.replace(f"/{value}/", f"/{digest}/")
            if path.endswith(f"/{value}"):
                path = path[: -len(value)] + digest
    return path


class RequestPathFilter(logging.Filter):
    """On the console handler: a record that carries the request (Django's own lines: "Internal Server
    Error: <path>", "Forbidden (CSRF …): <path>") shows the logged path in place of the raw one, and
    not the request itself, whose repr holds the whole path and query string."""

    def filter(self, record: logging.LogRecord) -> bool:
        request = getattr(record, "request", None)
        if isinstance(request, HttpRequest):
            raw = {request.path, request.path.encode("unicode_escape").decode("ascii"), request.get_full_path()}
            shown = logged_path(request.path, getattr(request, "resolver_match", None))
            if isinstance(record.args, tuple):
                record.args = tuple(shown if isinstance(a, str) and a in raw else a for a in record.args)
            record.request = None
        return True


class RequestIdMiddleware:
    """First in the chain: the id, the request's log line and its latency by route."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        rid = request_id_for(request.headers.get(REQUEST_ID_HEADER))
        token = _request_id.set(rid)
        timeline, timeline_token = timeline_begin()
        try:
            with connection.execute_wrapper(count_statement):
                response = self.get_response(request)
            seconds = timeline.total_ms() / 1000
            response[REQUEST_ID_HEADER] = rid
            with phase("log"):
                self._log(request, response, seconds)
            if settings.SERVER_TIMING:
                response["Server-Timing"] = server_timing(timeline)
            return response
        finally:
            timeline_end(timeline_token)
            _request_id.reset(token)

    @staticmethod
    def _log(request: HttpRequest, response: HttpResponse, seconds: float) -> None:
        """The request's latency by route (metrics) and its log line."""
        match = getattr(request, "resolver_match", None)
        route = match.route if match is not None and match.route else "unmatched"
        metrics.observe_request(route=route, method=request.method or "", status=response.status_code,
                                seconds=seconds)
        if not request.path.startswith("/static/"):
            path = logged_path(request.path, match if route != "unmatched" else None)
            logger.info("%s %s %s", request.method, path, response.status_code, extra={
                "method": request.method, "path": path, "route": route,
                "status": response.status_code, "duration_ms": round(seconds * 1000, 2),
                "key_id": getattr(getattr(request, "user", None), "key_id", None),
                "client": client_of(request.META).address})


class TaskArgumentsFilter(logging.Filter):
    """On Celery's task loggers (LOGGING in settings/observability.py): a line about a task whose arguments name a
    person (vocabulary.PERSONAL_TASK_ARGUMENTS) shows each such id as `~` + its keyed digest, in the
    arguments and wherever else the line repeats it (a return value or an error that quotes it), as
    request logs do. Celery logs a task's arguments as their repr: a repr cut short, whose ids cannot
    be told apart, is not shown at all."""

    def filter(self, record: logging.LogRecord) -> bool:
        from memories.vocabulary import PERSONAL_TASK_ARGUMENTS  # built while settings load: before models

        context = record.args
        # Once a record: logging configured twice leaves two of these on a logger, and a digest digested
        # again would no longer match the request logs' digest of the same id.
        if isinstance(context, dict) and context.get("name") in PERSONAL_TASK_ARGUMENTS \
                and not getattr(record, "_personal_redacted", False):
            redacted = _redacted_task_context(context, PERSONAL_TASK_ARGUMENTS[context["name"]])
            record.args = redacted
            if isinstance(getattr(record, "data", None), dict):
                record.data = redacted
            record._personal_redacted = True
        return True


def _personal_values(argsrepr: object, positions: tuple[int, ...]) -> list[str] | None:
    """The person-naming strings among a task's arguments (given as Celery's repr); None if unreadable."""
    import ast  # only for task lines with personal arguments

    try:
        args = ast.literal_eval(argsrepr) if isinstance(argsrepr, str) else argsrepr
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    if not isinstance(args, list | tuple):
        return None
    values: list[str] = []
    for position in positions:
        found = args[position] if position < len(args) else None
        values += [found] if isinstance(found, str) else [v for v in found or () if isinstance(v, str)] \
            if isinstance(found, list | tuple) else []
    return sorted({v for v in values if v}, key=len, reverse=True)


def _redacted_task_context(context: dict, positions: tuple[int, ...]) -> dict:
    from memories.identity import identifier_digest  # reads SECRET_KEY from settings: not at import

    values = _personal_values(context.get("args"), positions)
    out = dict(context)
    if values is None:
        out["args"], values = "(not shown: it names a person)", []
    for key in ("args", "kwargs", "return_value", "exc", "traceback", "description"):
        text = out.get(key)
        if isinstance(text, str):
            for value in values:
                text = re.sub(rf"(?<!\w){re.escape(value)}(?!\w)", f"~{identifier_digest(value)}", text)
            out[key] = text
    return out


class RequestIdFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = _request_id.get()
        return True


_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime", "request_id"}


class JsonFormatter(logging.Formatter):
    """One JSON object a line: time, level, logger, message, request_id, the record's extras, the exception."""

    def format(self, record: logging.LogRecord) -> str:
        body = {"time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S") + f".{int(record.msecs):03d}Z",
                "level": record.levelname, "logger": record.name, "message": record.getMessage(),
                "request_id": getattr(record, "request_id", "") or None, "process": record.process}
        for name, value in vars(record).items():
            if name not in _STANDARD and not name.startswith("_") and name != "request":
                body[name] = value
        if record.exc_info:
            body["exception"] = self.formatException(record.exc_info)
        return json.dumps(body, default=str)


JsonFormatter.converter = time.gmtime


# --------------------------------------------------------------------------- /metrics


def _client_allowed(request: HttpRequest) -> bool:
    token = settings.METRICS_TOKEN
    if token:
        scheme, _, given = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() == "bearer" and given and _constant_time_equal(given.strip(), token):
            return True
    from memories.network import in_networks, parse_networks

    client = client_of(request.META)
    if client.forwarded_by_untrusted_peer:  # a proxy we were not told about: the client is unknown
        return False
    return in_networks(client.address, parse_networks(tuple(settings.METRICS_ALLOWED_NETWORKS)))


def _constant_time_equal(a: str, b: str) -> bool:
    import hmac

    return hmac.compare_digest(a.encode(), b.encode())


def _registry():
    """Every process's samples when PROMETHEUS_MULTIPROC_DIR is set (gunicorn, make up), else this process's."""
    from prometheus_client import REGISTRY, CollectorRegistry
    from prometheus_client.multiprocess import MultiProcessCollector

    if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        return REGISTRY
    registry = CollectorRegistry()
    MultiProcessCollector(registry)
    return registry


class StateCollector:
    """Gauges read from the database and the broker at scrape time (not per process)."""

    def collect(self):
        from prometheus_client.core import GaugeMetricFamily

        from memories.job_states import failed_jobs_by_cause
        from memories.queue import queue_depth
        from memories.selectors import operational_counts

        counts = operational_counts(timezone.now())
        backlog = GaugeMetricFamily("memory_embedding_backlog", "Memories waiting for a vector", labels=["state"])
        backlog.add_metric(["pending"], counts.embedding_pending)
        backlog.add_metric(["failed"], counts.embedding_failed)
        yield backlog
        yield GaugeMetricFamily("memory_review_queue_size", "Candidates waiting for a reviewer",
                                value=counts.review_pending)
        yield GaugeMetricFamily("memory_review_queue_oldest_age_seconds", "Age of the oldest waiting candidate",
                                value=counts.review_oldest_age_seconds)
        jobs = GaugeMetricFamily("memory_conversation_jobs", "Conversation jobs by state", labels=["state"])
        jobs.add_metric(["waiting"], counts.jobs_waiting)
        jobs.add_metric(["failed"], counts.jobs_failed)
        yield jobs
        failed = GaugeMetricFamily("memory_conversation_jobs_failed", "Failed conversation jobs by the cause their "
                                   "error says (memories.job_states.failure_cause)", labels=["cause"])
        for cause, count in failed_jobs_by_cause().items():
            failed.add_metric([cause], count)
        yield failed
        depth = queue_depth()
        yield GaugeMetricFamily("memory_queue_depth", "Messages waiting on the Celery queue (-1: broker unreachable)",
                                value=-1 if depth is None else depth)


def metrics_view(request: HttpRequest) -> HttpResponse:
    if not _client_allowed(request):
        return JsonResponse({"detail": "metrics are open to METRICS_TOKEN or METRICS_ALLOWED_NETWORKS only"},
                            status=403)
    from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

    registry = _registry()
    state = CollectorRegistry()
    state.register(StateCollector())
    return HttpResponse(generate_latest(registry) + generate_latest(state), content_type=CONTENT_TYPE_LATEST)


# --------------------------------------------------------------------------- readiness


def _migrations_pending() -> int:
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    return len(executor.migration_plan(executor.loader.graph.leaf_nodes()))


def ready_view(request: HttpRequest) -> JsonResponse:
    """Ready to take traffic: the database answers, every migration is applied, the embedding model is loaded."""
    checks: dict[str, dict] = {}
    try:
        pending = _migrations_pending()
        checks["database"] = {"ok": True}
        checks["migrations"] = {"ok": pending == 0, "pending": pending}
    except Exception as exc:  # noqa: BLE001 - readiness reports, never raises
        logger.warning("readiness: database check failed", exc_info=True)
        checks["database"] = {"ok": False, "error": type(exc).__name__}
        checks["migrations"] = {"ok": False}
    try:
        from memories.embedding import get_embedder

        embedder = get_embedder()
        if getattr(embedder, "preparing", False):  # a first start (memories/model_warmup.py): say so, never wait
            checks["model"] = {"ok": False, "preparing": True, "name": embedder.name}
        else:
            embedder.embed_query("ready")
            checks["model"] = {"ok": True, "name": embedder.name}
    except Exception as exc:  # noqa: BLE001
        logger.warning("readiness: model check failed", exc_info=True)
        checks["model"] = {"ok": False, "error": type(exc).__name__}
    ready = all(check["ok"] for check in checks.values())
    return JsonResponse({"ready": ready, "checks": checks}, status=200 if ready else 503)
